package langchaingo

import (
	"context"
	"errors"

	"github.com/agentmem/agentmem/adapters/internal/recalldoc"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/client/remote"
	"github.com/tmc/langchaingo/schema"
)

// Retriever is a langchaingo schema.Retriever over agentmem's recall
// search (GET /v1/recall/search). It searches the documents of the API
// key's tenant and the conversation turns of its sessions.
type Retriever struct {
	c *client.Client
	q client.RecallQuery
}

var _ schema.Retriever = (*Retriever)(nil)

// NewRetriever returns a retriever that searches with the settings of q
// (K, Scope, Before, After, Fresh). Its Text is ignored: each search gets
// its own query.
func NewRetriever(c *client.Client, q client.RecallQuery) (*Retriever, error) {
	if c == nil {
		return nil, errors.New("agentmem langchaingo: NewRetriever needs a client")
	}
	q.Text = ""
	return &Retriever{c: c, q: q}, nil
}

// GetRelevantDocuments returns the hits of a recall search for query, most
// relevant first. A document's PageContent is the hit's text, or with
// Before or After the texts of its window of turns. Its Score is the hit's
// score. Its Metadata is the document's own metadata and the keys "id",
// "score", "session_id" and "step" (of a turn), "time" and "window" (see
// package recalldoc). Bad input (an empty query, an unknown scope) is an
// error wrapping agentmem.ErrInvalid.
func (r *Retriever) GetRelevantDocuments(ctx context.Context, query string) ([]schema.Document, error) {
	q := r.q
	q.Text = query
	hits, err := r.c.SearchRecall(ctx, q)
	if err != nil {
		return nil, remote.MapError(err)
	}
	docs := make([]schema.Document, len(hits))
	for i, d := range recalldoc.FromHits(hits) {
		docs[i] = schema.Document{PageContent: d.Content, Metadata: d.Metadata, Score: float32(d.Score)}
	}
	return docs, nil
}
