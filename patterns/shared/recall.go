package shared

import (
	"context"

	"github.com/agentmem/agentmem/recall"
)

// This file is the package's only use of the recall index: every entry is
// a document, searched for relevance.

// Document metadata keys.
const (
	docPool   = "pool"
	docScope  = "scope"
	docTeam   = "team"
	docAuthor = "author"
	docKind   = "kind"
)

// entryIndex keeps one pool's entries in a recall index.
type entryIndex struct {
	ix     *recall.Index
	tenant string
	pool   string // the pool's session ID
}

func (x entryIndex) doc(e *Entry) recall.Doc {
	md := map[string]string{
		docPool:   x.pool,
		docScope:  string(e.Scope.Kind),
		docAuthor: e.Author,
		docKind:   string(e.Kind),
	}
	if e.Scope.Team != "" {
		md[docTeam] = e.Scope.Team
	}
	// No Group: entries of a pool are not a conversation, so a document's
	// neighbours must not lend it their score.
	return recall.Doc{ID: x.pool + "/" + e.ID, Tenant: x.tenant, Text: e.Text, Time: e.Time, Metadata: md}
}

// put indexes entries, replacing earlier versions (it is idempotent).
func (x entryIndex) put(ctx context.Context, entries ...*Entry) error {
	if len(entries) == 0 {
		return nil
	}
	docs := make([]recall.Doc, len(entries))
	for i, e := range entries {
		docs[i] = x.doc(e)
	}
	return x.ix.Upsert(ctx, docs...)
}

// search returns the IDs of the entries of the pool most relevant to
// query, best first, at most k of them. It ignores who may read them.
func (x entryIndex) search(ctx context.Context, query string, k int) ([]string, error) {
	hits, err := x.ix.Search(ctx, recall.Query{
		Tenant: x.tenant,
		Text:   query,
		K:      k,
		Filter: recall.Filter{Metadata: map[string]string{docPool: x.pool}},
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.Doc.ID[len(x.pool)+1:]
	}
	return ids, nil
}
