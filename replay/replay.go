package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
)

// ErrConfig is wrapped by the errors Run returns for an invalid Config: no
// trace, a budget below 1, an unknown format or tokenizer. A bad trace or
// a failed render is a different error.
var ErrConfig = errors.New("replay: invalid configuration")

// Config is what Run replays and how.
type Config struct {
	// Trace is the JSONL trace. When Baseline is set and Trace is not an
	// io.Seeker it is read into memory first, since it is read twice.
	Trace io.Reader
	// Budget is the token budget of every render; it must be at least 1.
	Budget int
	// Tokenizer names the counter (tokenizer.Get); "" means o200k_base.
	Tokenizer string
	// Format names the format (render.ByName); "" means openai.
	Format string
	// Out, when set, receives the final context as JSON (FinalContext).
	Out io.Writer
	// Baseline times the tokenizer alone on the trace's text before the
	// replay, for Result.TokenizeSeconds and Result.Ratio.
	Baseline bool
	// MaxLineBytes limits the length of a trace line; zero means
	// DefaultMaxLineBytes.
	MaxLineBytes int
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Result is the outcome of a replay. It marshals to the one-line JSON
// report of `agentmem replay`.
type Result struct {
	// Steps is the number of action steps (agent turns) in the memory at
	// the end; MemorySteps counts every step (system prompt, task, ...).
	Steps int `json:"steps"`
	// Messages is the number of trace lines replayed.
	Messages int `json:"messages"`
	// Renders is the number of contexts rendered: one before each
	// assistant message and one at the end.
	Renders   int    `json:"renders"`
	Budget    int    `json:"budget"`
	Format    string `json:"format"`
	Tokenizer string `json:"tokenizer"`
	// TotalSeconds is the replay's wall time (reading and decoding the
	// trace, adding the messages, rendering) without the checks.
	TotalSeconds float64 `json:"total_seconds"`
	// The distribution of the render times (the Context call alone), in
	// microseconds.
	RenderMedianUS float64 `json:"render_median_us"`
	RenderP99US    float64 `json:"render_p99_us"`
	RenderMaxUS    float64 `json:"render_max_us"`
	// FinalTokens and FinalMessages describe the final context.
	FinalTokens   int `json:"final_tokens"`
	FinalMessages int `json:"final_messages"`
	// PeakRSSMB is the process's peak resident set size in MiB, from
	// getrusage (so it covers the whole process, baseline included).
	PeakRSSMB  float64    `json:"peak_rss_mb"`
	Violations Violations `json:"violations"`
	// TokenizeSeconds is the tokenizer-alone time (Config.Baseline).
	TokenizeSeconds *float64 `json:"tokenize_seconds,omitempty"`
	// Ratio is TotalSeconds / TokenizeSeconds (Config.Baseline).
	Ratio *float64 `json:"ratio,omitempty"`

	// CPUSeconds is the CPU time the process spent in the replay without the
	// checks. It is user and system time of all threads, so the garbage
	// collector's too. Unlike the wall times, it does not grow when other
	// processes compete for the cores.
	CPUSeconds float64 `json:"cpu_seconds"`
	// TokenizeCPUSeconds is the CPU time of the tokenizer-alone baseline,
	// and CPURatio is CPUSeconds / TokenizeCPUSeconds (Config.Baseline).
	TokenizeCPUSeconds *float64 `json:"tokenize_cpu_seconds,omitempty"`
	CPURatio           *float64 `json:"cpu_ratio,omitempty"`
	// RenderCPUMedianUS and RenderCPUP99US are the distribution of the
	// renders' CPU time on their thread (Linux only, else omitted). They are
	// the render times without the time the thread was descheduled, which on
	// a busy machine dominates the tail of the wall-clock times.
	RenderCPUMedianUS float64 `json:"render_cpu_median_us,omitempty"`
	RenderCPUP99US    float64 `json:"render_cpu_p99_us,omitempty"`

	MemorySteps int `json:"memory_steps"`
	// UnansweredCalls counts tool calls of the trace that got no result. The
	// memory answers them with an error result when the next non-tool
	// message arrives, or leaves them pending at the end.
	UnansweredCalls int `json:"unanswered_calls"`
	// Phases splits the wall time.
	Phases Phases `json:"phases"`

	// FirstViolations describes the first render that broke each
	// guarantee, in the order they were found.
	FirstViolations []Violation `json:"-"`
}

// Phases splits the replay's wall time, in seconds.
type Phases struct {
	// Decode is reading and decoding the trace lines.
	Decode float64 `json:"decode_seconds"`
	// Add is Memory.AddMessage.
	Add float64 `json:"add_seconds"`
	// Render is Memory.Context, every render.
	Render float64 `json:"render_seconds"`
	// Check is the violation checks (not part of TotalSeconds).
	Check float64 `json:"check_seconds"`
}

// FinalContext is the JSON written to Config.Out: the final context, its
// messages in the format's wire encoding (render.Encode).
type FinalContext struct {
	Format  string `json:"format"`
	Counter string `json:"counter"`
	Budget  int    `json:"budget"`
	Tokens  int    `json:"tokens"`
	// Steps lists the numbers of the steps shown, in order.
	Steps        []int `json:"steps"`
	DroppedSteps int   `json:"dropped_steps"`
	// Messages is []render.OpenAIMessage for openai and observation, and
	// render.AnthropicBody (system and messages) for anthropic.
	Messages any `json:"messages"`
}

// RenderError reports a render that failed, for example because the
// pinned system prompt and task do not fit the budget (it then wraps a
// *agentmem.BudgetError, and errors.Is(err, agentmem.ErrBudgetTooSmall)).
type RenderError struct {
	// Render is the 1-based number of the render.
	Render int
	// Line is the trace line the render came before, or for the final
	// render the last line.
	Line int
	// Final marks the render after the last line.
	Final bool
	// Err is the error of Memory.Context.
	Err error
}

// Error implements error.
func (e *RenderError) Error() string {
	if e.Final {
		return fmt.Sprintf("render %d (the final render, after trace line %d): %v", e.Render, e.Line, e.Err)
	}
	return fmt.Sprintf("render %d (before trace line %d): %v", e.Render, e.Line, e.Err)
}

// Unwrap returns the render's error.
func (e *RenderError) Unwrap() error { return e.Err }

// Run replays a trace (see the package documentation) and reports the
// timings, the final context and the violations found.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	format, counter, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	counter.Count("warm up") // load the BPE ranks outside every timing
	res := &Result{Budget: cfg.Budget, Format: format.Name(), Tokenizer: counter.Name()}

	trace := cfg.Trace
	if cfg.Baseline {
		var b baselineResult
		if trace, b, err = baseline(ctx, trace, counter, cfg.MaxLineBytes); err != nil {
			return nil, err
		}
		wall, cpu := seconds(b.wall), seconds(b.cpu)
		res.TokenizeSeconds, res.TokenizeCPUSeconds = &wall, &cpu
		log.Info("baseline done", "tokenize_seconds", wall, "tokenize_cpu_seconds", cpu, "texts", b.texts, "tokens", b.tokens)
	}

	r := &runner{
		mem:   agentmem.New(agentmem.Options{Format: format, Counter: counter, Policy: &agentmem.Policy{}}),
		opts:  agentmem.ContextOptions{Budget: cfg.Budget},
		check: newChecker(format.Name(), cfg.Budget, counter),
	}
	final, err := r.run(ctx, newLineReader(trace, cfg.MaxLineBytes), res)
	if err != nil {
		return nil, err
	}
	if cfg.Out != nil {
		if err := writeFinal(cfg.Out, final); err != nil {
			return nil, err
		}
	}
	res.PeakRSSMB = round(peakRSSMB(), 1)
	if res.TokenizeSeconds != nil && *res.TokenizeSeconds > 0 {
		ratio := round(res.TotalSeconds / *res.TokenizeSeconds, 3)
		res.Ratio = &ratio
	}
	if res.TokenizeCPUSeconds != nil && *res.TokenizeCPUSeconds > 0 {
		ratio := round(res.CPUSeconds / *res.TokenizeCPUSeconds, 3)
		res.CPURatio = &ratio
	}
	for _, v := range res.FirstViolations {
		log.Warn("violation", "kind", v.Kind, "render", v.Render, "line", v.Line, "detail", v.Detail)
	}
	log.Info("replay done", "steps", res.Steps, "renders", res.Renders, "total_seconds", res.TotalSeconds, "violations", res.Violations.Total)
	return res, nil
}

