package recall

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem"
)

// Index is the recall index callers use: documents are upserted into a
// Backend and searched by relevance to a query. Retrieval is lexical
// (BM25), fused by reciprocal rank with vector retrieval when an Embedder
// is configured or a query vector is given. Its methods are safe for concurrent
// use.
type Index struct {
	b    Backend
	caps Capabilities
	opts Options
}

// Options configure an Index. The zero value is a good default: lexical
// retrieval with the default Ranking.
type Options struct {
	// Embedder, when set, embeds the documents Upsert receives without a
	// vector and the text of queries without one, and Reembed uses it.
	Embedder agentmem.Embedder
	// DeferEmbedding makes Upsert write documents without a vector at
	// once, leaving them to Reembed (typically running in the background,
	// see Index.StartReembed), so that writes never wait on an embedding
	// service. Without it Upsert embeds first and fails if that fails.
	DeferEmbedding bool
	// Ranking tunes search; the zero value is DefaultRanking.
	Ranking *Ranking
	// OnEmbedError, when set, is told when the Embedder failed to embed a
	// query's text. Search then ranks lexically alone rather than fail,
	// so an outage of the embedding service degrades recall instead of
	// stopping it.
	OnEmbedError func(ctx context.Context, err error)
	// Lineage, when set, resolves the conversation of a session a search
	// is scoped to (its filter's MetaSession). A branch's inherited turns
	// are indexed under the sessions that logged them. So for a branch
	// the search covers the spans Lineage returns, not only the session's
	// own documents, and ranks them, and fills windows, as one
	// conversation.
	//
	// Hits keep their documents' IDs and metadata. An inherited turn is
	// found as its ancestor's document, with the step number it has in
	// the branch too. For each turn the nearest session of the lineage
	// that holds a document of it (its amendment of the step) wins. An
	// ancestor's document made from an entry after the fork point (its
	// later amendment, MetaEntry) is not found. The documents must be
	// recallview.StepDocs' ("<session>#<seq>"). A server sets
	// recallview.StoreLineage.
	Lineage LineageFunc
}

// Ranking tunes how Search ranks. Every technique is general (none
// depends on a data set); the defaults were chosen on the LoCoMo
// development split and each raised evidence recall at every k there.
type Ranking struct {
	// Candidates is how many lexical and vector candidates are scored per
	// search; 0 means max(200, 10*K).
	Candidates int
	// NeighbourWeight adds to a document's score this share of the scores
	// of the documents just before and after it in its group (Seq - 1 and
	// Seq + 1). A turn answering, or asked by, a matching turn thus ranks
	// higher. Negative turns it off.
	NeighbourWeight float64
	// GroupWeight adds to a document's score this share of its group's
	// score: the sum of its documents' scores, relative to the best
	// group's, times the best document's score. A turn of a session about
	// the query thus ranks above an equal turn of an unrelated one.
	// Negative turns it off.
	GroupWeight float64
	// FeedbackDocs and FeedbackTerms set pseudo-relevance feedback, in the
	// manner of RM3. The FeedbackTerms terms that weigh most in the top
	// FeedbackDocs lexical results, weighted by those results' scores,
	// are searched for too. Their results' scores, relative to the best,
	// are added at FeedbackWeight, relative to the original query's best.
	// FeedbackDocs < 0 turns it off.
	FeedbackDocs   int
	FeedbackTerms  int
	FeedbackWeight float64
	// GroupDecay diversifies results across groups: the n-th result of a
	// group (from 0) has its score multiplied by GroupDecay^n when the
	// results are picked. 1 or a negative value turns it off.
	GroupDecay float64
	// RRFK is the constant k of reciprocal rank fusion, 1/(k + rank), that
	// fuses the lexical and vector rankings; 0 means 60.
	RRFK float64
}

// DefaultRanking is the Ranking of a zero Options.
var DefaultRanking = Ranking{
	NeighbourWeight: 0.3,
	GroupWeight:     0.2,
	FeedbackDocs:    5,
	FeedbackTerms:   10,
	FeedbackWeight:  0.3,
	GroupDecay:      -1,
}

// New returns an Index over the backend, searching with its capabilities
// (CapabilitiesOf). Closing the Index closes the backend.
func New(b Backend, opts Options) *Index {
	if opts.Ranking == nil {
		r := DefaultRanking
		opts.Ranking = &r
	}
	return &Index{b: b, caps: CapabilitiesOf(b), opts: opts}
}

