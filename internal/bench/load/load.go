// Package load drives a running agentmem server with concurrent clients
// and measures it as its clients see it: requests per second, the latency
// distribution, and how far its recall index was behind (agentmem-bench
// load).
package load

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentmem/agentmem/internal/bench/stepgen"
)

// The operations of a run.
const (
	OpAppend  = "append"  // POST /v1/sessions/{id}/steps, one action step
	OpContext = "context" // GET /v1/sessions/{id}/context
	OpLoop    = "loop"    // an agent loop: append one step, then read the context
	OpMixed   = "mixed"   // a soak: appends, contexts, creates, forks, deletes, recall (mixed.go)
)

// Config is a run's shape: the flags of agentmem-bench load.
type Config struct {
	// Server is the base URL of the running server, without a trailing
	// slash; APIKey, if set, is sent as a Bearer token.
	Server, APIKey string
	// Op is the operation the clients repeat: one of the Op constants.
	Op string
	// Clients is the number of concurrent clients, each on its own
	// keep-alive connection and bound to one of Sessions seeded sessions
	// (client i to session i mod Sessions).
	Clients, Sessions int
	// Steps is the steps of each generated session; Trace, if set, names
	// a JSONL trace of OpenAI chat messages to seed each session from
	// instead. Seed makes the generated steps.
	Steps int
	Trace string
	Seed  uint64
	// Budget, Format and Tokenizer are the context requests' query.
	Budget            int
	Format, Tokenizer string
	// Warmup is run before the measured Duration, uncounted; Timeout is
	// the time limit of one request.
	Duration, Warmup, Timeout time.Duration
	// Keep keeps the seeded sessions instead of deleting them at the end.
	Keep bool
	// Log gets the run's progress (nil: none).
	Log *slog.Logger
}

// Result is the JSON line agentmem-bench load prints.
type Result struct {
	Op        string `json:"op"`
	Server    string `json:"server"`
	Clients   int    `json:"clients"`
	Sessions  int    `json:"sessions"`
	Steps     int64  `json:"steps"` // of each session when seeded
	Budget    int    `json:"budget,omitempty"`
	Format    string `json:"format,omitempty"`
	Tokenizer string `json:"tokenizer,omitempty"`
	// ContextTokens and ContextSteps describe one context response
	// before the run: its token count and the number of steps it shows.
	ContextTokens int `json:"context_tokens,omitempty"`
	ContextSteps  int `json:"context_steps,omitempty"`

	SeedSeconds     float64 `json:"seed_seconds"`
	DurationSeconds float64 `json:"duration_seconds"`
	// Requests counts the requests started during the measured period;
	// Failed those among them that failed (see Errors).
	Requests          int64            `json:"requests"`
	Failed            int64            `json:"failed"`
	RequestsPerSecond float64          `json:"requests_per_s"`
	Latency           LatencySummary   `json:"latency_ms"`
	Errors            map[string]int64 `json:"errors"`
	// ResponseBytes is the mean size of a response body.
	ResponseBytes int64 `json:"response_bytes"`
	// IndexSeedMs is how long, after seeding, the recall index took to
	// have the seeded steps (the run starts after that).
	IndexSeedMs float64 `json:"index_seed_ms,omitempty"`
	// IndexLag is how far the recall index was behind the appends
	// (append and loop, with a server whose index follows its log).
	IndexLag *IndexLag `json:"index_lag,omitempty"`
	// Ops counts the requests of a mixed run by kind, and RSS is the
	// server's resident memory during it.
	Ops map[string]int64 `json:"ops,omitempty"`
	RSS *RSSReport       `json:"rss,omitempty"`
	// ServerCPU is the CPU time the server process spent during the
	// measured period, from its /metrics (absent when it has none).
	ServerCPU *ServerCPU `json:"server_cpu,omitempty"`
}

// ServerCPU is the CPU time, user and system, that the server process
// spent during the measured period. It is read from
// process_cpu_seconds_total in its /metrics when the period starts and
// when it ends. It is the cost of the load to the server, whatever else
// shares the machine. It includes
// the server's background work (the recall index following the appends)
// and the two reads of /metrics; the counter's resolution is 10 ms.
type ServerCPU struct {
	Seconds float64 `json:"seconds"`
	// MsPerOp is Seconds in milliseconds divided by the requests of the
	// measured period (with loop, the loops).
	MsPerOp float64 `json:"ms_per_op"`
}