// resolve checks the configuration and looks up the format and counter.
func (cfg *Config) resolve() (agentmem.Format, tokenizer.Counter, error) {
	if cfg.Trace == nil {
		return nil, nil, fmt.Errorf("%w: no trace", ErrConfig)
	}
	if cfg.Budget < 1 {
		return nil, nil, fmt.Errorf("%w: the budget must be at least 1 token, not %d", ErrConfig, cfg.Budget)
	}
	fname, tname := cfg.Format, cfg.Tokenizer
	if fname == "" {
		fname = render.NameOpenAI
	}
	if tname == "" {
		tname = tokenizer.O200kBase
	}
	format, err := render.ByName(fname)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	counter, err := tokenizer.Get(tname)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return format, counter, nil
}

// runner is the state of one replay.
type runner struct {
	mem   *agentmem.Memory
	opts  agentmem.ContextOptions
	check *checker

	renders   int
	durations []time.Duration
	cpuTimes  []time.Duration // the renders' thread CPU times
	render    time.Duration
	checking  time.Duration // wall time of the checks
	checkCPU  time.Duration // CPU time of the checks

	open       []string // tool calls of the trace awaiting results
	unanswered int
}

// run replays the trace and fills in res; it returns the final context.
func (r *runner) run(ctx context.Context, lr *lineReader, res *Result) (*agentmem.Context, error) {
	// Keep the loop on one OS thread, so that the thread CPU clock read
	// around a render measures that render.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var (
		seq         sequence
		decode, add time.Duration
		messages    int
		start       = time.Now()
		startCPU    = cpuTime()
	)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		msg, err := decodeLine(line)
		decode += time.Since(t0)
		if err == nil {
			err = seq.check(msg)
		}
		if err != nil {
			return nil, &LineError{Line: lr.line, Err: err}
		}
		messages++
		if msg.Role == agentmem.RoleAssistant {
			if _, err := r.renderAt(ctx, lr.line, false); err != nil {
				return nil, err
			}
		}
		r.trackCalls(msg)
		t1 := time.Now()
		err = r.mem.AddMessage(ctx, msg)
		add += time.Since(t1)
		if err != nil {
			return nil, &LineError{Line: lr.line, Err: err}
		}
		r.trackSteps(msg)
	}
	if messages == 0 {
		return nil, &LineError{Line: 1, Err: errors.New("the trace is empty")}
	}
	final, err := r.renderAt(ctx, lr.line, true)
	if err != nil {
		return nil, err
	}
	wall, cpu := time.Since(start), cpuTime()-startCPU
	r.unanswered += len(r.open)

	res.Steps = r.mem.ActionCount()
	res.MemorySteps = r.mem.Len()
	res.Messages = messages
	res.Renders = r.renders
	res.TotalSeconds = seconds(wall - r.checking)
	res.CPUSeconds = seconds(cpu - r.checkCPU)
	res.RenderMedianUS, res.RenderP99US, res.RenderMaxUS = percentiles(r.durations)
	if len(r.cpuTimes) == len(r.durations) {
		res.RenderCPUMedianUS, res.RenderCPUP99US, _ = percentiles(r.cpuTimes)
	}
	res.FinalTokens = final.Tokens
	res.FinalMessages = len(final.Messages)
	res.Violations = r.check.v
	res.FirstViolations = r.check.first
	res.UnansweredCalls = r.unanswered
	res.Phases = Phases{Decode: seconds(decode), Add: seconds(add), Render: seconds(r.render), Check: seconds(r.checking)}
	return final, nil
}