// Backend returns the index's backend.
func (ix *Index) Backend() Backend { return ix.b }

// Capabilities returns the capabilities of the index's backend that it
// searches with.
func (ix *Index) Capabilities() Capabilities { return ix.caps }

// Close closes the backend.
func (ix *Index) Close() error { return ix.b.Close() }

// Upsert adds documents of one tenant, replacing those with the same IDs,
// all or none. With an Embedder (and no DeferEmbedding), documents without
// a vector are embedded first.
func (ix *Index) Upsert(ctx context.Context, docs ...Doc) error {
	docs, err := CheckDocs(docs)
	if err != nil || len(docs) == 0 {
		return err
	}
	if err := ix.embedMissing(ctx, docs); err != nil {
		return err
	}
	return ix.b.Upsert(ctx, docs...)
}

// embedMissing embeds, in place, the documents without a vector, when the
// index has an Embedder and does not defer embedding.
func (ix *Index) embedMissing(ctx context.Context, docs []Doc) error {
	e := ix.opts.Embedder
	if e == nil || ix.opts.DeferEmbedding {
		return nil
	}
	var texts []string
	var at []int
	for i, d := range docs {
		if len(d.Embedding) == 0 {
			texts = append(texts, d.Text)
			at = append(at, i)
		}
	}
	if len(texts) == 0 {
		return nil
	}
	vecs, err := embed(ctx, e, texts)
	if err != nil {
		return err
	}
	for j, i := range at {
		docs[i].Embedding, docs[i].EmbeddingModel = vecs[j], e.EmbeddingModel()
	}
	return nil
}

// Put upserts documents as Upsert does, giving each one without an ID a
// new one (a time-sortable UUIDv7, agentmem.NewID), and returns their IDs
// in order: the seeds' upsert, which returns the document's identifier.
func (ix *Index) Put(ctx context.Context, docs ...Doc) ([]string, error) {
	docs = slices.Clone(docs)
	ids := make([]string, len(docs))
	for i := range docs {
		if docs[i].ID == "" {
			docs[i].ID = agentmem.NewID()
		}
		ids[i] = docs[i].ID
	}
	if err := ix.Upsert(ctx, docs...); err != nil {
		return nil, err
	}
	return ids, nil
}

// Get returns the tenant's document with the ID, or an error wrapping
// agentmem.ErrNotFound, or a *agentmem.DamagedError when its stored form
// does not decode (which the backend's Get leaves out).
func (ix *Index) Get(ctx context.Context, tenant, id string) (Doc, error) {
	var damaged *agentmem.DamagedError
	docs, err := ix.b.Get(agentmem.WithDamageReporter(ctx, func(d *agentmem.DamagedError) {
		if d.ID == id {
			damaged = d
		}
	}), tenant, id)
	if err != nil {
		return Doc{}, err
	}
	if len(docs) == 0 {
		if damaged != nil {
			return Doc{}, fmt.Errorf("recall: %w", damaged)
		}
		return Doc{}, fmt.Errorf("recall: document %q: %w", id, agentmem.ErrNotFound)
	}
	return docs[0], nil
}

// Scan returns up to limit documents of the tenant that pass the filter,
// whole, in ID order after the ID after (see Scanner). A backend without
// a Scanner is an error wrapping errors.ErrUnsupported.
func (ix *Index) Scan(ctx context.Context, tenant string, f Filter, after string, limit int) ([]Doc, error) {
	if ix.caps.Scan == nil {
		return nil, unsupported("a scan of the documents", "a Scanner")
	}
	return ix.caps.Scan.Scan(ctx, tenant, f, after, limit)
}

// Delete removes the tenant's documents with the IDs and returns how many
// there were.
func (ix *Index) Delete(ctx context.Context, tenant string, ids ...string) (int, error) {
	return ix.b.Delete(ctx, tenant, ids...)
}

// Clear removes the tenant's documents that pass the filter (all with the
// zero Filter) and returns how many there were.
func (ix *Index) Clear(ctx context.Context, tenant string, f Filter) (int, error) {
	return ix.b.Clear(ctx, tenant, f)
}