// LatencySummary is a latency distribution in milliseconds.
type LatencySummary struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

// summarizeLatency computes the distribution of samples, which it sorts.
func summarizeLatency(samples []time.Duration) LatencySummary {
	if len(samples) == 0 {
		return LatencySummary{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	return LatencySummary{
		Mean: ms(sum / time.Duration(len(samples))),
		P50:  ms(percentile(samples, 50)),
		P90:  ms(percentile(samples, 90)),
		P99:  ms(percentile(samples, 99)),
		P999: ms(percentile(samples, 99.9)),
		Max:  ms(samples[len(samples)-1]),
	}
}

// percentile returns the p-th percentile of sorted samples by the
// nearest-rank method: the smallest sample with at least p% of the
// samples at or below it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Run seeds the sessions, drives the server for the warm-up and the
// measured period and returns what it measured, deleting the seeded
// sessions at the end unless cfg.Keep. cfg is checked by the caller
// (agentmem-bench load checks its flags). A run in which requests failed
// returns its result and an error naming the first failure.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var (
		trace [][]byte
		err   error
	)
	if cfg.Trace != "" {
		if trace, err = ReadTrace(cfg.Trace); err != nil {
			return nil, err
		}
	}
	l := &loadRun{f: cfg, base: cfg.Server, log: log, run: newRunID()}
	l.client = &http.Client{
		Timeout: cfg.Timeout,
		Transport: &http.Transport{
			Proxy:               nil, // a benchmark on loopback: never through a proxy
			MaxIdleConns:        cfg.Clients + cfg.Sessions,
			MaxIdleConnsPerHost: cfg.Clients + cfg.Sessions,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
	}
	defer l.client.CloseIdleConnections()
	if err := l.ping(ctx); err != nil {
		return nil, err
	}

	res := &Result{Op: cfg.Op, Server: cfg.Server, Clients: cfg.Clients, Sessions: cfg.Sessions, Errors: map[string]int64{}}
	if cfg.Op != OpAppend {
		res.Budget, res.Format, res.Tokenizer = cfg.Budget, cfg.Format, cfg.Tokenizer
	}
	log.Info("seeding sessions", "sessions", cfg.Sessions, "steps", cfg.Steps, "trace", cfg.Trace)
	t0 := time.Now()
	ids, steps, seedErr := l.seed(ctx, trace)
	res.SeedSeconds = roundTo(time.Since(t0).Seconds(), 3)
	res.Steps = steps
	if !cfg.Keep {
		defer l.cleanup(ids)
	}
	if seedErr != nil {
		return nil, fmt.Errorf("seeding the sessions: %w", seedErr)
	}
	log.Info("seeded", "sessions", len(ids), "steps_each", steps, "seconds", res.SeedSeconds)
	if cfg.Op != OpContext {
		// The recall index indexes the seeded steps in the background: let
		// it finish first, so that the run's index lag is the run's, not
		// the seeding's backlog.
		if ms, ok := l.waitIndexed(ctx); ok {
			res.IndexSeedMs = ms
			log.Info("the recall index has the seeded steps", "ms", ms)
		}
	}
	if cfg.Op != OpAppend {
		if res.ContextTokens, res.ContextSteps, err = l.probeContext(ctx, ids[0]); err != nil {
			return nil, err
		}
	}

	log.Info("running", "op", cfg.Op, "clients", cfg.Clients, "warmup", cfg.Warmup, "duration", cfg.Duration)
	var (
		lagBefore lagHistogram
		behind    *behindSampler
	)
	var (
		rss       *rssSampler
		cpuBefore float64
		cpuOK     bool
	)
	l.onMeasure = func() {
		cpuBefore, cpuOK = l.readCPU(ctx)
		if cfg.Op != OpContext {
			lagBefore = l.readLagHistogram(ctx)
			behind = l.sampleBehind(ctx)
		}
		if cfg.Op == OpMixed {
			rss = l.sampleRSS(ctx)
		}
	}
	stats := l.drive(ctx, ids)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("interrupted: %w", err)
	}
	var cpu float64
	if cpuOK {
		cpu, cpuOK = l.readCPU(ctx)
		cpu -= cpuBefore
	}
	if rss != nil {
		res.RSS = rss.finish()
	}
	if len(l.mixed) > 0 {
		res.Ops = map[string]int64{}
		for _, m := range l.mixed {
			for k, n := range m.counts {
				res.Ops[k] += n
			}
		}
	}
	if behind != nil {
		maxBehind := behind.finish()
		if lagBefore != nil {
			// The histogram is read once the index has caught up, so that
			// the changes of the period's end, the ones still waiting when
			// it ended, count too.
			lag := &IndexLag{MaxBehind: roundTo(maxBehind, 1)}
			lag.CatchUpMs, _ = l.catchUp(ctx)
			lag.Changes, lag.P50, lag.P99 = lagBetween(lagBefore, l.readLagHistogram(ctx))
			res.IndexLag = lag
		}
	}
	var (
		samples []time.Duration
		bytes   int64
	)
	for _, s := range stats {
		samples = append(samples, s.latency...)
		res.Failed += s.failed
		bytes += s.bytes
		for k, n := range s.errors {
			res.Errors[k] += n
		}
	}
	res.Requests = int64(len(samples))
	res.DurationSeconds = roundTo(l.elapsed.Seconds(), 3)
	if l.elapsed > 0 {
		res.RequestsPerSecond = roundTo(float64(res.Requests)/l.elapsed.Seconds(), 1)
	}
	if res.Requests > 0 {
		res.ResponseBytes = bytes / res.Requests
	}
	res.Latency = summarizeLatency(samples)
	if cpuOK && res.Requests > 0 {
		res.ServerCPU = &ServerCPU{Seconds: roundTo(cpu, 2), MsPerOp: roundTo(cpu*1000/float64(res.Requests), 3)}
	}
	if res.Failed > 0 {
		return res, fmt.Errorf("%d of %d requests failed (%v); the first: %s", res.Failed, res.Requests, res.Errors, l.firstError())
	}
	return res, nil
}

