package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/store/sqlite"
)

// benchSession creates a session of 1,000 steps (a system prompt, a task
// and 998 tool-calling actions of a few hundred tokens each) in st.
func benchSession(b *testing.B, h http.Handler, id string) {
	b.Helper()
	do := func(method, path, body string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 300 {
			b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
	}
	do("POST", "/v1/sessions", `{"id":"`+id+`"}`)
	do("POST", "/v1/sessions/"+id+"/steps", "["+sysStep+","+taskStep+"]")
	for batch := 0; batch < 998; batch += 100 {
		var steps []string
		for i := batch; i < min(batch+100, 998); i++ {
			result := strings.Repeat(fmt.Sprintf("func f%d(x int) int { return x * %d } // line of file %d\n", i, i, i), 8)
			steps = append(steps, actionStep(i, result))
		}
		do("POST", "/v1/sessions/"+id+"/steps", "["+strings.Join(steps, ",")+"]")
	}
}

func benchServer(b *testing.B) *Server {
	noEncodeCheck(b)
	mem := memstore.New(memstore.Options{})
	srv, err := New(Config{Store: mem, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close(); mem.Close() })
	return srv
}

// noEncodeCheck turns off, for the benchmark, the tests' comparison of
// every response with encoding/json's encoding (encodeCheck): a benchmark
// measures the server, not the check.
func noEncodeCheck(b *testing.B) {
	saved := encodeCheck
	encodeCheck = nil
	b.Cleanup(func() { encodeCheck = saved })
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkContext measures GET /v1/sessions/{id}/context at budget 8,000
// on a 1,000-step session, through the whole handler (routing, the
// cache's store read, fitting, wire encoding, JSON), in process. The
// parallel variant uses every core (GOMAXPROCS) and reports requests per
// second and the p50/p99 latency of a request.
func BenchmarkContext(b *testing.B) {
	for _, format := range []string{"openai", "anthropic"} {
		srv := benchServer(b)
		benchSession(b, srv, "s")
		path := "/v1/sessions/s/context?budget=8000&format=" + format
		req := httptest.NewRequest("GET", path, nil)
		w := &discardWriter{h: http.Header{}}
		srv.ServeHTTP(w, req) // load the cache
		if w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := &discardWriter{h: http.Header{}}
				srv.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
				if w.code != 200 {
					b.Fatalf("status %d", w.code)
				}
			}
		})
		b.Run(format+"/parallel", func(b *testing.B) {
			var mu sync.Mutex
			var lat []time.Duration
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					t0 := time.Now()
					w := &discardWriter{h: http.Header{}}
					srv.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
					mine = append(mine, time.Since(t0))
					if w.code != 200 {
						b.Errorf("status %d", w.code)
						return
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			elapsed := time.Since(start)
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			}
		})
	}
}

// BenchmarkContextAfterAppend measures the agent loop's pattern: append
// one step, then read the context, on a 1,000-step session. The cache
// adds the new step and counts only it.
func BenchmarkContextAfterAppend(b *testing.B) {
	srv := benchServer(b)
	benchSession(b, srv, "s")
	w := &discardWriter{h: http.Header{}}
	srv.ServeHTTP(w, httptest.NewRequest("GET", "/v1/sessions/s/context?budget=8000", nil))
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		req := httptest.NewRequest("POST", "/v1/sessions/s/steps", strings.NewReader(actionStep(10000+i, "a short result")))
		req.Header.Set("Content-Type", "application/json")
		w := &discardWriter{h: http.Header{}}
		srv.ServeHTTP(w, req)
		if w.code != 201 {
			b.Fatalf("append: %d", w.code)
		}
		w = &discardWriter{h: http.Header{}}
		srv.ServeHTTP(w, httptest.NewRequest("GET", "/v1/sessions/s/context?budget=8000", nil))
		if w.code != 200 {
			b.Fatalf("context: %d", w.code)
		}
	}
}

