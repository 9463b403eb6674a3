package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/postgres"
	"github.com/agentmem/agentmem/store/sqlite"
)

// BenchmarkToolResult measures a tool result sent on its own into a long
// session, as the OpenAI Agents SDK and LangChain histories send them:
// each op appends an assistant message with a tool call (left pending)
// in one request and, in a second request, its result; only the second
// is timed. It runs on sessions of 10 and 10,000 steps, through the
// messages route and the items route, on SQLite and, when
// AGENTMEM_TEST_POSTGRES_URL is set, on PostgreSQL. The sessions'
// earlier actions were sent whole (history=whole) or, as such clients
// build them, each call and then its result (history=amended: an
// amendment entry for every action). Besides the mean (ns/op) it
// reports the median (p50-ms) and the 90th percentile (p90-ms) of the
// tool-result requests; run it with -benchtime=20x for the median over
// 20.
func BenchmarkToolResult(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run("store="+backend, func(b *testing.B) {
			for _, route := range []string{"messages", "items"} {
				b.Run("route="+route, func(b *testing.B) {
					for _, history := range []string{"whole", "amended"} {
						b.Run("history="+history, func(b *testing.B) {
							for _, n := range []int{10, 10_000} {
								b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
									benchToolResult(b, openBenchStore(b, backend), route, history == "amended", n)
								})
							}
						})
					}
				})
			}
		})
	}
}

// openBenchStore opens an empty store of a backend for a benchmark.
func openBenchStore(b *testing.B, backend string) *store.Store {
	b.Helper()
	ctx := context.Background()
	var st *store.Store
	var err error
	switch backend {
	case "sqlite":
		st, err = sqlite.Open(ctx, b.TempDir()+"/bench.db", sqlite.Options{})
	case "postgres":
		url := os.Getenv(testenv.PostgresURLEnv)
		if url == "" {
			b.Skipf("%s is not set (scripts/pg-start.sh go test ... starts a throwaway server)", testenv.PostgresURLEnv)
		}
		st, err = postgres.Open(ctx, url, postgres.Options{Schema: testenv.FreshSchema(b, url)})
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// benchToolResult runs BenchmarkToolResult's ops on a session of n
// steps (a system prompt, a task and completed tool-calling actions,
// each completed by an amendment entry when amended) in st, through
// route ("messages" or "items"). The session is imported whole
// (store.Importer), so that setting it up costs the same whatever the
// appends cost.
func benchToolResult(b *testing.B, st *store.Store, route string, amended bool, n int) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var entries []store.Entry
	add := func(s agentmem.Step) int64 {
		seq := int64(len(entries) + 1)
		info := s.Info()
		info.Number, info.Time = int(seq), at
		entries = append(entries, store.Entry{Seq: seq, Kind: store.StepEntry, Step: agentmem.WithInfo(s, info), Time: at})
		return seq
	}
	add(&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{ID: "sys"}, Content: "You are a coding agent."})
	add(&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "task"}, Task: "Find the failing test and fix it."})
	for i := range n - 2 {
		call := fmt.Sprintf("setup-%d", i)
		a := &agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: "a-" + call},
			ModelOutput: "Reading the next file.",
			ToolCalls:   []agentmem.ToolCall{{ID: call, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"pkg/f%d.go"}`, i)}}}
		result := agentmem.ToolResult{CallID: call, Content: strings.Repeat(fmt.Sprintf("func f%d(x int) int { return x * %d }\n", i, i), 6)}
		if !amended {
			a.Results = []agentmem.ToolResult{result}
			add(a)
			continue
		}
		done := agentmem.CloneStep(a).(*agentmem.ActionStep)
		done.Number, done.Time, done.Results = int(add(a)), at, []agentmem.ToolResult{result}
		entries = append(entries, store.Entry{Seq: int64(len(entries) + 1), Kind: store.CompactionEntry, Time: at,
			Compaction: &store.CompactionRecord{Amend: true, Replaced: []agentmem.Step{done}}})
	}
	sess := &store.Session{ID: "s", Retention: store.Persistent, CreatedAt: at, UpdatedAt: at, LastSeq: int64(len(entries))}
	if err := st.ImportEntries(ctx, sess, entries); err != nil {
		b.Fatal(err)
	}
	srv, err := New(Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	post := func(body string) {
		path := "/v1/sessions/s/messages"
		if route == "items" {
			path = "/v1/sessions/s/items"
			body = `{"items":[` + body + `]}`
		}
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != 201 {
			b.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	call := func(id string) string {
		if route == "items" {
			return `{"type":"function_call","call_id":"` + id + `","name":"run_tests","arguments":"{}"}`
		}
		return `{"role":"assistant","content":"Running the tests.","tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"run_tests","arguments":"{}"}}]}`
	}
	result := func(id string) string {
		out := "ok  github.com/example/pkg 0.012s"
		if route == "items" {
			return `{"type":"function_call_output","call_id":"` + id + `","output":"` + out + `"}`
		}
		return `{"role":"tool","tool_call_id":"` + id + `","content":"` + out + `"}`
	}
	// Two ops first, untimed: the first loads the session into the
	// server's cache; during the second, SQLite's allocator gives back
	// what reading the session took (once, a fifth of a second at
	// 10,000 steps).
	for _, id := range []string{"warm-1", "warm-2"} {
		post(call(id))
		post(result(id))
	}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		id := fmt.Sprintf("op-%d", i)
		i++
		post(call(id))
		b.StartTimer()
		t0 := time.Now()
		post(result(id))
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*9/10]), "p90-ms")
}