// newRunID returns a random ID that names the sessions and idempotency
// keys of one run, so that runs against one server do not collide.
func newRunID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// roundTo rounds x to n decimals.
func roundTo(x float64, n int) float64 {
	p := math.Pow10(n)
	return math.Round(x*p) / p
}

// loadRun is one run of agentmem-bench load.
type loadRun struct {
	f      Config
	base   string
	log    *slog.Logger
	run    string
	client *http.Client

	elapsed time.Duration // of the measured period
	// onMeasure, when set, runs once when the measured period starts.
	onMeasure func()
	// mixed are the clients of a mixed run.
	mixed []*mixedClient

	errMu    sync.Mutex
	firstErr string
}

// do sends one request and reads the whole answer. body may be nil.
func (l *loadRun) do(ctx context.Context, method, path string, body []byte, header ...string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, l.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if l.f.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.f.APIKey)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// expect sends a request and fails unless it is answered with want.
func (l *loadRun) expect(ctx context.Context, want int, method, path string, body []byte, header ...string) ([]byte, error) {
	code, data, err := l.do(ctx, method, path, body, header...)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if code != want {
		return nil, fmt.Errorf("%s %s: status %d, want %d: %.300s", method, path, code, want, data)
	}
	return data, nil
}

// ping checks the server is there, and that the key (if any) works.
func (l *loadRun) ping(ctx context.Context) error {
	if _, err := l.expect(ctx, http.StatusOK, "GET", "/healthz", nil); err != nil {
		return fmt.Errorf("the server does not answer: %w", err)
	}
	code, data, err := l.do(ctx, "GET", "/v1/sessions?page_size=1", nil)
	if err != nil {
		return err
	}
	if code == http.StatusUnauthorized {
		return fmt.Errorf("the server wants an API key: give --api-key (or AGENTMEM_API_KEY): %.200s", data)
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET /v1/sessions: status %d: %.200s", code, data)
	}
	return nil
}

// seed creates the sessions and fills them, a few at a time. It returns
// the IDs of the sessions created (also on error, to clean up) and the
// number of steps of each.
func (l *loadRun) seed(ctx context.Context, trace [][]byte) ([]string, int64, error) {
	ids := make([]string, l.f.Sessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%s-%d", l.run, i)
	}
	var (
		mu      sync.Mutex
		created []string
		steps   int64
		errs    []error
		wg      sync.WaitGroup
	)
	sem := make(chan struct{}, 4)
	for i, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			body := fmt.Appendf(nil, `{"id":%q,"agent":"bench-load"}`, id)
			if _, err := l.expect(ctx, http.StatusCreated, "POST", "/v1/sessions", body); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			mu.Lock()
			created = append(created, id)
			mu.Unlock()
			var last int64
			var err error
			if trace != nil {
				last, err = l.seedTrace(ctx, id, trace)
			} else {
				last, err = l.seedGenerated(ctx, id, l.f.Seed+uint64(i))
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			steps = last
		})
	}
	wg.Wait()
	return created, steps, errors.Join(errs...)
}

