// Package recalltest is the conformance suite every recall.Backend runs,
// so that the in-memory, SQLite and PostgreSQL backends cannot drift
// apart. A backend's test calls Run once:
//
//	func TestConformance(t *testing.T) {
//		recalltest.Run(t, recalltest.Config{
//			New: func(t *testing.T) recall.Backend {
//				b, err := mybackend.Open(...)
//				if err != nil {
//					t.Fatal(err)
//				}
//				return b
//			},
//		})
//	}
//
// Each subtest gets a new, empty backend. Subtests are grouped by
// behaviour (Docs, Tenants, Filters, Ranking, TFIDF, Neighbours, Vectors, Hybrid,
// Reembed, BadInput, Concurrency, Close, Reopen, Damaged, Batch, Scan), so one can be
// run alone with go test -run 'Conformance/Ranking'. Embeddings come from a real
// llm.Client talking to a local httptest server (see
// EmbeddingServer).
package recalltest

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/recall"
)

// Config describes the backend under test.
type Config struct {
	// New returns a new, empty backend, isolated from those of other
	// subtests. The suite closes it when the subtest ends.
	New func(t *testing.T) recall.Backend
	// Reopen, when set, closes b and returns a backend over the same data,
	// as a restarted process would; the suite then checks that documents,
	// embeddings and the lexical index survive.
	Reopen func(t *testing.T, b recall.Backend) recall.Backend
	// Goroutines sizes the concurrency test; 0 means 8.
	Goroutines int
	// Damage, when set, damages the stored document tenant/id in b so
	// that it does not decode (its metadata not an object of strings), as
	// a row changed by hand or by a faulty disk would be. The suite then
	// checks what the backend does with a damaged document (the Damaged
	// tests); a backend that cannot hold one (the in-memory one) leaves
	// it nil.
	Damage func(t *testing.T, b recall.Backend, tenant, id string)
}

// Run runs the conformance suite against the backend cfg describes.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.New == nil {
		t.Fatal("recalltest: Config.New is required")
	}
	if cfg.Goroutines <= 0 {
		cfg.Goroutines = 8
	}
	s := &suite{cfg: cfg}
	groups := []struct {
		name  string
		tests []test
	}{
		{"Docs", s.docTests()},
		{"Tenants", s.tenantTests()},
		{"Filters", s.filterTests()},
		{"Ranking", s.rankingTests()},
		{"TFIDF", s.tfidfTests()},
		{"Neighbours", s.neighbourTests()},
		{"Vectors", s.vectorTests()},
		{"Hybrid", s.hybridTests()},
		{"Reembed", s.reembedTests()},
		{"BadInput", s.badInputTests()},
		{"Concurrency", s.concurrencyTests()},
		{"Close", s.closeTests()},
		{"Reopen", s.reopenTests()},
		{"Damaged", s.damagedTests()},
		{"Batch", s.batchTests()},
		{"Scan", s.scanTests()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, tc.fn)
			}
		})
	}
}

type suite struct{ cfg Config }

type test struct {
	name string
	fn   func(t *testing.T)
}

// backend returns a new backend, closed when the test ends.
func (s *suite) backend(t *testing.T) recall.Backend {
	t.Helper()
	b := s.cfg.New(t)
	t.Cleanup(func() { b.Close() })
	return b
}

var bg = context.Background()
