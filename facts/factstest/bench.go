package factstest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/facts"
)

// benchUserFacts is how many facts each user of the benchmarks has: an
// Update reads them all, so it is kept fixed whatever b.N is.
const benchUserFacts = 16

// benchFact is the fact k of a user, embedded and with metadata, as
// extraction writes them.
func benchFact(user string, k int, at time.Time) facts.Fact {
	vec := make([]float32, 64)
	for i := range vec {
		vec[i] = float32((k+i)%7) / 7
	}
	return facts.Fact{
		ID: fmt.Sprintf("%s-f%d", user, k), UserID: user, Text: fmt.Sprintf("Fact number %d about %s.", k, user),
		Confidence: 0.8, CreatedAt: at, ReinforcedAt: at, ValidFrom: at, Source: facts.Source{SessionID: "s1", StepSeq: int64(k), Agent: "bench"},
		Metadata: map[string]string{"topic": "bench"}, Embedding: vec,
	}
}

// Bench runs the facts store benchmarks on stores that open returns (a
// new, empty one each; Bench closes them):
//
//   - Update/writers=N: N goroutines per CPU each replace one of the facts
//     of a user of their own (benchUserFacts facts each, all read by the
//     Update) and append an audit entry, as a reinforcement or a
//     supersession does;
//   - Facts: the read of a user's facts that every search and injection
//     makes, for a user with benchUserFacts facts.
func Bench(b *testing.B, open func(b *testing.B) facts.Store) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("Update/writers=%d", writers), func(b *testing.B) {
			st := open(b)
			defer st.Close()
			benchUpdate(b, st, writers)
		})
	}
	b.Run("Facts", func(b *testing.B) {
		st := open(b)
		defer st.Close()
		benchFacts(b, st)
	})
}

func benchUpdate(b *testing.B, st facts.Store, writers int) {
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var next atomic.Int64
	b.SetParallelism(writers)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		user := fmt.Sprintf("user-%d", next.Add(1))
		for k := 0; pb.Next(); k++ {
			f := benchFact(user, k%benchUserFacts, at)
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

func benchFacts(b *testing.B, st facts.Store) {
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var put []facts.Fact
	for k := range benchUserFacts {
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
			if err != nil || len(fs) != benchUserFacts {
				b.Errorf("facts: %d, %v", len(fs), err)
				return
			}
		}
	})
}