// Seeding sends the steps in batches of at most this many steps and
// bytes, well within the server's limits on a request.
const (
	seedBatchSteps = 200
	seedBatchBytes = 1 << 20
)

// seedGenerated fills a session with generated steps and returns its last
// sequence number.
func (l *loadRun) seedGenerated(ctx context.Context, id string, seed uint64) (int64, error) {
	g := stepgen.New(seed)
	var batch [][]byte
	var size int
	var last int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		body := append(append([]byte{'['}, bytes.Join(batch, []byte{','})...), ']')
		batch, size = batch[:0], 0
		data, err := l.expect(ctx, http.StatusCreated, "POST", "/v1/sessions/"+id+"/steps", body)
		if err != nil {
			return err
		}
		var ar struct {
			LastSeq int64 `json:"last_seq"`
		}
		if err := json.Unmarshal(data, &ar); err != nil {
			return fmt.Errorf("append to %s: %w", id, err)
		}
		last = ar.LastSeq
		return nil
	}
	for i := range l.f.Steps {
		var step []byte
		switch i {
		case 0:
			step = g.SystemPromptJSON()
		case 1:
			step = g.TaskJSON()
		default:
			step = g.ActionJSON(g.CallID())
		}
		if len(batch) > 0 && (len(batch) == seedBatchSteps || size+len(step) > seedBatchBytes) {
			if err := flush(); err != nil {
				return last, err
			}
		}
		batch = append(batch, step)
		size += len(step)
	}
	return last, flush()
}

// ReadTrace reads a JSONL trace of OpenAI chat messages, one per line.
func ReadTrace(path string) ([][]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var lines [][]byte
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) || line[0] != '{' {
			return nil, fmt.Errorf("%s:%d: not a JSON object", path, n)
		}
		lines = append(lines, bytes.Clone(line))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s: no messages", path)
	}
	return lines, nil
}

// seedTrace fills a session with a trace's messages through the messages
// route and returns its last sequence number. A batch ends only before
// a message that is not a tool result, so that each assistant message's
// tool calls travel with their results, as the route requires.
func (l *loadRun) seedTrace(ctx context.Context, id string, trace [][]byte) (int64, error) {
	var last int64
	for start := 0; start < len(trace); {
		end, size := start, 0
		for end < len(trace) {
			isTool := bytes.Contains(trace[end][:min(len(trace[end]), 40)], []byte(`"role":"tool"`))
			if end > start && !isTool && (end-start >= seedBatchSteps || size+len(trace[end]) > seedBatchBytes) {
				break
			}
			size += len(trace[end])
			end++
		}
		body := append(append([]byte{'['}, bytes.Join(trace[start:end], []byte{','})...), ']')
		data, err := l.expect(ctx, http.StatusCreated, "POST", "/v1/sessions/"+id+"/messages?flush_pending=true", body)
		if err != nil {
			return last, err
		}
		var ar struct {
			LastSeq int64 `json:"last_seq"`
		}
		if err := json.Unmarshal(data, &ar); err != nil {
			return last, fmt.Errorf("append to %s: %w", id, err)
		}
		last = ar.LastSeq
		start = end
	}
	return last, nil
}

// contextPath is the path and query of the context requests on session id.
func (l *loadRun) contextPath(id string) string {
	q := url.Values{}
	q.Set("budget", strconv.Itoa(l.f.Budget))
	q.Set("format", l.f.Format)
	q.Set("tokenizer", l.f.Tokenizer)
	return "/v1/sessions/" + id + "/context?" + q.Encode()
}

