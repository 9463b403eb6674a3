package facts

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/agentmem/agentmem/recall"
)

// DefaultK is the number of hits Search returns when SearchRequest.K is 0.
const DefaultK = 5

// SearchRequest asks Memory.Search for a user's most relevant facts.
type SearchRequest struct {
	Tenant string
	UserID string
	// Query is the text to match, such as the last user message. An
	// empty query ranks the facts by confidence alone.
	Query string
	// K is the most hits to return; 0 means DefaultK, negative means all.
	K int
	// MinConfidence drops facts whose effective confidence is below it.
	MinConfidence float64
	// Fill completes the K hits with the most confident facts that match
	// no query term, ranked after every fact that does: a short list of
	// what is known about the user, whatever the question.
	Fill bool
	// IncludeSuperseded searches every fact recorded, superseded and
	// closed ones too; without it (and without AsOf), only the facts that
	// hold now.
	IncludeSuperseded bool
	// AsOf, when set, searches the facts that held at that time
	// (ValidFrom ≤ AsOf < ValidTo; see ListRequest.AsOf). Confidence is
	// still what a fact is worth now: decay measures how much the memory
	// trusts what it knows, which an as-of question does not change.
	AsOf time.Time
	// Metadata keeps only the facts whose metadata has every one of these
	// entries (exact match); at most MaxMetadataFilters.
	Metadata map[string]string
}

// Hit is one search result.
type Hit struct {
	Fact Fact `json:"fact"`
	// Relevance to the query in [0, 1]: BM25 divided by the best score,
	// or the cosine of the embeddings when there is an Embedder. It is 1
	// for every fact when the query is empty, 0 for Fill hits.
	Relevance float64 `json:"relevance"`
	// Confidence is the fact's effective confidence now.
	Confidence float64 `json:"confidence"`
	// Score = Relevance × Confidence: the ranking key.
	Score float64 `json:"score"`
}

// Search returns the user's facts ranked by relevance to the query times
// effective confidence, best first, at most K of them. Relevance is BM25
// over the user's facts with agentmem's analyzer (recall.Tokenize:
// stemming, stop words), so "drinks coffee" finds "likes coffee in the
// morning"; with an Embedder it is the cosine of the vectors (for facts
// that have one). A fact that matches nothing is not a hit unless Fill
// is set.
func (m *Memory) Search(ctx context.Context, req SearchRequest) ([]Hit, error) {
	if err := ValidateUser(req.Tenant, req.UserID); err != nil {
		return nil, err
	}
	if err := checkField("query", req.Query, MaxTextBytes*8, false); err != nil {
		return nil, err
	}
	all, err := m.ListFacts(ctx, ListRequest{
		Tenant: req.Tenant, UserID: req.UserID, IncludeSuperseded: req.IncludeSuperseded, AsOf: req.AsOf, Metadata: req.Metadata,
	})
	if err != nil {
		return nil, err
	}
	now := m.opts.Clock()
	k := req.K
	switch {
	case k == 0:
		k = DefaultK
	case k < 0:
		k = len(all)
	}
	facts := all[:0]
	for _, f := range all {
		if m.opts.Decay.Effective(f, now) >= req.MinConfidence {
			facts = append(facts, f)
		}
	}
	rel, err := m.relevance(ctx, req.Query, facts)
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, 0, len(facts))
	for i, f := range facts {
		c := m.opts.Decay.Effective(f, now)
		if rel[i] <= 0 && !req.Fill {
			continue
		}
		hits = append(hits, Hit{Fact: f, Relevance: rel[i], Confidence: c, Score: rel[i] * c})
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Confidence, a.Confidence); c != 0 {
			return c
		}
		return b.Fact.ReinforcedAt.Compare(a.Fact.ReinforcedAt)
	})
	return hits[:min(k, len(hits))], nil
}

// relevance returns the relevance of each fact to query, in [0, 1].
func (m *Memory) relevance(ctx context.Context, query string, facts []Fact) ([]float64, error) {
	rel := make([]float64, len(facts))
	q := recall.Tokenize(query)
	if len(q) == 0 && normalize(query) == "" {
		for i := range rel {
			rel[i] = 1
		}
		return rel, nil
	}
	docs := make([]map[string]int, len(facts))
	for i, f := range facts {
		docs[i] = termFreq(f.Text)
	}
	lex := bm25(q, docs)
	var qv []float32
	if m.opts.Embedder != nil && slices.ContainsFunc(facts, func(f Fact) bool { return f.Embedding != nil }) {
		vs, err := m.embedTexts(ctx, []string{query})
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err == nil:
			qv = vs[query]
		}
		// Otherwise the embedding service is down: relevance is lexical,
		// so that searches and prompt injection keep working.
	}
	for i, f := range facts {
		rel[i] = lex[i]
		if qv != nil && f.Embedding != nil {
			rel[i] = math.Max(0, cosine(qv, f.Embedding))
		}
	}
	return rel, nil
}