// Query is a search.
type Query struct {
	// Tenant is the only tenant searched.
	Tenant string
	// Text is the query text, analyzed like documents (see Tokenize).
	Text string
	// Embedding, when set, is the query's vector; otherwise an Index with
	// an Embedder embeds Text. Either way vector results are fused with
	// lexical ones.
	Embedding []float32
	// K is the number of hits wanted; at least 1.
	K int
	// Filter narrows the search (for example to a session, a user or an
	// agent: see Scope).
	Filter Filter
	// Similarity scores text: BM25 (the default, also when empty) or
	// TFIDF, the seeds' TF-IDF cosine.
	Similarity Similarity
	// Before and After, when positive, fill each hit's Window with up to
	// that many documents of its group before and after it (by Seq), like
	// Mastra's messageRange.
	Before, After int
}

// Hit is a search result.
type Hit struct {
	// Doc is the document found.
	Doc Doc
	// Score is its fused score; higher is better. Scores compare only
	// within one search.
	Score float64
	// Window is the document with its neighbours (Query.Before and After),
	// in Seq order; nil unless a window was asked for.
	Window []Doc
}

// Search returns up to K documents of the tenant most relevant to the
// query, best first.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	if err := CheckQuery(q.Tenant, q.Filter, max(q.K, 1)); err != nil {
		return nil, err
	}
	if q.K < 1 {
		return nil, invalid("k", "must be at least 1, got %d", q.K)
	}
	if err := checkString("text", q.Text, MaxTextBytes); err != nil {
		return nil, err
	}
	if err := checkVector("embedding", q.Embedding); err != nil {
		return nil, err
	}
	if _, err := ParseSimilarity(string(q.Similarity)); err != nil {
		return nil, err
	}
	if id := q.Filter.Metadata[MetaSession]; id != "" && ix.opts.Lineage != nil && len(q.Filter.Spans) == 0 {
		spans, err := ix.opts.Lineage(ctx, q.Tenant, id)
		if err != nil {
			return nil, err
		}
		if len(spans) > 1 || (len(spans) == 1 && spans[0].After > 0) {
			// A branch: its conversation, over the documents of the
			// sessions that logged its turns, and those each session
			// holds of the turns it inherited (lineageView).
			v := newLineageView(ix.b, ix.caps, id, spans)
			f := q.Filter.Normalize()
			delete(f.Metadata, MetaSession)
			f.Spans = v.spans
			q.Filter = f
			view := &Index{b: v, caps: v.caps(), opts: ix.opts}
			return view.search(ctx, q)
		}
	}
	return ix.search(ctx, q)
}

// search is Search of a checked query.
func (ix *Index) search(ctx context.Context, q Query) ([]Hit, error) {
	r := ix.opts.Ranking
	n := r.Candidates
	if n <= 0 {
		n = max(200, 10*q.K)
	}
	lex, vs := ix.caps.Lexical, ix.caps.Vector
	switch {
	case len(q.Embedding) > 0 && vs == nil:
		return nil, unsupported("a query vector", "vector search")
	case q.Similarity == TFIDF && lex == nil:
		return nil, unsupported("a TF-IDF search", "lexical search")
	case lex == nil && len(q.Embedding) == 0 && (vs == nil || ix.opts.Embedder == nil):
		return nil, unsupported("a search without a query vector", "lexical search")
	}
	var ranked []Match
	var err error
	switch {
	case q.Similarity == TFIDF:
		ranked, err = ix.tfidf(ctx, q, n)
	case lex != nil:
		ranked, err = ix.lexical(ctx, q, n)
		ranked = smooth(ranked, r)
	}
	if err != nil {
		return nil, err
	}
	vec := q.Embedding
	if len(vec) == 0 && vs != nil && ix.opts.Embedder != nil && q.Text != "" {
		qv, err := embed(ctx, ix.opts.Embedder, []string{q.Text})
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil && lex == nil:
			return nil, err
		case err != nil:
			// The embedding service is down: lexical ranking still
			// answers, as it does for documents not yet embedded.
			if ix.opts.OnEmbedError != nil {
				ix.opts.OnEmbedError(ctx, err)
			}
		default:
			vec = qv[0]
		}
	}
	if len(vec) > 0 {
		vq := VectorQuery{Tenant: q.Tenant, Vector: vec, Filter: q.Filter, Limit: n}
		vm, err := vs.Vector(ctx, vq)
		if err != nil {
			return nil, err
		}
		ranked = fuseRRF(r.rrfK(), ranked, vm)
	}
	ranked = diversify(ranked, 2*q.K, r.GroupDecay)
	return ix.resolve(ctx, q, ranked)
}

