package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// BenchStepSize is the JSON size of a benchmark step: an action step with
// one tool call and a result of about 2 KB, typical of an agent that reads
// files or runs commands.
const BenchStepSize = 2048

// BenchStep returns an action step of about size bytes of JSON, different
// for each seed.
func BenchStep(id string, seed, size int) *agentmem.ActionStep {
	var b strings.Builder
	for i := 0; b.Len() < size-300; i++ {
		fmt.Fprintf(&b, "line %d of the output of call %d: %x\n", i, seed, seed*7919+i)
	}
	call := fmt.Sprintf("call_%d", seed)
	return &agentmem.ActionStep{
		StepInfo:  agentmem.StepInfo{ID: id, Time: time.Date(2025, 1, 1, 0, 0, seed%60, 0, time.UTC)},
		Thought:   fmt.Sprintf("step %d: I should look at the file", seed),
		ToolCalls: []agentmem.ToolCall{{ID: call, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"src/file_%d.go"}`, seed)}},
		Results:   []agentmem.ToolResult{{CallID: call, Content: b.String()}},
		Usage:     &agentmem.Usage{InputTokens: 1000 + seed, OutputTokens: 50},
	}
}

// BenchAppend runs b.N durable appends of one BenchStep each, spread over
// writers goroutines with a session of its own each and ExpectedLastSeq
// set as a bound memory sets it, and reports appends/s and the p50 and
// p99 latency of one append. Every backend's BenchmarkAppend calls it, so
// the figures compare.
func BenchAppend(b *testing.B, st *store.Store, writers int) {
	ctx := context.Background()
	steps := make([][]agentmem.Step, writers)
	for w := range writers {
		if _, err := st.Create(ctx, store.CreateRequest{ID: fmt.Sprintf("bench-%d", w)}); err != nil {
			b.Fatal(err)
		}
		n := b.N/writers + 1
		steps[w] = make([]agentmem.Step, n)
		for i := range n {
			steps[w][i] = BenchStep(fmt.Sprintf("w%d-step-%d", w, i), i, BenchStepSize)
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
				last := int64(i)
				t0 := time.Now()
				_, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: steps[w][i : i+1], ExpectedLastSeq: &last})
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

// BenchLoad measures loading the working set (what a resumed run reads)
// of a session of the given number of BenchSteps: with no compaction all
// of them; when summarized, after a compaction that leaves a summary and
// the 10 newest steps.
func BenchLoad(b *testing.B, st *store.Store, steps int, summarized bool) {
	ctx := context.Background()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "long"}); err != nil {
		b.Fatal(err)
	}
	const batch = 500
	for i := 0; i < steps; i += batch {
		var ss []agentmem.Step
		for k := i; k < min(i+batch, steps); k++ {
			ss = append(ss, BenchStep(fmt.Sprintf("step-%d", k), k, BenchStepSize))
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

// BenchReadFeed measures reading a batch of the change feed with its
// entries, as a follower of the log (the recall index's) reads it: the
// appends of steps BenchSteps, spread over 16 sessions, read in one
// ReadFeed from the start. It reports the time and allocations of one
// read; divide by steps for a step's.
func BenchReadFeed(b *testing.B, st *store.Store, steps int) {
	ctx := context.Background()
	const sessions = 16
	for s := range sessions {
		if _, err := st.Create(ctx, store.CreateRequest{ID: fmt.Sprintf("feed-%d", s)}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range steps {
		id := fmt.Sprintf("feed-%d", i%sessions)
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: []agentmem.Step{BenchStep(fmt.Sprintf("step-%d", i), i, BenchStepSize)}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := st.ReadFeed(ctx, store.FeedRequest{Limit: steps + sessions})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, c := range resp.Changes {
			if c.Entry != nil {
				n++
			}
		}
		if n != steps {
			b.Fatalf("read %d entries, want %d", n, steps)
		}
	}
}
