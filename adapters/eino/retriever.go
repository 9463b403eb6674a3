// Package eino plugs agentmem's recall search into eino
// (github.com/cloudwego/eino) as a retriever component. Retriever
// implements eino's retriever.Retriever over GET /v1/recall/search of an
// agentmem server (`agentmem serve`). It goes through the Go client,
// package github.com/agentmem/agentmem/client. It searches the documents
// of the API key's tenant and the conversation turns of its sessions. It
// runs in a graph or chain like any retriever:
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithAPIKey(os.Getenv("AGENTMEM_API_KEY")))
//	r, err := eino.NewRetriever(c, client.RecallQuery{K: 5})
//	chain := compose.NewChain[string, []*schema.Document]().AppendRetriever(r)
//
// # Depending on the adapter
//
// The adapter is a module of its own, so that agentmem's core module does
// not depend on eino. In this repository its go.mod replaces
// github.com/agentmem/agentmem by the repository's root (../..). So it is
// built and tested against the code beside it. It requires the core at the
// placeholder version v0.0.0-00010101000000-000000000000. A program
// outside the repository requires both modules, the core at the version
// the adapter was released with:
//
//	go get github.com/agentmem/agentmem/adapters/eino@VERSION
//	go get github.com/agentmem/agentmem@VERSION
//
// A replace directive in the dependent module's own go.mod, pointing at a
// checkout, works too; replace directives of dependencies are ignored.
package eino

import (
	"context"
	"errors"

	"github.com/agentmem/agentmem/adapters/internal/recalldoc"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/client/remote"
	"github.com/cloudwego/eino/callbacks"
	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/retriever"
	"github.com/cloudwego/eino/schema"
)

// Retriever is an eino retriever over agentmem's recall search.
type Retriever struct {
	c *client.Client
	q client.RecallQuery
}

var (
	_ retriever.Retriever = (*Retriever)(nil)
	_ components.Typer    = (*Retriever)(nil)
	_ components.Checker  = (*Retriever)(nil)
)

// NewRetriever returns a retriever that searches with the settings of q
// (K, Scope, Before, After, Fresh) unless a call's options say otherwise.
// q's Text is ignored: each call searches for its own query.
func NewRetriever(c *client.Client, q client.RecallQuery) (*Retriever, error) {
	if c == nil {
		return nil, errors.New("agentmem eino: NewRetriever needs a client")
	}
	q.Text = ""
	return &Retriever{c: c, q: q}, nil
}

// Options are the options of a call that are agentmem's own (eino's
// implementation-specific options): see WithWindow and WithFresh.
type Options struct {
	Before, After int
	Fresh         bool
}

// WithWindow asks for before and after neighbouring turns of each
// conversation turn found. The document's content is then the window's
// texts, in order.
func WithWindow(before, after int) retriever.Option {
	return retriever.WrapImplSpecificOptFn(func(o *Options) { o.Before, o.After = before, after })
}

// WithFresh makes the search wait, bounded by the server, until the
// recall index has every write the server acknowledged
// (read-your-writes).
func WithFresh(fresh bool) retriever.Option {
	return retriever.WrapImplSpecificOptFn(func(o *Options) { o.Fresh = fresh })
}

// Retrieve returns the hits of a recall search for query, most relevant
// first, as documents. A document has the hit's ID, its text (with a
// window, the window's texts) and metadata, with the hit's score set
// (Document.Score). The metadata is the document's own and the keys "id",
// "score", "session_id" and "step" of a turn, "time" and "window" (see
// package recalldoc).
//
// Of eino's common options, WithTopK sets the number of hits. WithIndex
// sets the scope: "session:ID", "user:ID" or "agent:ID", or "" for the
// tenant's whole index. WithScoreThreshold drops the hits scored below it.
// The server embeds queries itself (when it has an embedder), so
// WithEmbedding is not used. Nor are WithSubIndex and WithDSLInfo, which
// other stores define. Bad input (an empty query, an unknown scope, a
// negative K) is an error wrapping agentmem.ErrInvalid.
//
// Retrieve reports to eino's callbacks itself (IsCallbacksEnabled): its
// start with a retriever.CallbackInput, its end with a
// retriever.CallbackOutput, or its error.
func (r *Retriever) Retrieve(ctx context.Context, query string, opts ...retriever.Option) (docs []*schema.Document, err error) {
	q := r.q
	q.Text = query
	common := retriever.GetCommonOptions(&retriever.Options{TopK: &q.K, Index: &q.Scope}, opts...)
	own := retriever.GetImplSpecificOptions(&Options{Before: q.Before, After: q.After, Fresh: q.Fresh}, opts...)
	q.K, q.Scope = *common.TopK, *common.Index
	q.Before, q.After, q.Fresh = own.Before, own.After, own.Fresh

	ctx = callbacks.EnsureRunInfo(ctx, r.GetType(), components.ComponentOfRetriever)
	ctx = callbacks.OnStart(ctx, &retriever.CallbackInput{Query: query, TopK: q.K, ScoreThreshold: common.ScoreThreshold,
		Extra: map[string]any{"scope": q.Scope}})
	defer func() {
		if err != nil {
			callbacks.OnError(ctx, err)
		}
	}()

	hits, err := r.c.SearchRecall(ctx, q)
	if err != nil {
		return nil, remote.MapError(err)
	}
	docs = make([]*schema.Document, 0, len(hits))
	for _, d := range recalldoc.FromHits(hits) {
		if common.ScoreThreshold != nil && d.Score < *common.ScoreThreshold {
			continue
		}
		docs = append(docs, (&schema.Document{ID: d.ID, Content: d.Content, MetaData: d.Metadata}).WithScore(d.Score))
	}
	callbacks.OnEnd(ctx, &retriever.CallbackOutput{Docs: docs})
	return docs, nil
}

// GetType names the component in eino's callbacks: "Agentmem".
func (r *Retriever) GetType() string { return "Agentmem" }

// IsCallbacksEnabled reports that Retrieve calls eino's callbacks itself.
func (r *Retriever) IsCallbacksEnabled() bool { return true }