func (r *Ranking) rrfK() float64 {
	if r.RRFK <= 0 {
		return 60
	}
	return r.RRFK
}

// lexical returns the lexical ranking of the query: BM25 candidates, with
// pseudo-relevance feedback when the ranking asks for it.
func (ix *Index) lexical(ctx context.Context, q Query, n int) ([]Match, error) {
	terms := UniqueTerms(Tokenize(q.Text))
	if len(terms) == 0 {
		return nil, nil
	}
	lq := LexicalQuery{Tenant: q.Tenant, Terms: terms, Filter: q.Filter, Limit: n}
	ms, err := ix.caps.Lexical.Lexical(ctx, lq)
	if err != nil || len(ms) == 0 {
		return ms, err
	}
	r := ix.opts.Ranking
	if r.FeedbackDocs < 0 || r.FeedbackTerms <= 0 || r.FeedbackWeight <= 0 {
		return ms, nil
	}
	top := ms[:min(max(r.FeedbackDocs, 1), len(ms))]
	ids := make([]string, len(top))
	for i, m := range top {
		ids[i] = m.ID
	}
	docs, err := ix.b.Get(ctx, q.Tenant, ids...)
	if err != nil {
		return nil, err
	}
	exp := expansionTerms(top, docs, terms, r.FeedbackTerms)
	if len(exp) == 0 {
		return ms, nil
	}
	lq.Terms = exp
	more, err := ix.caps.Lexical.Lexical(ctx, lq)
	if err != nil {
		return nil, err
	}
	return blend(ms, more, r.FeedbackWeight), nil
}

