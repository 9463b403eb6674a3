package recall

import (
	"maps"
	"math"
	"sort"
	"sync"
)

// Doc is a document of the index.
type Doc struct {
	// ID names the document; upserting an ID again replaces it.
	ID string
	// Text is what is indexed and searched.
	Text string
	// Metadata are the document's attributes, matched by search filters.
	Metadata map[string]string
}

// Hit is a search result.
type Hit struct {
	// ID is the document's ID.
	ID string
	// Score is the document's BM25 score for the query; higher is better.
	Score float64
	// Doc is the document.
	Doc Doc
}

// Default BM25 parameters.
const (
	DefaultK1 = 1.2
	DefaultB  = 0.75
)

// Config sets up an Index. Its zero value is the default.
type Config struct {
	// K1 is BM25's term frequency saturation; 0 means DefaultK1.
	K1 float64
	// B is BM25's document length normalization, in [0, 1]; a negative
	// value means 0 and 0 means DefaultB.
	B float64
}

// Index is an in-memory lexical index ranked by BM25. Its methods are
// safe for concurrent use.
type Index struct {
	k1, b float64

	mu       sync.RWMutex
	docs     map[string]*entry
	postings map[string]map[string]int // term -> doc ID -> frequency
	totalLen int
}

// entry is an indexed document.
type entry struct {
	doc    Doc
	tf     map[string]int
	length int
}

// NewIndex returns an empty index.
func NewIndex(cfg Config) *Index {
	ix := &Index{k1: cfg.K1, b: cfg.B, docs: map[string]*entry{}, postings: map[string]map[string]int{}}
	if ix.k1 <= 0 {
		ix.k1 = DefaultK1
	}
	switch {
	case ix.b < 0:
		ix.b = 0
	case ix.b == 0:
		ix.b = DefaultB
	case ix.b > 1:
		ix.b = 1
	}
	return ix
}

// Upsert adds doc, or replaces the document with its ID. The index keeps a
// copy of the metadata.
func (ix *Index) Upsert(doc Doc) {
	doc.Metadata = maps.Clone(doc.Metadata)
	terms := Tokenize(doc.Text)
	e := &entry{doc: doc, tf: make(map[string]int, len(terms)), length: len(terms)}
	for _, t := range terms {
		e.tf[t]++
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.remove(doc.ID)
	ix.docs[doc.ID] = e
	ix.totalLen += e.length
	for t, n := range e.tf {
		p := ix.postings[t]
		if p == nil {
			p = map[string]int{}
			ix.postings[t] = p
		}
		p[doc.ID] = n
	}
}

// Delete removes the document with the ID, if there is one, and reports
// whether there was.
func (ix *Index) Delete(id string) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.remove(id)
}

// remove deletes a document; the caller holds the write lock.
func (ix *Index) remove(id string) bool {
	e, ok := ix.docs[id]
	if !ok {
		return false
	}
	for t := range e.tf {
		p := ix.postings[t]
		delete(p, id)
		if len(p) == 0 {
			delete(ix.postings, t)
		}
	}
	ix.totalLen -= e.length
	delete(ix.docs, id)
	return true
}

// Get returns the document with the ID, and whether there is one.
func (ix *Index) Get(id string) (Doc, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	e, ok := ix.docs[id]
	if !ok {
		return Doc{}, false
	}
	return copyDoc(e.doc), true
}

// Len returns the number of documents.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.docs)
}

// Search returns the k documents that best match the query by BM25, best
// first (ties by ID), among the documents whose metadata hold every
// key-value pair of filter (a nil filter matches all). Only documents that
// share at least one term with the query are returned.
func (ix *Index) Search(query string, k int, filter map[string]string) []Hit {
	if k <= 0 {
		return nil
	}
	qterms := map[string]bool{}
	for _, t := range Tokenize(query) {
		qterms[t] = true
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := float64(len(ix.docs))
	if n == 0 {
		return nil
	}
	avgLen := float64(ix.totalLen) / n
	if avgLen == 0 {
		avgLen = 1
	}
	scores := map[string]float64{}
	for t := range qterms {
		p := ix.postings[t]
		if len(p) == 0 {
			continue
		}
		df := float64(len(p))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for id, f := range p {
			tf := float64(f)
			norm := ix.k1 * (1 - ix.b + ix.b*float64(ix.docs[id].length)/avgLen)
			scores[id] += idf * tf * (ix.k1 + 1) / (tf + norm)
		}
	}
	hits := make([]Hit, 0, len(scores))
	for id, s := range scores {
		e := ix.docs[id]
		if !matches(e.doc.Metadata, filter) {
			continue
		}
		hits = append(hits, Hit{ID: id, Score: s, Doc: e.doc})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	for i := range hits {
		hits[i].Doc = copyDoc(hits[i].Doc)
	}
	return hits
}

// matches reports whether meta holds every pair of filter.
func matches(meta, filter map[string]string) bool {
	for k, v := range filter {
		if got, ok := meta[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func copyDoc(d Doc) Doc {
	d.Metadata = maps.Clone(d.Metadata)
	return d
}