// probeContext reads one context before the run (which also loads the
// server's cache of the session) and returns its tokens and step count.
func (l *loadRun) probeContext(ctx context.Context, id string) (tokens, steps int, err error) {
	data, err := l.expect(ctx, http.StatusOK, "GET", l.contextPath(id), nil)
	if err != nil {
		return 0, 0, err
	}
	var c struct {
		Tokens int   `json:"tokens"`
		Steps  []int `json:"steps"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return 0, 0, fmt.Errorf("the context of %s: %w", id, err)
	}
	return c.Tokens, len(c.Steps), nil
}

// clientStats are what one client measured.
type clientStats struct {
	latency []time.Duration
	failed  int64
	bytes   int64
	errors  map[string]int64
}

// drive runs the clients for the warm-up and the measured period and
// returns what each measured.
func (l *loadRun) drive(ctx context.Context, ids []string) []*clientStats {
	// The append bodies are generated before the run, so that generating
	// them costs the measurement nothing; each request gets a new tool
	// call ID (spliced in for the placeholder) and Idempotency-Key.
	var templates [][]byte
	if l.f.Op != OpContext {
		g := stepgen.New(l.f.Seed + 1_000_003)
		for range 256 {
			templates = append(templates, g.ActionJSON(callPlaceholder))
		}
	}
	stats := make([]*clientStats, l.f.Clients)
	start := time.Now()
	measureFrom := start.Add(l.f.Warmup)
	until := measureFrom.Add(l.f.Duration)
	var wg sync.WaitGroup
	if l.onMeasure != nil {
		wg.Go(func() { // in the group: its effects are seen after Wait
			select {
			case <-time.After(time.Until(measureFrom)):
				l.onMeasure()
			case <-ctx.Done():
			}
		})
	}
	for c := range l.f.Clients {
		st := &clientStats{errors: map[string]int64{}, latency: make([]time.Duration, 0, 1<<14)}
		stats[c] = st
		id := ids[c%len(ids)]
		ctxPath := l.contextPath(id)
		stepsPath := "/v1/sessions/" + id + "/steps"
		var mixed *mixedClient
		if l.f.Op == OpMixed {
			mixed = l.newMixedClient(c, ids, templates)
			l.mixed = append(l.mixed, mixed)
		}
		wg.Go(func() {
			if mixed != nil {
				defer mixed.cleanup(context.WithoutCancel(ctx))
			}
			for n := 0; ; n++ {
				t0 := time.Now()
				if !t0.Before(until) || ctx.Err() != nil {
					return
				}
				var (
					code, size int
					err        error
					want       int
				)
				if mixed != nil {
					code, want, size, err = mixed.step(ctx, n)
				} else if l.f.Op != OpContext {
					key := fmt.Sprintf("bench-%s-%d-%d", l.run, c, n)
					callID := "call_" + key
					body := bytes.ReplaceAll(templates[(c+n)%len(templates)], []byte(callPlaceholder), []byte(callID))
					want = http.StatusCreated
					code, size, err = l.request(ctx, "POST", stepsPath, body, key)
				}
				if l.f.Op != OpAppend && mixed == nil && (want == 0 || err == nil && code == want) {
					var n2 int
					want = http.StatusOK
					code, n2, err = l.request(ctx, "GET", ctxPath, nil, "")
					size += n2
				}
				d := time.Since(t0)
				if t0.Before(measureFrom) {
					continue
				}
				st.latency = append(st.latency, d)
				st.bytes += int64(size)
				switch {
				case err != nil:
					if ctx.Err() != nil {
						return
					}
					st.failed++
					st.errors["transport"]++
					l.noteError(err.Error())
				case code != want:
					st.failed++
					st.errors[strconv.Itoa(code)]++
				}
			}
		})
	}
	wg.Wait()
	l.elapsed = time.Since(measureFrom)
	return stats
}

// request sends one request of the run and discards the answer, keeping
// the connection alive. A failed status's body is noted for the report.
func (l *loadRun) request(ctx context.Context, method, path string, body []byte, key string) (code, size int, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, l.base+path, rd)
	if err != nil {
		return 0, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if l.f.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.f.APIKey)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		l.noteError(fmt.Sprintf("%s %s: %d %.300s", method, path, resp.StatusCode, data))
		return resp.StatusCode, len(data), err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, int(n), err
}

// noteError keeps the first failure, for the report.
func (l *loadRun) noteError(msg string) {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	if l.firstErr == "" {
		l.firstErr = msg
	}
}

func (l *loadRun) firstError() string {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.firstErr
}

// cleanup deletes the seeded sessions.
func (l *loadRun) cleanup(ids []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range ids {
		if _, err := l.expect(ctx, http.StatusNoContent, "DELETE", "/v1/sessions/"+id, nil); err != nil {
			l.log.Warn("deleting a seeded session failed", "session", id, "err", err)
		}
	}
}

// callPlaceholder stands for the tool call ID in pre-generated append
// bodies; it is 29 characters, as the IDs that replace it are about.
const callPlaceholder = "call_PLACEHOLDER_0123456789ab"