// BenchmarkContextManySessions measures the memory the context cache
// holds under context reads (budget 8,000) spread over more sessions than
// it keeps: 16 sessions of 600 realistic steps (a few hundred characters
// of reasoning, a tool call and a result of log-normal length around
// 1,500 characters: about 2 MB of JSON per session) in SQLite, read in
// turn, under cache bounds from smaller than one session to larger than
// all. Besides the time per context it reports the cache's accounted
// size (cache-MB), the heap in use after a collection at the end
// (heap-MB: the cache and everything else live, the tokenizers'
// vocabularies included) and the share of requests that loaded their
// session from the store (loads/op).
func BenchmarkContextManySessions(b *testing.B) {
	const sessions, steps = 16, 600
	ctx := context.Background()
	st, err := sqlite.Open(ctx, b.TempDir()+"/many.db", sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	r := rand.New(rand.NewPCG(7, 11))
	words := strings.Fields(`the a of to in and or for with on file function module package request response
		error value result config service handler client server cache index query record field schema table user
		agent memory token budget context message history step tool call output returns raises expects missing
		invalid timeout retry connection database repository branch commit build test failure passed failed`)
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteString([]string{" ", " ", " ", " ", "\n"}[r.IntN(5)])
		}
		return sb.String()[:n]
	}
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		if _, err := st.Create(ctx, store.CreateRequest{ID: id}); err != nil {
			b.Fatal(err)
		}
		batch := []agentmem.Step{
			&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{ID: id + "-sys"}, Content: text(2000)},
			&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: id + "-task"}, Task: text(300)},
		}
		for j := range steps - 2 {
			call := fmt.Sprintf("call_%d_%d", i, j)
			result := int(min(9500, max(80, math.Exp(r.NormFloat64()*0.75+math.Log(1500)))))
			batch = append(batch, &agentmem.ActionStep{
				StepInfo:    agentmem.StepInfo{ID: fmt.Sprintf("%s-%d", id, j)},
				ModelOutput: text(200 + r.IntN(300)),
				ToolCalls:   []agentmem.ToolCall{{ID: call, Name: "read_file", Arguments: `{"path":"src/` + words[r.IntN(len(words))] + `.go"}`}},
				Results:     []agentmem.ToolResult{{CallID: call, Content: text(result)}},
			})
		}
		for len(batch) > 0 {
			k := min(len(batch), 200)
			if _, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: batch[:k]}); err != nil {
				b.Fatal(err)
			}
			batch = batch[k:]
		}
	}
	for _, bound := range []int64{1 << 20, 8 << 20, 32 << 20, 1 << 30} {
		b.Run(fmt.Sprintf("cache=%dMiB", bound>>20), func(b *testing.B) {
			lc := &loadCounter{Driver: st}
			srv, err := New(Config{Store: store.New(lc), CacheBytes: bound, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			read := func(i int) {
				w := &discardWriter{h: http.Header{}}
				srv.ServeHTTP(w, httptest.NewRequest("GET", fmt.Sprintf("/v1/sessions/s%d/context?budget=8000", i%sessions), nil))
				if w.code != 200 {
					b.Fatalf("status %d", w.code)
				}
			}
			for i := range sessions {
				read(i) // every session once, so that a large cache holds them all
			}
			loads := lc.loads.Load()
			i := 0
			for b.Loop() {
				read(i)
				i++
			}
			b.ReportMetric(float64(lc.loads.Load()-loads)/float64(i), "loads/op")
			b.ReportMetric(float64(srv.svc.CacheStats().Bytes)/(1<<20), "cache-MB")
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
		})
	}
}

// loadCounter counts the working-set reads of a store: the cache's loads.
type loadCounter struct {
	store.Driver
	loads atomic.Int64
}

func (c *loadCounter) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	if req.WorkingSet {
		c.loads.Add(1)
	}
	return c.Driver.Read(ctx, req)
}

// BenchmarkAppend measures POST /v1/sessions/{id}/steps of one action step
// (a tool call and a result of about 500 bytes, as an agent loop sends)
// to a 1,000-step session in memory, through the whole handler: with an
// Idempotency-Key, as agentmem-bench load sends it (the request's
// fingerprint included), and without.
func BenchmarkAppend(b *testing.B) {
	for _, keyed := range []bool{true, false} {
		name := "key"
		if !keyed {
			name = "no_key"
		}
		b.Run(name, func(b *testing.B) {
			srv := benchServer(b)
			benchSession(b, srv, "s")
			result := strings.Repeat("func f(x int) int { return x * 2 } // a line of the file\n", 9)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				i++
				req := httptest.NewRequest("POST", "/v1/sessions/s/steps", strings.NewReader(actionStep(10000+i, result)))
				req.Header.Set("Content-Type", "application/json")
				if keyed {
					req.Header.Set("Idempotency-Key", "turn-"+itoa(i))
				}
				w := &discardWriter{h: http.Header{}}
				srv.ServeHTTP(w, req)
				if w.code != 201 {
					b.Fatalf("append: %d", w.code)
				}
			}
		})
	}
}
