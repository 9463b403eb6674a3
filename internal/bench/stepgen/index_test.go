package stepgen_test

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/bench/stepgen"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/recall"
	rpostgres "github.com/agentmem/agentmem/recall/postgres"
	rsqlite "github.com/agentmem/agentmem/recall/sqlite"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views/recallview"
)

// BenchmarkIndexTurns measures what the recall index's follower does for
// every append under load: the documents of `agentmem-bench load`'s
// realistic action steps (tool calls, results with paths, IDs and
// tracebacks), 16 sessions in turn, upserted into an index in batches of
// 512, as the follower writes a batch of the feed: a SQLite index, and a
// PostgreSQL one when AGENTMEM_TEST_POSTGRES_URL names a database (see
// docs/testing.md). Each iteration indexes one batch into an index that
// already holds the earlier ones; docs/s is the index's throughput (on
// PostgreSQL the server's work included, on the same machine).
func BenchmarkIndexTurns(b *testing.B) {
	b.Run("backend=sqlite", func(b *testing.B) {
		backend, err := rsqlite.Open(context.Background(), filepath.Join(b.TempDir(), "recall.db"), rsqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer backend.Close()
		benchIndexTurns(b, backend)
	})
	b.Run("backend=postgres", func(b *testing.B) {
		url := testenv.PostgresURL(b)
		backend, err := rpostgres.Open(context.Background(), url, rpostgres.Options{Schema: testenv.FreshSchema(b, url), PGVector: rpostgres.PGVectorOff})
		if err != nil {
			b.Fatal(err)
		}
		defer backend.Close()
		benchIndexTurns(b, backend)
	})
}

func benchIndexTurns(b *testing.B, backend recall.Backend) {
	ctx := context.Background()
	ix := recall.New(backend, recall.Options{})
	g := stepgen.New(7)
	const batch = 512
	now := time.Now()
	turn := 0
	next := func() []recall.Doc {
		docs := make([]recall.Doc, 0, batch)
		for len(docs) < batch {
			sess := &store.Session{ID: fmt.Sprintf("s%d", turn%16), Tenant: "default"}
			docs = append(docs, recallview.StepDocs(sess, store.Entry{Seq: int64(turn/16 + 1), Kind: store.StepEntry, Step: g.Action(g.CallID()), Time: now})...)
			turn++
		}
		return docs
	}
	for range 4 { // an index that is not empty
		if err := ix.Upsert(ctx, next()...); err != nil {
			b.Fatal(err)
		}
	}
	var indexed int
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		docs := next()
		b.StartTimer()
		t0 := time.Now()
		if err := ix.Upsert(ctx, docs...); err != nil {
			b.Fatal(err)
		}
		took += time.Since(t0)
		indexed += len(docs)
	}
	b.ReportMetric(float64(indexed)/took.Seconds(), "docs/s")
	b.ReportMetric(float64(took.Microseconds())/float64(indexed), "µs/doc")
}

// BenchmarkIndexBatchSize measures what a turn costs the SQLite index by
// the size of the batches it comes in: the follower's batches are the
// changes that gathered while it settled (recallview.DefaultSettle).
// Each iteration indexes 2,048 turns, in batches of the size, into an
// index that holds 4,096; cpu-µs/turn is the process's CPU time (user and
// system: the commits' writes count) a turn.
func BenchmarkIndexBatchSize(b *testing.B) {
	for _, batch := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			backend, err := rsqlite.Open(context.Background(), filepath.Join(b.TempDir(), "recall.db"), rsqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer backend.Close()
			ctx := context.Background()
			ix := recall.New(backend, recall.Options{})
			g := stepgen.New(7)
			now := time.Now()
			turn := 0
			next := func(n int) []recall.Doc {
				docs := make([]recall.Doc, 0, n)
				for len(docs) < n {
					sess := &store.Session{ID: fmt.Sprintf("s%d", turn%16), Tenant: "default"}
					docs = append(docs, recallview.StepDocs(sess, store.Entry{Seq: int64(turn/16 + 1), Kind: store.StepEntry, Step: g.Action(g.CallID()), Time: now})...)
					turn++
				}
				return docs
			}
			for range 8 {
				if err := ix.Upsert(ctx, next(512)...); err != nil {
					b.Fatal(err)
				}
			}
			const turns = 2048
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				batches := make([][]recall.Doc, turns/batch)
				for i := range batches {
					batches[i] = next(batch)
				}
				b.StartTimer()
				c0 := processCPU()
				for _, docs := range batches {
					if err := ix.Upsert(ctx, docs...); err != nil {
						b.Fatal(err)
					}
				}
				cpu += processCPU() - c0
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*turns), "cpu-µs/turn")
		})
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
