package factstest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/facts"
)

// benchFacts is how many facts each user of the benchmarks has: an
// Update reads them all, so it is kept fixed whatever b.N is.
const benchFacts = 16

// benchFact is the fact k of a user, embedded and with metadata, as
// extraction writes them.
func benchFact(user string, k int, at time.Time) facts.Fact {
	vec := make([]float32, 64)
	for i := range vec {
		vec[i] = float32((k+i)%7) / 7
	}
	return facts.Fact{
		ID: fmt.Sprintf("%s-f%d", user, k), UserID: user, Text: fmt.Sprintf("Fact number %d about %s.", k, user),
		Confidence: 0.8, CreatedAt: at, ReinforcedAt: at, Source: facts.Source{SessionID: "s1", StepSeq: int64(k), Agent: "bench"},
		Metadata: map[string]string{"topic": "bench"}, Embedding: vec,
	}
}

// BenchUpdate measures Update: writers goroutines each replace one of
// the facts of a user of their own (benchFacts facts each, all read by
// the Update) and append an audit entry, as a reinforcement or a
// supersession does.
func BenchUpdate(b *testing.B, st facts.Store, writers int) {
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var next atomic.Int64
	b.SetParallelism(writers)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		user := fmt.Sprintf("user-%d", next.Add(1))
		for k := 0; pb.Next(); k++ {
			f := benchFact(user, k%benchFacts, at)
			err := st.Update(ctx, "", user, func(current []facts.Fact) (facts.Changes, error) {
				return facts.Changes{Put: []facts.Fact{f}, Audit: []facts.AuditEntry{{UserID: user, FactID: f.ID, Action: facts.ActionAdded, By: "bench", At: at}}}, nil
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchFacts measures Facts, the read of a user's facts that every
// search and injection makes, for a user with benchFacts facts.
func BenchFacts(b *testing.B, st facts.Store) {
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var put []facts.Fact
	for k := range benchFacts {
		put = append(put, benchFact("u", k, at))
	}
	if err := st.Update(ctx, "", "u", func([]facts.Fact) (facts.Changes, error) { return facts.Changes{Put: put}, nil }); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			fs, err := st.Facts(ctx, "", "u")
			if err != nil || len(fs) != benchFacts {
				b.Errorf("facts: %d, %v", len(fs), err)
				return
			}
		}
	})
}