// UniqueTerms returns terms without repeats, in first-seen order.
func UniqueTerms(terms []string) []string {
	seen := make(map[string]bool, len(terms))
	out := terms[:0:0]
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// expansionTerms picks the n terms, not among the query's, that weigh
// most in the feedback documents: each document's term frequencies,
// relative to its length, weighted by its share of the top scores.
func expansionTerms(top []Match, docs []Doc, query []string, n int) []string {
	score := make(map[string]float64, len(top))
	var total float64
	for _, m := range top {
		score[m.ID] = m.Score
		total += m.Score
	}
	if total <= 0 {
		return nil
	}
	skip := make(map[string]bool, len(query))
	for _, t := range query {
		skip[t] = true
	}
	weight := map[string]float64{}
	for _, d := range docs {
		terms := Tokenize(d.Text)
		if len(terms) == 0 {
			continue
		}
		w := score[d.ID] / total / float64(len(terms))
		for _, t := range terms {
			if !skip[t] {
				weight[t] += w
			}
		}
	}
	cands := make([]string, 0, len(weight))
	for t := range weight {
		cands = append(cands, t)
	}
	slices.SortFunc(cands, func(a, b string) int {
		if c := cmp.Compare(weight[b], weight[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return cands[:min(n, len(cands))]
}

// blend adds the scores of more, relative to its best, at weight w
// relative to the best of base, to the scores of base; documents only in
// more join.
func blend(base, more []Match, w float64) []Match {
	if len(more) == 0 {
		return base
	}
	scale := w * base[0].Score / more[0].Score
	byID := make(map[string]int, len(base))
	out := slices.Clone(base)
	for i, m := range out {
		byID[m.ID] = i
	}
	for _, m := range more {
		if i, ok := byID[m.ID]; ok {
			out[i].Score += scale * m.Score
			continue
		}
		m.Score *= scale
		out = append(out, m)
	}
	sortMatches(out)
	return out
}

// sortMatches orders matches best first, ties by ID.
func sortMatches(ms []Match) {
	slices.SortFunc(ms, func(a, b Match) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
}

// place is a document's place in its group.
type place struct {
	group string
	seq   int64
}

// smooth mixes into each candidate's score a share of its neighbours'
// (NeighbourWeight) and of its group's (GroupWeight). Neighbours of
// candidates that are not candidates themselves join with the share of
// their neighbours' scores and an empty ID, resolved later (see resolve).
func smooth(ms []Match, r *Ranking) []Match {
	if len(ms) == 0 || (r.NeighbourWeight <= 0 && r.GroupWeight <= 0) {
		return ms
	}
	base := make(map[place]float64, len(ms))
	groupSum := map[string]float64{}
	var bestGroup float64
	for _, m := range ms {
		if m.Group == "" {
			continue
		}
		base[place{m.Group, m.Seq}] = m.Score
		groupSum[m.Group] += m.Score
		bestGroup = max(bestGroup, groupSum[m.Group])
	}
	best := ms[0].Score
	out := slices.Clone(ms)
	if w := r.NeighbourWeight; w > 0 {
		for i, m := range ms {
			if m.Group == "" {
				continue
			}
			out[i].Score += w * (base[place{m.Group, m.Seq - 1}] + base[place{m.Group, m.Seq + 1}])
			for _, s := range []int64{m.Seq - 1, m.Seq + 1} {
				p := place{m.Group, s}
				if _, ok := base[p]; ok {
					continue
				}
				base[p] = 0
				out = append(out, Match{Group: m.Group, Seq: s, Score: w * (base[place{m.Group, s - 1}] + base[place{m.Group, s + 1}])})
			}
		}
	}
	if w := r.GroupWeight; w > 0 && bestGroup > 0 {
		for i := range out {
			if g := out[i].Group; g != "" {
				out[i].Score += w * best * groupSum[g] / bestGroup
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Match) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if a.ID == "" || b.ID == "" {
			// Unresolved neighbours: by place.
			if c := cmp.Compare(a.Group, b.Group); c != 0 {
				return c
			}
			return cmp.Compare(a.Seq, b.Seq)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// fuseRRF fuses two rankings by reciprocal rank: a document's score is
// the sum over the rankings it is in of 1/(k + rank), rank from 1.
func fuseRRF(k float64, a, b []Match) []Match {
	type key struct {
		id string
		p  place
	}
	keyOf := func(m Match) key {
		if m.ID == "" {
			return key{p: place{m.Group, m.Seq}}
		}
		return key{id: m.ID}
	}
	at := map[key]int{}
	var out []Match
	for _, list := range [][]Match{a, b} {
		for rank, m := range list {
			s := 1 / (k + float64(rank+1))
			kk := keyOf(m)
			if i, ok := at[kk]; ok {
				out[i].Score += s
				continue
			}
			at[kk] = len(out)
			m.Score = s
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b Match) int { return cmp.Compare(b.Score, a.Score) })
	return out
}

// diversify reorders the best k of a ranking so that each further
// document of a group counts less: the n-th pick of a group (from 0)
// has its score multiplied by decay^n. It is greedy and costs O(k * len).
func diversify(ms []Match, k int, decay float64) []Match {
	if decay <= 0 || decay >= 1 || len(ms) <= 1 {
		return ms
	}
	rest := slices.Clone(ms)
	picked := map[string]int{}
	out := make([]Match, 0, min(k, len(ms)))
	factor := func(m Match) float64 {
		if m.Group == "" {
			return 1
		}
		f := 1.0
		for range picked[m.Group] {
			f *= decay
		}
		return f
	}
	for len(out) < k && len(rest) > 0 {
		bi := 0
		bs := rest[0].Score * factor(rest[0])
		for i := 1; i < len(rest); i++ {
			// The list is sorted, so no later one can win once the
			// undecayed score is below the best decayed one.
			if rest[i].Score < bs {
				break
			}
			if s := rest[i].Score * factor(rest[i]); s > bs {
				bi, bs = i, s
			}
		}
		m := rest[bi]
		rest = slices.Delete(rest, bi, bi+1)
		out = append(out, m)
		if m.Group != "" {
			picked[m.Group]++
		}
	}
	return out
}

// resolve turns the final ranking into up to q.K hits: it fetches the
// documents (in chunks, as some may have gone or be filtered out),
// resolves neighbours that joined by place, and fills the windows.
func (ix *Index) resolve(ctx context.Context, q Query, ranked []Match) ([]Hit, error) {
	f := q.Filter.Normalize()
	hits := make([]Hit, 0, min(q.K, len(ranked)))
	seen := map[string]bool{}
	for start := 0; start < len(ranked) && len(hits) < q.K; {
		chunk := ranked[start:min(start+2*q.K, len(ranked))]
		start += len(chunk)
		var ids []string
		for _, m := range chunk {
			if m.ID != "" {
				ids = append(ids, m.ID)
			}
		}
		docs, err := ix.b.Get(ctx, q.Tenant, ids...)
		if err != nil {
			return nil, err
		}
		byID := make(map[string]Doc, len(docs))
		for _, d := range docs {
			byID[d.ID] = d
		}
		for _, m := range chunk {
			if len(hits) == q.K {
				break
			}
			d, ok := byID[m.ID]
			if m.ID == "" {
				if d, ok, err = ix.at(ctx, q.Tenant, m.Group, m.Seq, f, seen); err != nil {
					return nil, err
				}
			}
			if !ok || seen[d.ID] {
				continue // deleted meanwhile, absent, or filtered out
			}
			seen[d.ID] = true
			h := Hit{Doc: d, Score: m.Score}
			if (q.Before > 0 || q.After > 0) && d.Group != "" {
				w, err := ix.b.Around(ctx, q.Tenant, d.Group, d.Seq-int64(max(q.Before, 0)), d.Seq+int64(max(q.After, 0)))
				if err != nil {
					return nil, err
				}
				h.Window = w
			}
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// at returns the document at a place of a group that passes the filter
// and has not been seen, if there is one.
func (ix *Index) at(ctx context.Context, tenant, group string, seq int64, f Filter, seen map[string]bool) (Doc, bool, error) {
	ns, err := ix.b.Around(ctx, tenant, group, seq, seq)
	if err != nil {
		return Doc{}, false, err
	}
	for _, n := range ns {
		if f.Match(&n) && !seen[n.ID] {
			return n, true, nil
		}
	}
	return Doc{}, false, nil
}

// Scope returns the filter of a conversation scope: the metadata pairs
// recallview.StepDocs writes for a session, a user and an agent (empty values do not
// filter). Search with it finds the turns of this session, of every
// session of this user, or of this agent.
func Scope(session, user, agent string) Filter {
	m := map[string]string{}
	for k, v := range map[string]string{MetaSession: session, MetaUser: user, MetaAgent: agent} {
		if v != "" {
			m[k] = v
		}
	}
	if len(m) == 0 {
		return Filter{}
	}
	return Filter{Metadata: m}
}

// ParseScope parses a conversation scope written "session:ID", "user:ID"
// or "agent:ID" (as the HTTP API and the CLI take it) into its Filter. The
// empty string is the whole tenant: the zero Filter. Anything else is an
// *agentmem.InvalidError for the field "scope".
func ParseScope(s string) (Filter, error) {
	if s == "" {
		return Filter{}, nil
	}
	kind, id, _ := strings.Cut(s, ":")
	var f Filter
	switch {
	case id == "":
	case kind == "session":
		f = Scope(id, "", "")
	case kind == "user":
		f = Scope("", id, "")
	case kind == "agent":
		f = Scope("", "", id)
	}
	if f.Metadata == nil {
		return Filter{}, &agentmem.InvalidError{Field: "scope", Reason: fmt.Sprintf("must be session:ID, user:ID or agent:ID, not %q", s)}
	}
	if err := CheckFilter(f); err != nil {
		return Filter{}, &agentmem.InvalidError{Field: "scope", Reason: err.Error()}
	}
	return f, nil
}

// AddFilters adds metadata pairs written "key:value" (the key is what
// comes before the first colon), as the HTTP API's filter parameter and
// the CLI take them, to a filter: a hit must have every pair. A pair
// without a colon or with an empty key, or a key given two values (by
// the pairs or by the filter already, such as a scope's), is an
// *agentmem.InvalidError for the field "filter".
func AddFilters(f Filter, pairs []string) (Filter, error) {
	if len(pairs) == 0 {
		return f, nil
	}
	m := make(map[string]string, len(f.Metadata)+len(pairs))
	for k, v := range f.Metadata {
		m[k] = v
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, ":")
		if !ok || k == "" {
			return Filter{}, &agentmem.InvalidError{Field: "filter", Reason: fmt.Sprintf("must be key:value, not %q", p)}
		}
		if old, dup := m[k]; dup && old != v {
			return Filter{}, &agentmem.InvalidError{Field: "filter", Reason: fmt.Sprintf("asks for %s to be both %q and %q", k, old, v)}
		}
		m[k] = v
	}
	f.Metadata = m
	if err := CheckFilter(f); err != nil {
		return Filter{}, &agentmem.InvalidError{Field: "filter", Reason: err.Error()}
	}
	return f, nil
}

// seqString formats a step number for metadata.
func seqString(n int64) string { return strconv.FormatInt(n, 10) }
