package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/recall/recalltest"
)

// BenchmarkSearch measures a k=10 search over 10,000 synthetic turns in
// one tenant (recalltest.BenchSearch), the lexical path's figures beside
// the SQLite backend's. Run it with
//
//	scripts/pg-start.sh go test -run '^$' -bench Search -benchtime 200x ./recall/postgres/
func BenchmarkSearch(b *testing.B) {
	backend := benchBackend(b)
	recalltest.BenchSearch(b, backend, 10_000)
}

// BenchmarkSearchScoped is BenchmarkSearch with each search scoped to
// one session of 20 turns (recalltest.BenchSearchScoped), over 10,000
// turns or the number AGENTMEM_BENCH_SEARCH_DOCS says.
//
//	scripts/pg-start.sh go test -run '^$' -bench SearchScoped -benchtime 200x ./recall/postgres/
func BenchmarkSearchScoped(b *testing.B) {
	recalltest.BenchSearchScoped(b, benchBackend(b), benchSearchDocs(10_000))
}

// BenchmarkSearchScopedLong is BenchmarkSearchScoped over 5,000 turns of
// 200 to 400 words (recalltest.BenchSearchScopedLong), as an agent's
// steps with tool output are, or the number AGENTMEM_BENCH_SEARCH_DOCS
// says.
//
//	scripts/pg-start.sh go test -run '^$' -bench SearchScopedLong -benchtime 200x ./recall/postgres/
func BenchmarkSearchScopedLong(b *testing.B) {
	recalltest.BenchSearchScopedLong(b, benchBackend(b), benchSearchDocs(5_000))
}

// benchSearchDocs is the number of turns AGENTMEM_BENCH_SEARCH_DOCS says,
// or else n.
func benchSearchDocs(n int) int {
	if v, err := strconv.Atoi(os.Getenv("AGENTMEM_BENCH_SEARCH_DOCS")); err == nil && v > 0 {
		return v
	}
	return n
}

// BenchmarkUpsert measures indexing one turn at a time into a tenant
// that holds 10,000, by 1 and 16 writers (recalltest.BenchUpsert).
func BenchmarkUpsert(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			recalltest.BenchUpsert(b, benchBackend(b), 10_000, writers)
		})
	}
}

// BenchmarkUpsertBatch measures Upsert of 256 turns at once, as the
// server's recallview.Follower indexes the log, into a tenant that holds
// 10,000 (recalltest.BenchUpsertBatch).
func BenchmarkUpsertBatch(b *testing.B) {
	recalltest.BenchUpsertBatch(b, benchBackend(b), 10_000, 256)
}

// BenchmarkUpsertBatchSearched is BenchmarkUpsertBatch after 256 scoped
// searches (recalltest.BenchUpsertBatchSearched): the batches then keep
// the rows of recall_df those searches gave their common terms.
func BenchmarkUpsertBatchSearched(b *testing.B) {
	backend := benchBackend(b)
	recalltest.BenchUpsertBatchSearched(b, backend, 10_000, 256)
	var rows int
	if err := backend.pool.QueryRow(context.Background(), `SELECT count(*) FROM recall_df`).Scan(&rows); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(rows), "df-rows")
}

// benchBackend opens a backend, without pgvector, in a fresh schema.
func benchBackend(b *testing.B) *Backend {
	url := testenv.PostgresURL(b)
	backend, err := Open(context.Background(), url, Options{Schema: testenv.FreshSchema(b, url), PGVector: PGVectorOff, MaxConns: 20, Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { backend.Close() })
	return backend
}

// BenchmarkVector measures Vector (limit 10, no filter) over 20,000
// documents of 256 dimensions (AGENTMEM_BENCH_VECTOR_DOCS sets another
// number), one tenant, on each search path: exact (in Go), pgvector (a
// sequential scan ranked in SQL) and pgvector-hnsw (the index, built
// before timing), reporting each search's latency percentiles too (p50-ms,
// p99-ms). The pgvector paths need the extension on the server and are
// skipped without it. Run it with
//
//	scripts/pg-start.sh go test -run '^$' -bench Vector -benchtime 50x ./recall/postgres/
//
// and on a Citus cluster with AGENTMEM_BENCH_CITUS=1 (under
// scripts/citus-start.sh).
func BenchmarkVector(b *testing.B) {
	const dims = 256
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("AGENTMEM_BENCH_VECTOR_DOCS")); err == nil && v > 0 {
		n = v
		hnswWait = max(hnswWait, time.Duration(n)*10*time.Millisecond) // 100,000: 17 minutes
	}
	var url string
	if os.Getenv("AGENTMEM_BENCH_CITUS") == "1" {
		url = testenv.CitusURL(b)
	} else {
		url = testenv.PostgresURL(b)
	}
	schema := testenv.FreshSchema(b, url)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	exact, err := Open(ctx, url, Options{Schema: schema, PGVector: PGVectorOff, Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	defer exact.Close()
	docs := make([]recall.Doc, 0, 500)
	for i := range n {
		docs = append(docs, recall.Doc{ID: fmt.Sprintf("d%05d", i), Tenant: "t", Text: fmt.Sprintf("document %d", i), Embedding: vec()})
		if len(docs) == cap(docs) {
			if err := exact.Upsert(ctx, docs...); err != nil {
				b.Fatal(err)
			}
			docs = docs[:0]
		}
	}
	queries := make([][]float32, 64)
	for i := range queries {
		queries[i] = vec()
	}
	run := func(b *testing.B, be *Backend) {
		b.ReportAllocs()
		var took []time.Duration
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			ms, err := be.Vector(ctx, recall.VectorQuery{Tenant: "t", Vector: queries[i%len(queries)], Limit: 10})
			took = append(took, time.Since(start))
			if err != nil || len(ms) != 10 {
				b.Fatalf("Vector: %d matches, %v", len(ms), err)
			}
		}
		b.StopTimer()
		slices.Sort(took)
		at := func(p float64) float64 {
			return float64(took[min(len(took)-1, int(p*float64(len(took))))].Microseconds()) / 1000
		}
		b.ReportMetric(at(0.50), "p50-ms")
		b.ReportMetric(at(0.99), "p99-ms")
	}
	b.Run("exact", func(b *testing.B) { run(b, exact) })
	for _, hnsw := range []bool{false, true} {
		name := VectorSearchPGVector
		if hnsw {
			name = VectorSearchHNSW
		}
		b.Run(name, func(b *testing.B) {
			if !pgvectorAvailable(b, url) {
				b.Skip("skipping: the PostgreSQL server has no pgvector")
			}
			be, err := Open(ctx, url, Options{Schema: schema, PGVector: PGVectorRequire, PGVectorHNSW: hnsw, Logger: quietLogger})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			if hnsw && waitHNSW(b, be, dims) != hnswReady {
				b.Fatal("the HNSW index could not be built")
			}
			if hnsw {
				checkHNSWPlan(b, be, "t", queries[0]) // the figures are the index's
			}
			run(b, be)
		})
	}
}
