package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/store/memstore"
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
	mem := memstore.New(memstore.Options{})
	srv, err := New(Config{Store: mem, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close(); mem.Close() })
	return srv
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
