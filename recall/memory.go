package recall

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
)

// Default BM25 parameters of the in-memory backend (SQLite's FTS5 uses the
// same).
const (
	DefaultK1 = 1.2
	DefaultB  = 0.75
)

// MemoryOptions configures the in-memory backend. The zero value is the
// default.
type MemoryOptions struct {
	// K1 is BM25's term frequency saturation; 0 means DefaultK1.
	K1 float64
	// B is BM25's document length normalization, in [0, 1]; a negative
	// value means 0 and 0 means DefaultB.
	B float64
}

// Memory is the in-memory Backend, with every capability. It ranks an
// inverted index by Okapi BM25, with exact cosine scoring of embeddings.
// Its idf is ln(1 + (N - df + 0.5) / (df + 0.5)), as Lucene computes it,
// so that no term weighs zero or less. It keeps nothing across restarts. Its methods are safe for
// concurrent use.
type Memory struct {
	k1, b float64

	mu          sync.RWMutex
	tenants     map[string]*memTenant
	checkpoints map[string]string // BatchWriter's, by name
	closed      bool
}

var (
	_ Backend         = (*Memory)(nil)
	_ LexicalSearcher = (*Memory)(nil)
	_ VectorSearcher  = (*Memory)(nil)
	_ EmbeddingStore  = (*Memory)(nil)
	_ Scanner         = (*Memory)(nil)
)

// memTenant is one tenant's documents. Documents live in slots; a deleted
// or replaced document's slot is emptied and its postings are skipped
// until the tenant is compacted (when dead slots outnumber live ones), so
// that removing a document never walks long posting lists.
type memTenant struct {
	ids      map[string]int32
	slots    []*memDoc // nil: a dead slot
	postings map[string][]posting
	df       map[string]int
	groups   map[string]map[int32]struct{}
	totalLen int
	dead     int
}

type posting struct {
	slot int32
	tf   int32
}

type memDoc struct {
	doc    Doc
	tf     map[string]int32
	length int
	norm   float64 // the embedding's Euclidean norm
}

// NewMemory returns an empty in-memory backend.
func NewMemory(opts MemoryOptions) *Memory {
	m := &Memory{k1: opts.K1, b: opts.B, tenants: map[string]*memTenant{}}
	if m.k1 <= 0 {
		m.k1 = DefaultK1
	}
	switch {
	case m.b < 0:
		m.b = 0
	case m.b == 0:
		m.b = DefaultB
	case m.b > 1:
		m.b = 1
	}
	return m
}

// newMemDoc analyzes a checked document.
func newMemDoc(d Doc) *memDoc {
	terms := Tokenize(d.Text)
	e := &memDoc{doc: d, tf: make(map[string]int32, len(terms)), length: len(terms), norm: norm(d.Embedding)}
	for _, t := range terms {
		if _, ok := e.tf[t]; !ok {
			// The tenant's postings keep the term as long as a document
			// holds it, not only this one.
			t = ownTerm(t)
		}
		e.tf[t]++
	}
	return e
}

func newMemTenant() *memTenant {
	return &memTenant{ids: map[string]int32{}, postings: map[string][]posting{}, df: map[string]int{}, groups: map[string]map[int32]struct{}{}}
}

func (m *Memory) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.closed {
		return ErrClosed
	}
	return nil
}

// Upsert implements Backend.
func (m *Memory) Upsert(ctx context.Context, docs ...Doc) error {
	docs, err := CheckDocs(docs)
	if err != nil || len(docs) == 0 {
		return err
	}
	// Analyze outside the lock.
	entries := make([]*memDoc, len(docs))
	for i, d := range docs {
		entries[i] = newMemDoc(d)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	t := m.tenants[docs[0].Tenant]
	if t == nil {
		t = newMemTenant()
		m.tenants[docs[0].Tenant] = t
	}
	for _, e := range entries {
		t.remove(e.doc.ID)
		t.add(e)
	}
	t.maybeCompact()
	return nil
}

func (t *memTenant) add(e *memDoc) {
	slot := int32(len(t.slots))
	t.slots = append(t.slots, e)
	t.ids[e.doc.ID] = slot
	t.totalLen += e.length
	for term, n := range e.tf {
		t.postings[term] = append(t.postings[term], posting{slot, n})
		t.df[term]++
	}
	if e.doc.Group != "" {
		g := t.groups[e.doc.Group]
		if g == nil {
			g = map[int32]struct{}{}
			t.groups[e.doc.Group] = g
		}
		g[slot] = struct{}{}
	}
}

func (t *memTenant) remove(id string) bool {
	slot, ok := t.ids[id]
	if !ok {
		return false
	}
	e := t.slots[slot]
	for term := range e.tf {
		if t.df[term]--; t.df[term] == 0 {
			delete(t.df, term)
			delete(t.postings, term)
		}
	}
	if g := t.groups[e.doc.Group]; g != nil {
		delete(g, slot)
		if len(g) == 0 {
			delete(t.groups, e.doc.Group)
		}
	}
	t.totalLen -= e.length
	t.slots[slot] = nil
	t.dead++
	delete(t.ids, id)
	return true
}

// maybeCompact rebuilds the tenant's slots and postings without the dead
// slots once these outnumber the live ones.
func (t *memTenant) maybeCompact() {
	if t.dead < 64 || t.dead < len(t.ids) {
		return
	}
	live := make([]*memDoc, 0, len(t.ids))
	for _, e := range t.slots {
		if e != nil {
			live = append(live, e)
		}
	}
	*t = *newMemTenant()
	for _, e := range live {
		t.add(e)
	}
}

// Get implements Backend.
func (m *Memory) Get(ctx context.Context, tenant string, ids ...string) ([]Doc, error) {
	if err := checkIDs(tenant, ids); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	t := m.tenants[tenant]
	if t == nil {
		return nil, nil
	}
	var out []Doc
	for _, id := range ids {
		if slot, ok := t.ids[id]; ok {
			out = append(out, t.slots[slot].doc.Clone())
		}
	}
	return out, nil
}

// Delete implements Backend.
func (m *Memory) Delete(ctx context.Context, tenant string, ids ...string) (int, error) {
	if err := checkIDs(tenant, ids); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return 0, err
	}
	t := m.tenants[tenant]
	if t == nil {
		return 0, nil
	}
	n := 0
	for _, id := range ids {
		if t.remove(id) {
			n++
		}
	}
	m.dropIfEmpty(tenant, t)
	return n, nil
}

