package server

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store/sqlite"
)

// metric returns the value of a sample of /metrics (0 when absent).
func (e *env) metric(sample string) float64 {
	e.t.Helper()
	body := string(e.must(200, "GET", "/metrics", nil).body)
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				e.t.Fatalf("metric %s: %q", sample, line)
			}
			return f
		}
	}
	return 0
}

// cacheEvents returns the count of a cache event.
func (e *env) cacheEvents(event string) int {
	return int(e.metric(`agentmem_session_cache_total{event="` + event + `"}`))
}

// checkCache checks the cache's books (sessions.Service.CheckCache) and
// that the gauges say what it holds.
func (e *env) checkCache() {
	e.t.Helper()
	gaugeBytes, gaugeSessions := e.metric("agentmem_session_cache_bytes"), e.metric("agentmem_session_cache_sessions")
	if err := e.srv.svc.CheckCache(); err != nil {
		e.t.Error(err)
	}
	st := e.srv.svc.CacheStats()
	if int64(gaugeBytes) != st.Bytes || int(gaugeSessions) != st.Sessions {
		e.t.Errorf("agentmem_session_cache_bytes %v and _sessions %v; the cache holds %d bytes in %d sessions", gaugeBytes, gaugeSessions, st.Bytes, st.Sessions)
	}
}

// cached reports whether a session's view is cached.
func (e *env) cached(id string) bool { return e.srv.svc.Cached("", id) }

// oneSessionSize returns what the cache accounts for a session of n
// steps made by env.session, read once in the default form.
func oneSessionSize(t *testing.T, n int) int64 {
	e := newEnv(t)
	e.session("probe", n)
	e.must(200, "GET", "/v1/sessions/probe/context", nil)
	if e.srv.svc.CacheStats().Sessions != 1 {
		t.Fatalf("the probe session is not cached")
	}
	return e.srv.svc.CacheStats().Bytes
}