// renderAt renders the context, timing the Context call alone, and checks
// it. line is the trace line the render comes before (after, if final).
func (r *runner) renderAt(ctx context.Context, line int, final bool) (*agentmem.Context, error) {
	newest := r.mem.NextNumber() - 1 // nothing is pruned: the working set holds 0..newest
	cpu0, ok0 := threadCPU()
	t := time.Now()
	c, err := r.mem.Context(ctx, r.opts)
	d := time.Since(t)
	cpu1, ok1 := threadCPU()
	r.renders++
	if err != nil {
		return nil, &RenderError{Render: r.renders, Line: line, Final: final, Err: err}
	}
	r.render += d
	r.durations = append(r.durations, d)
	if ok0 && ok1 {
		r.cpuTimes = append(r.cpuTimes, cpu1-cpu0)
	}
	t, cpu := time.Now(), cpuTime()
	r.check.check(c, newest, r.renders, line)
	r.checking += time.Since(t)
	r.checkCPU += cpuTime() - cpu
	// As an agent loop does once its request is sent, hand this render's
	// storage to the next one; the final context is kept for --out.
	if !final {
		r.opts.Reuse = c
	}
	return c, nil
}

// trackCalls follows the trace's tool calls to count those that never get
// a result; it runs before the message is added.
func (r *runner) trackCalls(m agentmem.Message) {
	if m.Role == agentmem.RoleTool {
		for k, id := range r.open {
			if id == m.ToolCallID {
				r.open = append(r.open[:k], r.open[k+1:]...)
				break
			}
		}
		return
	}
	r.unanswered += len(r.open)
	r.open = r.open[:0]
	for _, tc := range m.ToolCalls {
		r.open = append(r.open, tc.ID)
	}
}