func (m *Memory) dropIfEmpty(tenant string, t *memTenant) {
	if len(t.ids) == 0 {
		delete(m.tenants, tenant)
		return
	}
	t.maybeCompact()
}

// Clear implements Backend.
func (m *Memory) Clear(ctx context.Context, tenant string, f Filter) (int, error) {
	if err := CheckTenant(tenant); err != nil {
		return 0, err
	}
	if err := CheckFilter(f); err != nil {
		return 0, err
	}
	f = f.Normalize()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return 0, err
	}
	t := m.tenants[tenant]
	if t == nil {
		return 0, nil
	}
	var ids []string
	for id, slot := range t.ids {
		if f.Match(&t.slots[slot].doc) {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		t.remove(id)
	}
	m.dropIfEmpty(tenant, t)
	return len(ids), nil
}

// scorePool recycles the score accumulators of Lexical.
var scorePool = sync.Pool{New: func() any { return new([]float64) }}

// Lexical implements LexicalSearcher.
func (m *Memory) Lexical(ctx context.Context, q LexicalQuery) ([]Match, error) {
	if err := CheckQuery(q.Tenant, q.Filter, q.Limit); err != nil {
		return nil, err
	}
	f := q.Filter.Normalize()
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	t := m.tenants[q.Tenant]
	if t == nil || len(t.ids) == 0 {
		return nil, nil
	}
	n := float64(len(t.ids))
	avgLen := float64(t.totalLen) / n
	if avgLen == 0 {
		avgLen = 1
	}
	accp := scorePool.Get().(*[]float64)
	defer scorePool.Put(accp)
	if cap(*accp) < len(t.slots) {
		*accp = make([]float64, len(t.slots))
	}
	acc := (*accp)[:len(t.slots)]
	var touched []int32
	terms := UniqueTerms(q.Terms)
	// Candidate gating (see GateTerms): the gate terms make candidates,
	// the others then only add to them.
	df := func(term string) float64 { return float64(t.df[term]) }
	gate := GateTerms(terms, df, n)
	var common []string
	for _, term := range terms {
		if !slices.Contains(gate, term) {
			common = append(common, term)
		}
	}
	terms = gate
	score := func(term string, generate bool) {
		df := float64(t.df[term])
		if df == 0 {
			return
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range t.postings[term] {
			e := t.slots[p.slot]
			if e == nil {
				continue
			}
			if acc[p.slot] == 0 {
				if !generate {
					continue
				}
				touched = append(touched, p.slot)
			}
			tf := float64(p.tf)
			norm := m.k1 * (1 - m.b + m.b*float64(e.length)/avgLen)
			acc[p.slot] += idf * tf * (m.k1 + 1) / (tf + norm)
		}
	}
	for _, term := range terms {
		score(term, true)
	}
	// When no document the gate terms found passes the filter (a
	// session's scope holds none of the rarer terms), the other terms
	// make candidates too, as when the gate found none at all.
	generate := !slices.ContainsFunc(touched, func(slot int32) bool { return f.Match(&t.slots[slot].doc) })
	for _, term := range common {
		score(term, generate)
	}
	top := NewTopK(q.Limit)
	for _, slot := range touched {
		s := acc[slot]
		acc[slot] = 0
		e := t.slots[slot]
		if !top.Admits(s, e.doc.ID) || !f.Match(&e.doc) {
			continue
		}
		top.Push(Match{ID: e.doc.ID, Group: e.doc.Group, Seq: e.doc.Seq, Score: s})
	}
	return top.Sorted(), nil
}

// Vector implements VectorSearcher.
func (m *Memory) Vector(ctx context.Context, q VectorQuery) ([]Match, error) {
	if err := CheckQuery(q.Tenant, q.Filter, q.Limit); err != nil {
		return nil, err
	}
	if err := CheckVectorQuery(q.Vector); err != nil {
		return nil, err
	}
	f := q.Filter.Normalize()
	qn := norm(q.Vector)
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	t := m.tenants[q.Tenant]
	if t == nil || qn == 0 {
		return nil, nil
	}
	top := NewTopK(q.Limit)
	for _, e := range t.slots {
		if e == nil || len(e.doc.Embedding) != len(q.Vector) || e.norm == 0 {
			continue
		}
		s := dot(q.Vector, e.doc.Embedding) / (qn * e.norm)
		if !top.Admits(s, e.doc.ID) || !f.Match(&e.doc) {
			continue
		}
		top.Push(Match{ID: e.doc.ID, Group: e.doc.Group, Seq: e.doc.Seq, Score: s})
	}
	return top.Sorted(), nil
}

// Around implements Backend.
func (m *Memory) Around(ctx context.Context, tenant, group string, from, to int64) ([]Doc, error) {
	if err := CheckTenant(tenant); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	t := m.tenants[tenant]
	if t == nil || group == "" {
		return nil, nil
	}
	var out []Doc
	for slot := range t.groups[group] {
		if d := &t.slots[slot].doc; d.Seq >= from && d.Seq <= to {
			out = append(out, d.Clone())
		}
	}
	sortBySeq(out)
	return out, nil
}

// sortBySeq orders documents by Seq, then ID.
func sortBySeq(docs []Doc) {
	slices.SortFunc(docs, func(a, b Doc) int {
		if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// Stale implements EmbeddingStore.
func (m *Memory) Stale(ctx context.Context, tenant, model, after string, limit int) ([]Doc, error) {
	if err := CheckTenant(tenant); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, invalid("limit", "must be at least 1, got %d", limit)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	out := m.tenants[tenant].page(after, limit, func(d *Doc) bool { return d.EmbeddingModel != model })
	for i := range out {
		out[i].Embedding = nil
	}
	return out, nil
}

// Scan implements Scanner.
func (m *Memory) Scan(ctx context.Context, tenant string, f Filter, after string, limit int) ([]Doc, error) {
	if err := CheckQuery(tenant, f, limit); err != nil {
		return nil, err
	}
	f = f.Normalize()
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	return m.tenants[tenant].page(after, limit, f.Match), nil
}

// page returns copies of the first limit documents of t, in ID order,
// whose IDs sort after after and that match; nil for a nil t.
func (t *memTenant) page(after string, limit int, match func(*Doc) bool) []Doc {
	if t == nil {
		return nil
	}
	var ids []string
	for id, slot := range t.ids {
		if id > after && match(&t.slots[slot].doc) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = ids[:min(limit, len(ids))]
	out := make([]Doc, 0, len(ids))
	for _, id := range ids {
		out = append(out, t.slots[t.ids[id]].doc.Clone())
	}
	return out
}

// SetEmbeddings implements EmbeddingStore.
func (m *Memory) SetEmbeddings(ctx context.Context, tenant string, updates []EmbeddingUpdate) (int, error) {
	if err := CheckUpdates(tenant, updates); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return 0, err
	}
	t := m.tenants[tenant]
	if t == nil {
		return 0, nil
	}
	n := 0
	for _, u := range updates {
		slot, ok := t.ids[u.ID]
		if !ok || t.slots[slot].doc.Text != u.Text {
			continue
		}
		// Replace the entry, not its fields: readers may hold copies.
		e := *t.slots[slot]
		e.doc.Embedding = slices.Clone(u.Vector)
		e.doc.EmbeddingModel = u.Model
		e.norm = norm(u.Vector)
		t.slots[slot] = &e
		n++
	}
	return n, nil
}

// DocFreqs implements LexicalSearcher.
func (m *Memory) DocFreqs(ctx context.Context, tenant string, terms []string) (DocStats, error) {
	if err := CheckTenant(tenant); err != nil {
		return DocStats{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return DocStats{}, err
	}
	st := DocStats{DF: map[string]int64{}}
	t := m.tenants[tenant]
	if t == nil {
		return st, nil
	}
	st.Docs = int64(len(t.ids))
	for _, term := range terms {
		if n := t.df[term]; n > 0 {
			st.DF[term] = int64(n)
		}
	}
	return st, nil
}

// Tenants implements Backend.
func (m *Memory) Tenants(ctx context.Context) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(m.tenants))
	for t := range m.tenants {
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}

// Close implements Backend: the documents are dropped and later calls fail
// with ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.tenants = nil
	return nil
}

func norm(v []float32) float64 { return math.Sqrt(dot(v, v)) }

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