// TestCacheBoundedInBytes fills the cache with sessions whose total size
// exceeds its bound: the least recently used go, the cache stays within
// the bound, and the evictions are counted.
func TestCacheBoundedInBytes(t *testing.T) {
	one := oneSessionSize(t, 30)
	bound := 3*one + one/2
	e := newEnv(t, func(c *Config) { c.CacheBytes = bound })
	for i := range 6 {
		id := fmt.Sprintf("s%d", i)
		e.session(id, 30)
		e.must(200, "GET", "/v1/sessions/"+id+"/context", nil)
		e.checkCache()
	}
	if n := e.srv.svc.CacheStats().Sessions; n != 3 {
		t.Errorf("the cache holds %d sessions of %d bytes under a bound of %d, want 3", n, one, bound)
	}
	if got := e.srv.svc.CacheStats().Bytes; got != 3*one {
		t.Errorf("the cache accounts %d bytes, want 3 × %d", got, one)
	}
	if n := e.cacheEvents("evict"); n != 3 {
		t.Errorf("%d evictions, want 3", n)
	}
	for i := range 6 {
		if want := i >= 3; e.cached(fmt.Sprintf("s%d", i)) != want {
			t.Errorf("s%d cached: %v, want %v (least recently used out)", i, !want, want)
		}
	}
	// Using s3 makes s4 the least recently used.
	e.must(200, "GET", "/v1/sessions/s3/context", nil)
	e.must(200, "GET", "/v1/sessions/s0/context", nil)
	if e.cached("s4") || !e.cached("s3") || !e.cached("s0") {
		t.Error("not the least recently used was evicted")
	}
	e.checkCache()
	// Requests for sessions that do not exist push nothing out.
	for i := range 10 {
		e.must(404, "GET", fmt.Sprintf("/v1/sessions/ghost%d/context", i), nil)
	}
	if n := e.srv.svc.CacheStats().Sessions; n != 3 {
		t.Errorf("cache holds %d sessions after 404s, want 3", n)
	}
	// A deleted session leaves the cache and its books.
	e.must(204, "DELETE", "/v1/sessions/s0", nil)
	if e.cached("s0") || e.srv.svc.CacheStats().Bytes != 2*one {
		t.Errorf("after a delete: cached %v, %d bytes", e.cached("s0"), e.srv.svc.CacheStats().Bytes)
	}
	e.checkCache()
	// The gauges are exported.
	m := string(e.must(200, "GET", "/metrics", nil).body)
	for _, want := range []string{
		fmt.Sprintf("agentmem_session_cache_bytes %d", 2*one),
		"agentmem_session_cache_sessions 2",
		`agentmem_session_cache_total{event="evict"} 4`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestCacheFormsAccounted checks that rendering a session in another
// format and tokenizer is accounted: the memory keeps those renderings.
func TestCacheFormsAccounted(t *testing.T) {
	e := newEnv(t)
	e.session("s", 30)
	e.must(200, "GET", "/v1/sessions/s/context", nil)
	base := e.srv.svc.CacheStats().Bytes
	e.must(200, "GET", "/v1/sessions/s/context?format=openai&tokenizer=o200k_base", nil)
	if got := e.srv.svc.CacheStats().Bytes; got != base {
		t.Errorf("the default form again: %d bytes, was %d", got, base)
	}
	e.must(200, "GET", "/v1/sessions/s/context?format=anthropic", nil)
	anthropic := e.srv.svc.CacheStats().Bytes
	e.must(200, "GET", "/v1/sessions/s/context?format=observation&tokenizer=heuristic", nil)
	observation := e.srv.svc.CacheStats().Bytes
	if !(base < anthropic && anthropic < observation) {
		t.Errorf("sizes by forms rendered: %d, then %d with anthropic, then %d with observation", base, anthropic, observation)
	}
	e.checkCache()
}

// TestCacheSessionLargerThanBound serves a session larger than the whole
// cache without keeping it.
func TestCacheSessionLargerThanBound(t *testing.T) {
	one := oneSessionSize(t, 30)
	e := newEnv(t, func(c *Config) { c.CacheBytes = one / 2 })
	e.session("small", 1)
	e.must(200, "GET", "/v1/sessions/small/context", nil)
	e.session("big", 30)
	for range 2 {
		var c api.ContextResponse
		e.must(200, "GET", "/v1/sessions/big/context", nil).json(t, &c)
		if len(c.Steps) != 32 {
			t.Errorf("the big session's context shows %d steps, want 32", len(c.Steps))
		}
	}
	if e.cached("big") || !e.cached("small") {
		t.Errorf("cached: big %v, small %v; want only small", e.cached("big"), e.cached("small"))
	}
	if n, m := e.cacheEvents("too_large"), e.cacheEvents("miss"); n != 2 || m != 3 {
		t.Errorf("%d too_large and %d miss events, want 2 and 3 (each request loads it)", n, m)
	}
	e.checkCache()
	// A server with no cache still serves.
	e2 := newEnv(t, func(c *Config) { c.CacheBytes = -1 })
	e2.session("s", 2)
	var c api.ContextResponse
	e2.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &c)
	if len(c.Steps) != 4 || e2.srv.svc.CacheStats().Sessions != 0 || e2.cacheEvents("too_large") != 0 {
		t.Errorf("uncached: %v, %d cached, %d too_large", c.Steps, e2.srv.svc.CacheStats().Sessions, e2.cacheEvents("too_large"))
	}
}

// TestCacheCatchUpPastBound grows cached views by appends (which reach
// the cached memory as they are written): the cache evicts others to
// stay within its bound, and a view that grows past the whole bound is
// evicted itself.
func TestCacheCatchUpPastBound(t *testing.T) {
	one := oneSessionSize(t, 30)
	e := newEnv(t, func(c *Config) { c.CacheBytes = 2*one + one/2 })
	e.session("a", 30)
	e.session("b", 30)
	e.must(200, "GET", "/v1/sessions/a/context", nil)
	e.must(200, "GET", "/v1/sessions/b/context", nil)
	if !e.cached("a") || !e.cached("b") {
		t.Fatal("a and b are not both cached")
	}
	// b grows by about three quarters of a session: a, the least recently
	// used, goes.
	var steps []string
	for i := range 24 {
		steps = append(steps, actionStep(100+i, strings.Repeat("grown\n", 60)))
	}
	e.appendSteps("b", "["+strings.Join(steps, ",")+"]")
	var c api.ContextResponse
	e.must(200, "GET", "/v1/sessions/b/context", nil).json(t, &c)
	if c.LastSeq != 56 || !e.cached("b") || e.cached("a") || e.cacheEvents("append") != 1 || e.cacheEvents("catchup") != 0 {
		t.Errorf("after b grew: last %d, cached a %v b %v, %d appends, %d catch-ups", c.LastSeq, e.cached("a"), e.cached("b"), e.cacheEvents("append"), e.cacheEvents("catchup"))
	}
	e.checkCache()
	// b grows past the whole bound: it is served, and evicted.
	for round := range 3 {
		steps = steps[:0]
		for i := range 30 {
			steps = append(steps, actionStep(200+30*round+i, strings.Repeat("grown\n", 60)))
		}
		e.appendSteps("b", "["+strings.Join(steps, ",")+"]")
	}
	e.must(200, "GET", "/v1/sessions/b/context", nil).json(t, &c)
	if c.LastSeq != 146 || len(c.Steps) != 146 {
		t.Errorf("after b outgrew the cache: last %d, %d steps", c.LastSeq, len(c.Steps))
	}
	// The append that took it past the bound evicted it, and the context
	// loaded it without keeping it.
	if e.cached("b") || e.srv.svc.CacheStats().Sessions != 0 || e.srv.svc.CacheStats().Bytes != 0 || e.cacheEvents("too_large") != 2 {
		t.Errorf("b outgrew the cache: cached %v, %d views of %d bytes, %d too_large", e.cached("b"), e.srv.svc.CacheStats().Sessions, e.srv.svc.CacheStats().Bytes, e.cacheEvents("too_large"))
	}
	e.checkCache()
}

// TestCacheConcurrentGets reads and appends to more sessions than the
// cache holds from many goroutines at once (run it with -race): every
// context reflects the appends acknowledged before it, and the cache's
// books stay right.
func TestCacheConcurrentGets(t *testing.T) {
	one := oneSessionSize(t, 10)
	e := newEnv(t, func(c *Config) { c.CacheBytes = 3 * one })
	const sessions, workers, rounds = 6, 8, 15
	for i := range sessions {
		e.session(fmt.Sprintf("s%d", i), 10)
	}
	var wg sync.WaitGroup
	errs := make(chan string, workers*rounds)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				id := fmt.Sprintf("s%d", (w+r)%sessions)
				var last int64
				if w%4 == 0 { // a writer: its context must show its append
					resp := e.do("POST", "/v1/sessions/"+id+"/steps", actionStep(1000*w+r, "concurrent"), "Idempotency-Key", fmt.Sprintf("%d-%d", w, r))
					if resp.code != 201 {
						if resp.code != 409 { // a lost race with another writer
							errs <- fmt.Sprintf("append to %s: %d %s", id, resp.code, resp.body)
						}
						continue
					}
					var ar api.AppendResponse
					resp.json(t, &ar)
					last = ar.LastSeq
				}
				format := []string{"openai", "anthropic", "observation"}[r%3]
				resp := e.do("GET", "/v1/sessions/"+id+"/context?format="+format, nil)
				var c api.ContextResponse
				if resp.code != 200 {
					errs <- fmt.Sprintf("context of %s: %d %s", id, resp.code, resp.body)
					continue
				}
				resp.json(t, &c)
				if c.LastSeq < last || len(c.Steps) != int(c.LastSeq) {
					errs <- fmt.Sprintf("context of %s: last %d after an append at %d, %d steps", id, c.LastSeq, last, len(c.Steps))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	e.checkCache()
	if e.cacheEvents("evict") == 0 {
		t.Error("6 sessions through a cache of 3 evicted none")
	}
}

// TestCacheAccountingConservative measures, with the Go heap, what a
// cached view really holds, in each format and tokenizer it is rendered
// in, and checks that the cache accounts at least that: for a session of
// small steps (where the per-step overheads dominate) and one of results
// of sizes spread from 40 bytes to 20 KiB, half of them tool results
// (which most formats share with the step) and half observations (which
// the openai format copies). The store is SQLite, whose
// reads decode fresh strings (a memstore shares them with the cache).
func TestCacheAccountingConservative(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap of 1,000-step sessions")
	}
	ctx := context.Background()
	sq, err := sqlite.Open(ctx, t.TempDir()+"/cache.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	// Contexts without a budget render every step (the maximum is above
	// the sessions' tokens), and the cache keeps a view however large.
	e := newEnv(t, func(c *Config) { c.Store, c.MaxContextTokens, c.CacheBytes = sq, MaxBudget, 1<<40 })
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(`the a of to in and file function error value result config cache query record user
		agent token budget context message step tool call output { } ( ) := err != nil "key": 12345 path/to/file.go`)
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteString([]string{" ", " ", " ", "\n", "\t"}[r.IntN(5)])
		}
		return b.String()[:n]
	}
	sizes := map[string]func() int{
		"small": func() int { return 20 + r.IntN(100) },
		"mixed": func() int { return int(40 * math.Exp2(9*r.Float64())) },
	}
	for name, size := range sizes {
		e.create(name)
		var steps []string
		for i := range 1000 {
			if i%2 == 0 {
				steps = append(steps, actionStep(i, text(size())))
				continue
			}
			// An action in the older shape: a thought, code and its
			// observation, which the openai format copies into new strings.
			steps = append(steps, `{"type":"action","thought":`+quote(text(size()/4))+`,"code":`+quote(text(size()/4))+
				`,"observation":`+quote(text(size()))+`}`)
		}
		for i := 0; i < len(steps); i += 100 {
			e.appendSteps(name, "["+strings.Join(steps[i:min(i+100, len(steps))], ",")+"]")
		}
	}
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	var forms []string
	for _, format := range []string{"openai", "anthropic", "observation"} {
		for _, tok := range []string{"o200k_base", "cl100k_base", "heuristic"} {
			forms = append(forms, "format="+format+"&tokenizer="+tok)
		}
	}
	// Load the tokenizers' vocabularies first: they are not the views'.
	e.session("warm", 1)
	for _, q := range forms {
		e.must(200, "GET", "/v1/sessions/warm/context?"+q, nil)
	}
	for name := range sizes {
		e.srv.svc.DropCache()
		before := heap()
		// Load the session and render it, without a budget, in one form
		// more at a time.
		for i, q := range forms {
			e.must(200, "GET", "/v1/sessions/"+name+"/context?"+q, nil)
			accounted, held := e.srv.svc.CacheStats().Bytes, heap()-before
			t.Logf("%s steps, %d forms (to %s): the view holds %d bytes, accounted %d (%.2f×)", name, i+1, q, held, accounted, float64(accounted)/float64(held))
			if accounted < held {
				t.Errorf("%s steps, %d forms (to %s): the view holds %d bytes, more than the %d accounted", name, i+1, q, held, accounted)
			}
		}
	}
}