// trackSteps records the turn of a new step, the step numbers of the
// pinned steps (every system prompt and the first task) and the texts the
// checker looks for. It runs after the message was added: a message that
// is a step of its own (all but tool results) is then the newest step.
func (r *runner) trackSteps(m agentmem.Message) {
	ch := r.check
	newest := r.mem.NextNumber() - 1
	for len(ch.turn) <= newest {
		n := len(ch.turn)
		switch {
		case n == newest && (m.Role == agentmem.RoleUser || m.Role == agentmem.RoleAgentCall):
			ch.turn = append(ch.turn, n)
		case n > 0:
			ch.turn = append(ch.turn, ch.turn[n-1])
		default:
			ch.turn = append(ch.turn, -1)
		}
	}
	switch m.Role {
	case agentmem.RoleSystem:
		ch.pinned[newest] = true
		if ch.systemText == "" {
			if t := m.Text(); strings.TrimSpace(t) != "" {
				ch.systemText = t
			}
		}
	case agentmem.RoleUser:
		if ch.hasTask {
			return
		}
		ch.hasTask = true
		ch.pinned[newest] = true
		var text []string // as Memory.AddMessage makes the task's text
		for _, p := range m.Content {
			if p.Type != agentmem.PartImage {
				text = append(text, p.Text)
			}
		}
		if t := strings.Join(text, "\n"); strings.TrimSpace(t) != "" {
			ch.taskText = t
		}
	}
}

// writeFinal writes the final context as indented JSON.
func writeFinal(w io.Writer, c *agentmem.Context) error {
	wire, err := render.Encode(c.Format, c.Messages)
	if err != nil {
		return err
	}
	fc := FinalContext{
		Format: c.Format, Counter: c.Counter, Budget: c.Budget, Tokens: c.Tokens,
		Steps: c.Steps, DroppedSteps: c.DroppedSteps, Messages: wire,
	}
	if fc.Steps == nil {
		fc.Steps = []int{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(fc); err != nil {
		return fmt.Errorf("writing the final context: %w", err)
	}
	return nil
}

// baselineResult is what the tokenizer-alone baseline measured.
type baselineResult struct {
	wall, cpu     time.Duration
	texts, tokens int
}

// baseline times the counter alone on the trace's text. That text is every
// message's content text and its tool calls' names and arguments, copied
// into strings of their own and counted once each. It returns a reader
// positioned at the start of the trace for the replay.
func baseline(ctx context.Context, trace io.Reader, c tokenizer.Counter, maxLine int) (io.Reader, baselineResult, error) {
	var b baselineResult
	src := trace
	var rewind func() (io.Reader, error)
	if s, ok := trace.(io.ReadSeeker); ok {
		pos, err := s.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, b, fmt.Errorf("baseline: %w", err)
		}
		rewind = func() (io.Reader, error) {
			_, err := s.Seek(pos, io.SeekStart)
			return s, err
		}
	} else {
		data, err := io.ReadAll(trace)
		if err != nil {
			return nil, b, fmt.Errorf("baseline: reading the trace: %w", err)
		}
		src = bytes.NewReader(data)
		rewind = func() (io.Reader, error) { return bytes.NewReader(data), nil }
	}
	texts, err := traceTexts(ctx, newLineReader(src, maxLine))
	if err != nil {
		return nil, b, err
	}
	runtime.GC() // start the timing with no decoding garbage
	start, startCPU := time.Now(), cpuTime()
	for _, s := range texts {
		b.tokens += c.Count(s)
	}
	b.wall, b.cpu = time.Since(start), cpuTime()-startCPU
	b.texts = len(texts)
	runtime.GC() // texts is dead: free it before the replay
	r, err := rewind()
	if err != nil {
		return nil, b, fmt.Errorf("baseline: rewinding the trace: %w", err)
	}
	return r, b, nil
}

// traceTexts decodes every line and returns copies of the texts the
// baseline counts.
func traceTexts(ctx context.Context, lr *lineReader) ([]string, error) {
	var texts []string
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return texts, nil
		}
		if err != nil {
			return nil, err
		}
		m, err := decodeLine(line)
		if err != nil {
			return nil, &LineError{Line: lr.line, Err: err}
		}
		if t := m.Text(); t != "" {
			texts = append(texts, strings.Clone(t))
		}
		for _, tc := range m.ToolCalls {
			texts = append(texts, strings.Clone(tc.Name), strings.Clone(tc.Arguments))
		}
	}
}
