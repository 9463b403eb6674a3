package main

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
	"math"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/spf13/cobra"
)

func init() { registerBench(newBenchLoadCmd) }

// The load operations of agentmem bench load.
const (
	loadOpAppend  = "append"  // POST /v1/sessions/{id}/steps, one action step
	loadOpContext = "context" // GET /v1/sessions/{id}/context
	loadOpLoop    = "loop"    // an agent loop: append one step, then read the context
	loadOpMixed   = "mixed"   // a soak: appends, contexts, creates, forks, deletes, recall (bench_mixed.go)
)

// benchLoadFlags are the flags of agentmem bench load.
type benchLoadFlags struct {
	server, apiKey, op, format, tokenizer, trace string
	clients, sessions, steps, budget             int
	duration, warmup, timeout                    time.Duration
	seed                                         uint64
	keep                                         bool
}

func newBenchLoadCmd(a *app) *cobra.Command {
	var f benchLoadFlags
	cmd := &cobra.Command{
		Use:   "load --server URL --op append|context|loop",
		Short: "Drive a running agentmem serve with concurrent clients and measure it",
		Long: `Load measures a running 'agentmem serve' from another process, as its
clients see it: requests per second and the latency distribution of one
operation under N concurrent keep-alive clients.

It first seeds --sessions new sessions of --steps realistic steps each (a
system prompt of about 2,000 characters, a task, then agent actions: a few
hundred characters of reasoning, one tool call and its result, whose length
is log-normal around 1,500 characters with 3% of 10,000 to 30,000, mixing
prose, JSON, code, stack traces and shell output; deterministic for a
--seed). With --trace it seeds each session from a JSONL trace of OpenAI chat
messages instead (such as 'agentmem bench trace' writes), through
POST /v1/sessions/{id}/messages.

Then each client, bound to one session (client i to session i mod
--sessions), repeats the operation as fast as the server answers:
  append   POST /v1/sessions/{id}/steps with one new action step and an
           Idempotency-Key (the sessions grow during the run);
  context  GET /v1/sessions/{id}/context?budget=&format=&tokenizer=;
  loop     an agent loop: append one step, then read the context; each
           iteration counts as one request, its latency the pair's;
  mixed    a soak of mixed traffic: each request drawn at random among
           appends (45%), contexts (25%), creates (8%), forks (7%),
           deletes (7%) and recall searches (8%), on the seeded sessions
           and up to 8 of the client's own; the report adds the count of
           each and the server's resident memory and Go heap (from /metrics) over the
           measured period.
Requests in the first --warmup are not counted. Latency is measured from
sending the request to the end of its response body; percentiles are exact
(every sample is kept and sorted).

It prints one JSON line on stdout: requests, requests_per_s, the latency
percentiles in milliseconds, and the failed requests by HTTP status (or
"transport" for a connection error). With append and loop, index_lag says
how far the server's recall index (which follows the log in the
background) was behind: its per-change lag over the measured period from
/metrics (p50 and p99, as the upper bounds of the histogram's buckets),
the largest lag /readyz showed, sampled every 100ms, and how long a
fresh=true search took right after the run. A run with any failed request exits
with status 1 after printing it. The seeded sessions are deleted at the end
unless --keep.

The load generator needs CPU too: on a small machine it competes with the
server for it, which the figures then include.`,
		Example: `  agentmem serve --store sqlite:///tmp/bench.db &
  agentmem bench load --server http://127.0.0.1:8080 --op context --clients 16 --duration 30s
  agentmem bench load --server http://127.0.0.1:8080 --op append --clients 16 --duration 30s
  AGENTMEM_API_KEY=am_... agentmem bench load --server http://127.0.0.1:8080 --op loop --budget 8000 --format anthropic`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchLoad(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.server, "server", "", "the base `URL` of the running server, e.g. http://127.0.0.1:8080 (required)")
	fl.StringVar(&f.apiKey, "api-key", "", "the API key to send as a Bearer token (prefer AGENTMEM_API_KEY: flags show in ps)")
	fl.StringVar(&f.op, "op", loadOpContext, "the operation: append, context, loop or mixed")
	fl.IntVar(&f.clients, "clients", 16, "the number of concurrent clients, each with its own keep-alive connection")
	fl.IntVar(&f.sessions, "sessions", 4, "the number of sessions to seed and spread the clients over")
	fl.IntVar(&f.steps, "steps", 1000, "the steps of each seeded session (system prompt and task included; ignored with --trace)")
	fl.DurationVar(&f.duration, "duration", 30*time.Second, "how long to measure")
	fl.DurationVar(&f.warmup, "warmup", 3*time.Second, "how long to run before measuring (loads the server's caches)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "the time limit of one request")
	fl.IntVar(&f.budget, "budget", 8000, "the token budget of the context requests")
	fl.StringVar(&f.format, "format", render.NameOpenAI, "the format of the context requests: openai, anthropic or observation")
	fl.StringVar(&f.tokenizer, "tokenizer", tokenizer.O200kBase, "the token counter of the context requests: o200k_base, cl100k_base or heuristic")
	fl.StringVar(&f.trace, "trace", "", "seed the sessions from this JSONL trace of OpenAI chat messages (`FILE`) instead of generated steps")
	fl.Uint64Var(&f.seed, "seed", 42, "the seed of the generated steps")
	fl.BoolVar(&f.keep, "keep", false, "keep the seeded sessions instead of deleting them at the end")
	return cmd
}

// loadResult is the JSON line agentmem bench load prints.
type loadResult struct {
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
	Latency           latencySummary   `json:"latency_ms"`
	Errors            map[string]int64 `json:"errors"`
	// ResponseBytes is the mean size of a response body.
	ResponseBytes int64 `json:"response_bytes"`
	// IndexSeedMs is how long, after seeding, the recall index took to
	// have the seeded steps (the run starts after that).
	IndexSeedMs float64 `json:"index_seed_ms,omitempty"`
	// IndexLag is how far the recall index was behind the appends
	// (append and loop, with a server whose index follows its log).
	IndexLag *indexLag `json:"index_lag,omitempty"`
	// Ops counts the requests of a mixed run by kind, and RSS is the
	// server's resident memory during it.
	Ops map[string]int64 `json:"ops,omitempty"`
	RSS *rssReport       `json:"rss,omitempty"`
}

// latencySummary is a latency distribution in milliseconds.
type latencySummary struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

// summarizeLatency computes the distribution of samples, which it sorts.
func summarizeLatency(samples []time.Duration) latencySummary {
	if len(samples) == 0 {
		return latencySummary{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	return latencySummary{
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

func runBenchLoad(cmd *cobra.Command, a *app, f benchLoadFlags) error {
	base, err := checkLoadFlags(&f)
	if err != nil {
		return err
	}
	var trace [][]byte
	if f.trace != "" {
		if trace, err = readTrace(f.trace); err != nil {
			return failure{err}
		}
	}
	ctx := cmd.Context()
	l := &loadRun{f: f, base: base, log: a, run: newRunID()}
	l.client = &http.Client{
		Timeout: f.timeout,
		Transport: &http.Transport{
			Proxy:               nil, // a benchmark on loopback: never through a proxy
			MaxIdleConns:        f.clients + f.sessions,
			MaxIdleConnsPerHost: f.clients + f.sessions,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
	}
	defer l.client.CloseIdleConnections()
	if err := l.ping(ctx); err != nil {
		return failure{err}
	}

	res := loadResult{Op: f.op, Server: base, Clients: f.clients, Sessions: f.sessions, Errors: map[string]int64{}}
	if f.op != loadOpAppend {
		res.Budget, res.Format, res.Tokenizer = f.budget, f.format, f.tokenizer
	}
	a.log.Info("seeding sessions", "sessions", f.sessions, "steps", f.steps, "trace", f.trace)
	t0 := time.Now()
	ids, steps, seedErr := l.seed(ctx, trace)
	res.SeedSeconds = roundTo(time.Since(t0).Seconds(), 3)
	res.Steps = steps
	if !f.keep {
		defer l.cleanup(ids)
	}
	if seedErr != nil {
		return failure{fmt.Errorf("seeding the sessions: %w", seedErr)}
	}
	a.log.Info("seeded", "sessions", len(ids), "steps_each", steps, "seconds", res.SeedSeconds)
	if f.op != loadOpContext {
		// The recall index indexes the seeded steps in the background: let
		// it finish first, so that the run's index lag is the run's, not
		// the seeding's backlog.
		if ms, ok := l.waitIndexed(ctx); ok {
			res.IndexSeedMs = ms
			a.log.Info("the recall index has the seeded steps", "ms", ms)
		}
	}
	if f.op != loadOpAppend {
		if res.ContextTokens, res.ContextSteps, err = l.probeContext(ctx, ids[0]); err != nil {
			return failure{err}
		}
	}

	a.log.Info("running", "op", f.op, "clients", f.clients, "warmup", f.warmup, "duration", f.duration)
	var (
		lagBefore lagHistogram
		behind    *behindSampler
	)
	var rss *rssSampler
	l.onMeasure = func() {
		if f.op != loadOpContext {
			lagBefore = l.readLagHistogram(ctx)
			behind = l.sampleBehind(ctx)
		}
		if f.op == loadOpMixed {
			rss = l.sampleRSS(ctx)
		}
	}
	stats := l.drive(ctx, ids)
	if err := ctx.Err(); err != nil {
		return failure{fmt.Errorf("interrupted: %w", err)}
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
			lag := &indexLag{MaxBehind: roundTo(maxBehind, 1)}
			lag.Changes, lag.P50, lag.P99 = lagBetween(lagBefore, l.readLagHistogram(ctx))
			lag.CatchUpMs, _ = l.catchUp(ctx)
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
	line, err := json.Marshal(res)
	if err != nil {
		return failure{err}
	}
	if _, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n", line); err != nil {
		return failure{err}
	}
	if res.Failed > 0 {
		return failure{fmt.Errorf("%d of %d requests failed (%v); the first: %s", res.Failed, res.Requests, res.Errors, l.firstError())}
	}
	return nil
}

// checkLoadFlags checks the flags and returns the server's base URL.
func checkLoadFlags(f *benchLoadFlags) (string, error) {
	if f.server == "" {
		return "", usagef("--server is required (the base URL of a running agentmem serve)")
	}
	u, err := url.Parse(f.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", usagef("--server %q: want http://HOST:PORT or https://HOST:PORT", f.server)
	}
	switch f.op {
	case loadOpAppend, loadOpContext, loadOpLoop, loadOpMixed:
	default:
		return "", usagef("--op %q: want append, context, loop or mixed", f.op)
	}
	switch {
	case f.clients < 1 || f.clients > 10000:
		return "", usagef("--clients must be between 1 and 10000")
	case f.sessions < 1 || f.sessions > 10000:
		return "", usagef("--sessions must be between 1 and 10000")
	case f.trace == "" && (f.steps < 2 || f.steps > 1_000_000):
		return "", usagef("--steps must be between 2 and 1000000 (a system prompt, a task, then actions)")
	case f.duration <= 0:
		return "", usagef("--duration must be positive")
	case f.warmup < 0:
		return "", usagef("--warmup must not be negative")
	case f.timeout <= 0:
		return "", usagef("--timeout must be positive")
	case f.budget < 0:
		return "", usagef("--budget must not be negative (0: no budget)")
	}
	if _, err := render.ByName(f.format); err != nil {
		return "", usagef("--format: %v", err)
	}
	if _, err := tokenizer.Get(f.tokenizer); err != nil {
		return "", usagef("--tokenizer %q: %v", f.tokenizer, err)
	}
	return strings.TrimRight(u.String(), "/"), nil
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

// loadRun is one run of agentmem bench load.
type loadRun struct {
	f      benchLoadFlags
	base   string
	log    *app
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
	if l.f.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.f.apiKey)
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
	ids := make([]string, l.f.sessions)
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
				last, err = l.seedGenerated(ctx, id, l.f.seed+uint64(i))
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
	g := newStepGen(seed)
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
	for i := range l.f.steps {
		var step []byte
		switch i {
		case 0:
			step = g.systemPromptStep()
		case 1:
			step = g.taskStep()
		default:
			step = g.actionStep(g.callID())
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

// readTrace reads a JSONL trace of OpenAI chat messages, one per line.
func readTrace(path string) ([][]byte, error) {
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
	q.Set("budget", strconv.Itoa(l.f.budget))
	q.Set("format", l.f.format)
	q.Set("tokenizer", l.f.tokenizer)
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
	if l.f.op != loadOpContext {
		g := newStepGen(l.f.seed + 1_000_003)
		for range 256 {
			templates = append(templates, g.actionStep(callPlaceholder))
		}
	}
	stats := make([]*clientStats, l.f.clients)
	start := time.Now()
	measureFrom := start.Add(l.f.warmup)
	until := measureFrom.Add(l.f.duration)
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
	for c := range l.f.clients {
		st := &clientStats{errors: map[string]int64{}, latency: make([]time.Duration, 0, 1<<14)}
		stats[c] = st
		id := ids[c%len(ids)]
		ctxPath := l.contextPath(id)
		stepsPath := "/v1/sessions/" + id + "/steps"
		var mixed *mixedClient
		if l.f.op == loadOpMixed {
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
				} else if l.f.op != loadOpContext {
					key := fmt.Sprintf("bench-%s-%d-%d", l.run, c, n)
					callID := "call_" + key
					body := bytes.ReplaceAll(templates[(c+n)%len(templates)], []byte(callPlaceholder), []byte(callID))
					want = http.StatusCreated
					code, size, err = l.request(ctx, "POST", stepsPath, body, key)
				}
				if l.f.op != loadOpAppend && mixed == nil && (want == 0 || err == nil && code == want) {
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
	if l.f.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.f.apiKey)
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
			l.log.log.Warn("deleting a seeded session failed", "session", id, "err", err)
		}
	}
}

// callPlaceholder stands for the tool call ID in pre-generated append
// bodies; it is 29 characters, as the IDs that replace it are about.
const callPlaceholder = "call_PLACEHOLDER_0123456789ab"

// stepGen generates realistic agent steps as the core's step JSON: the
// shapes and sizes of ../shared/bench/gen_trace.py (a system prompt of
// about 2,000 characters, a task of about 300, then actions with 200-500
// characters of reasoning, one tool call, and a result of log-normal
// length around 1,500 characters, 3% of 10,000-30,000, mixing prose,
// JSON, code, stack traces and shell output). It is deterministic for a
// seed.
type stepGen struct {
	r *mrand.Rand
}

func newStepGen(seed uint64) *stepGen {
	return &stepGen{r: mrand.New(mrand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

var (
	genWords = strings.Fields(`the a an of to in and or for with on at by from as is are was were be been
		this that these those it its into over under after before while when then file function module
		package request response error value result config service handler client server cache index query
		record field schema table user agent memory token budget context message history step tool call
		output returns raises expects missing invalid timeout retry connection database repository branch
		commit build test suite case failure passed failed skipped latency throughput worker queue batch
		stream buffer pointer slice map struct interface method receiver goroutine channel mutex lock
		deadlock race panic should could would must may might will can cannot does not did has have had
		because however therefore although instead otherwise finally currently first second next last new
		old large small empty full valid stale fresh update delete insert select create remove rename move
		copy parse encode decode compute check verify confirm inspect investigate reproduce fix patch
		revert upstream downstream dependency version release migration deployment cluster node pod
		container image volume network port address host path directory line column offset length size
		count total average median percentile customer order invoice payment account balance transaction
		ledger report document section paragraph summary note warning deprecated legacy experimental`)
	genIdents = strings.Fields(`ctx req resp err cfg buf idx key val msg msgs tok toks n i j k state store
		cache client conn row rows tx opts result results item items budget limit offset total count node
		parent child head tail entry entries batch payload`)
	genFuncs = strings.Fields(`LoadConfig ParseRequest handleMessage renderContext countTokens appendStep
		trimHistory fetchUser writeRecord openStore flushBuffer compactLog validateSchema resolvePath
		runMigration encodeFrame decodeFrame process_batch load_fixture build_index apply_patch
		retry_with_backoff getSession updateCache serializeState`)
	genTools = []string{"read_file", "run_shell", "search_code", "http_get", "list_dir",
		"write_file", "run_tests", "grep", "query_db", "browse_page"}
)

func (g *stepGen) pick(list []string) string { return list[g.r.IntN(len(list))] }
func (g *stepGen) between(lo, hi int) int    { return lo + g.r.IntN(hi-lo+1) }

func (g *stepGen) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.r.IntN(16)]
	}
	return string(b)
}

func (g *stepGen) path() string {
	parts := []string{g.pick([]string{"src", "pkg", "internal", "lib", "cmd", "app", "tests", "docs"})}
	for range g.between(1, 3) {
		parts = append(parts, g.pick(genIdents))
	}
	return strings.Join(parts, "/") + g.pick([]string{".go", ".py", ".ts", ".js", ".md", ".json", ".yaml", ".sql"})
}

func (g *stepGen) sentence() string {
	n := g.between(6, 22)
	ws := make([]string, 0, n+3)
	for range n {
		ws = append(ws, g.pick(genWords))
	}
	if g.r.Float64() < 0.25 {
		ws = append(ws, "`"+g.pick(genFuncs)+"`")
	}
	if g.r.Float64() < 0.15 {
		ws = append(ws, strconv.Itoa(g.r.IntN(100000)))
	}
	if g.r.Float64() < 0.10 {
		ws = append(ws, g.path())
	}
	g.r.Shuffle(len(ws), func(i, j int) { ws[i], ws[j] = ws[j], ws[i] })
	s := strings.Join(ws, " ")
	return strings.ToUpper(s[:1]) + s[1:] + g.pick([]string{".", ".", ".", "?", "!", ";", ":"})
}

// text returns about n characters of one kind of tool output.
func (g *stepGen) text(kind string, n int) string {
	var b strings.Builder
	lineNo := g.between(1, 400)
	for b.Len() < n {
		switch kind {
		case "prose":
			for range g.between(2, 6) {
				b.WriteString(g.sentence())
				b.WriteByte(' ')
			}
			b.WriteString("\n\n")
		case "json":
			fmt.Fprintf(&b, `{"id": %d, "uuid": "%s-%s-%s", "name": %q, "status": %q, "score": %.3f, "created_at": "2025-%02d-%02dT%02d:%02d:00Z", "path": %q},`+"\n",
				g.r.IntN(10_000_000), g.hex(8), g.hex(4), g.hex(12), g.pick(genWords)+" "+g.pick(genWords),
				g.pick([]string{"ok", "pending", "failed", "archived", "active"}), g.r.Float64()*100,
				g.between(1, 12), g.between(1, 28), g.r.IntN(24), g.r.IntN(60), g.path())
		case "code":
			f, x, y := g.pick(genFuncs), g.pick(genIdents), g.pick(genIdents)
			line := g.pick([]string{
				fmt.Sprintf("func (s *Store) %s(%s context.Context, %s []byte) (int, error) {", f, x, y),
				"\tif err != nil {", fmt.Sprintf("\t\treturn 0, fmt.Errorf(\"%s: %%w\", err)", f), "\t}",
				fmt.Sprintf("\t%s := make(map[string]int, %d)", x, g.between(1, 256)),
				fmt.Sprintf("\tfor %s, %s := range s.%s {", x, y, g.pick(genIdents)),
				"\t// " + g.sentence(), "\ts.mu.Lock()", "\tdefer s.mu.Unlock()",
			})
			fmt.Fprintf(&b, "%5d  %s\n", lineNo, line)
			lineNo++
		case "stack":
			fmt.Fprintf(&b, "Traceback (most recent call last):\n")
			for range g.between(3, 9) {
				fmt.Fprintf(&b, "  File \"/app/%s\", line %d, in %s\n    %s = %s(%s)\n", g.path(), g.between(1, 2000),
					strings.ToLower(g.pick(genFuncs)), g.pick(genIdents), strings.ToLower(g.pick(genFuncs)), g.pick(genIdents))
			}
			fmt.Fprintf(&b, "%s: %s\n", g.pick([]string{"KeyError", "ValueError", "TypeError", "TimeoutError"}), g.sentence())
		default: // shell
			switch g.r.IntN(4) {
			case 0:
				fmt.Fprintf(&b, "-rw-r--r-- 1 ci staff %8d Nov %2d %02d:%02d %s\n", g.r.IntN(1_000_000), g.between(1, 30), g.r.IntN(24), g.r.IntN(60), g.path())
			case 1:
				fmt.Fprintf(&b, "%s Test%s (%.2fs)\n", g.pick([]string{"--- PASS:", "--- FAIL:", "ok  ", "PASSED", "FAILED"}), g.pick(genFuncs), g.r.Float64()*3)
			case 2:
				fmt.Fprintf(&b, "%s:%d:%d: %s\n", g.path(), g.between(1, 900), g.between(1, 80), g.sentence())
			default:
				fmt.Fprintf(&b, "[%s] %s %s\n", g.pick([]string{"INFO", "WARN", "ERROR", "DEBUG"}), g.hex(12), g.sentence())
			}
		}
	}
	s := b.String()
	return s[:n]
}

// observationLen draws the length of a tool result.
func (g *stepGen) observationLen() int {
	if g.r.Float64() < 0.03 {
		return g.between(10_000, 30_000)
	}
	x := math.Exp(g.r.NormFloat64()*0.75 + math.Log(1500))
	return int(min(9500, max(80, x)))
}

func (g *stepGen) observation(n int) string {
	kinds := []string{"prose", "json", "code", "stack", "shell"}
	var parts []string
	size := 0
	for size < n {
		chunk := min(n-size, max(200, int(float64(n)*(0.3+0.7*g.r.Float64()))))
		t := g.text(g.pick(kinds), chunk)
		parts = append(parts, t)
		size += len(t) + 2
	}
	return strings.Join(parts, "\n\n")
}

// callID returns a new tool call ID.
func (g *stepGen) callID() string { return "call_" + g.hex(24) }

func (g *stepGen) systemPromptStep() []byte { return mustStepJSON(g.systemPrompt()) }
func (g *stepGen) taskStep() []byte         { return mustStepJSON(g.task()) }

// actionStep returns an action step's JSON (see action).
func (g *stepGen) actionStep(callID string) []byte { return mustStepJSON(g.action(callID)) }

// systemPrompt returns a system prompt of about 2,000 characters.
func (g *stepGen) systemPrompt() *agentmem.SystemPromptStep {
	var b strings.Builder
	b.WriteString("You are a careful autonomous software engineering agent working inside a sandboxed repository. Follow these rules strictly.\n\n")
	for i := 1; b.Len() < 1900; i++ {
		fmt.Fprintf(&b, "%d. %s\n", i, g.sentence())
	}
	b.WriteString("\nAvailable tools: " + strings.Join(genTools, ", ") + ".")
	return &agentmem.SystemPromptStep{Content: b.String()}
}

// task returns a task of 300 characters.
func (g *stepGen) task() *agentmem.TaskStep {
	t := "Task:"
	for len(t) < 300 {
		t += " " + g.sentence()
	}
	return &agentmem.TaskStep{Task: strings.TrimSpace(t[:300])}
}

// action returns an action step: reasoning, one tool call with the given
// ID, and its result.
func (g *stepGen) action(callID string) *agentmem.ActionStep {
	reasoning := ""
	for target := g.between(200, 500); len(reasoning) < target; {
		reasoning += g.sentence() + " "
	}
	args := fmt.Sprintf(`{"path":%q,"query":%q,"request_id":"req_%s"}`, g.path(), g.pick(genFuncs)+" "+g.pick(genWords), g.hex(12))
	return &agentmem.ActionStep{
		ModelOutput: strings.TrimSpace(reasoning),
		ToolCalls:   []agentmem.ToolCall{{ID: callID, Name: g.pick(genTools), Arguments: args}},
		Results:     []agentmem.ToolResult{{CallID: callID, Content: g.observation(g.observationLen())}},
	}
}

// mustStepJSON encodes a step as the core does; the steps above always
// encode.
func mustStepJSON(s agentmem.Step) []byte {
	data, err := agentmem.MarshalStep(s)
	if err != nil {
		panic(err)
	}
	return data
}
