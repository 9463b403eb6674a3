package sqlite

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// benchStepSize is the JSON size of a benchmark step: an action step with
// one tool call and a result of about 2 KB, typical of an agent that reads
// files or runs commands.
const benchStepSize = 2048

// BenchmarkAppend measures durable appends (synchronous=FULL: each one is
// fsynced before Append returns) of one ~2 KB action step each.
func BenchmarkAppend(b *testing.B) {
	b.Run("single", func(b *testing.B) { benchAppend(b, 1) })
	b.Run("sessions=16", func(b *testing.B) { benchAppend(b, 16) })
}

// benchAppend runs b.N appends spread over writers goroutines, each on a
// session of its own, and reports appends/s and the p50 and p99 latency
// of one append.
func benchAppend(b *testing.B, writers int) {
	ctx := context.Background()
	st, _ := openTemp(b, nil)
	steps := make([][]agentmem.Step, writers)
	for w := range writers {
		if _, err := st.Create(ctx, store.CreateRequest{ID: fmt.Sprintf("bench-%d", w)}); err != nil {
			b.Fatal(err)
		}
		n := b.N/writers + 1
		steps[w] = make([]agentmem.Step, n)
		for i := range n {
			steps[w][i] = actionStep(fmt.Sprintf("w%d-step-%d", w, i), i, benchStepSize)
		}
	}
	lat := make([][]time.Duration, writers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		n := b.N / writers
		if w < b.N%writers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("bench-%d", w)
			lat[w] = make([]time.Duration, 0, n)
			for i := range n {
				t0 := time.Now()
				_, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: steps[w][i : i+1], ExpectedLastSeq: ptr(int64(i))})
				lat[w] = append(lat[w], time.Since(t0))
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkLoad measures loading the working set (what a resumed run
// reads) of a 10,000-step session: with no compaction, all 10,000 steps;
// after a compaction that leaves a summary and the 10 newest steps, 11.
func BenchmarkLoad(b *testing.B) {
	const steps = 10000
	b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) { benchLoad(b, steps, false) })
	b.Run(fmt.Sprintf("steps=%d_summarized", steps), func(b *testing.B) { benchLoad(b, steps, true) })
}

func benchLoad(b *testing.B, steps int, summarized bool) {
	ctx := context.Background()
	st, _ := openTemp(b, nil)
	if _, err := st.Create(ctx, store.CreateRequest{ID: "long"}); err != nil {
		b.Fatal(err)
	}
	const batch = 500
	for i := 0; i < steps; i += batch {
		var ss []agentmem.Step
		for k := i; k < min(i+batch, steps); k++ {
			ss = append(ss, actionStep(fmt.Sprintf("step-%d", k), k, benchStepSize))
		}
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: "long", Steps: ss}); err != nil {
			b.Fatal(err)
		}
	}
	want := steps
	if summarized {
		sum := &agentmem.SummaryStep{StepInfo: agentmem.StepInfo{ID: "summary"}, Summary: "What happened in the first steps.",
			Covers: []agentmem.Range{{From: 1, To: steps - 10}}}
		working := []int64{store.NewStepRef(0)}
		for seq := steps - 9; seq <= steps; seq++ {
			working = append(working, int64(seq))
		}
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: "long", Steps: []agentmem.Step{sum},
			Compaction: &store.CompactionRecord{Working: working}}); err != nil {
			b.Fatal(err)
		}
		want = 11
	}
	b.ResetTimer()
	for b.Loop() {
		rr, err := st.Read(ctx, store.ReadRequest{SessionID: "long", WorkingSet: true})
		if err != nil {
			b.Fatal(err)
		}
		if len(rr.Steps) != want {
			b.Fatalf("working set has %d steps, want %d", len(rr.Steps), want)
		}
	}
}
