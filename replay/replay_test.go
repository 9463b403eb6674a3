package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/replay"
)

var bg = context.Background()

// traceStats is what a generated trace holds.
type traceStats struct {
	lines, assistants, actions, users, calls int
}

// genTrace writes a trace of turns agent turns: the system prompt and the
// task, then assistant messages with one to three tool calls (each followed
// by its result) or none, now and then a further user message.
func genTrace(seed uint64, turns int) ([]byte, traceStats) {
	r := rand.New(rand.NewPCG(seed, 1))
	words := strings.Fields("the agent reads a file and runs the tests; the build failed because a value was missing " +
		"from the config map, so it retries with a new budget and checks the output of the tool call again")
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(12) == 0 {
				fmt.Fprintf(&b, ` {"id":%d,"ok":%t}`+"\n", r.IntN(1e6), r.IntN(2) == 0)
			}
		}
		return b.String()
	}
	var buf bytes.Buffer
	var st traceStats
	write := func(m map[string]any) {
		line, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		st.lines++
	}
	write(map[string]any{"role": "system", "content": "You are a careful agent. " + text(400)})
	write(map[string]any{"role": "user", "content": "Task: " + text(200)})
	st.users++
	call := 0
	for range turns {
		if r.IntN(10) == 0 {
			write(map[string]any{"role": "user", "content": "Also: " + text(80)})
			st.users++
		}
		st.assistants++
		st.actions++
		n := []int{0, 1, 1, 1, 1, 2, 3}[r.IntN(7)]
		if n == 0 {
			write(map[string]any{"role": "assistant", "content": text(150)})
			continue
		}
		var calls []map[string]any
		var ids []string
		for range n {
			call++
			id := fmt.Sprintf("call_%d", call)
			ids = append(ids, id)
			calls = append(calls, map[string]any{"id": id, "type": "function", "function": map[string]any{
				"name": []string{"read_file", "run_shell", "grep"}[r.IntN(3)], "arguments": fmt.Sprintf(`{"path":"src/f%d.go"}`, call)}})
		}
		st.calls += n
		write(map[string]any{"role": "assistant", "content": text(100 + r.IntN(200)), "tool_calls": calls})
		for _, id := range ids {
			write(map[string]any{"role": "tool", "tool_call_id": id, "content": text(100 + r.IntN(2500))})
		}
	}
	return buf.Bytes(), st
}

func run(t *testing.T, cfg replay.Config) *replay.Result {
	t.Helper()
	res, err := replay.Run(bg, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestRunCounts(t *testing.T) {
	trace, st := genTrace(1, 40)
	res := run(t, replay.Config{Trace: bytes.NewReader(trace), Budget: 2000})
	if res.Messages != st.lines {
		t.Errorf("messages = %d, want %d", res.Messages, st.lines)
	}
	if res.Renders != st.assistants+1 {
		t.Errorf("renders = %d, want one per assistant message plus the final one, %d", res.Renders, st.assistants+1)
	}
	if res.Steps != st.actions {
		t.Errorf("steps = %d, want %d action steps", res.Steps, st.actions)
	}
	if want := 1 + st.users + st.actions; res.MemorySteps != want {
		t.Errorf("memory_steps = %d, want %d", res.MemorySteps, want)
	}
	if res.Violations.Total != 0 {
		t.Errorf("violations = %+v; first: %+v", res.Violations, res.FirstViolations)
	}
	if res.FinalTokens <= 0 || res.FinalTokens > 2000 || res.FinalMessages < 2 {
		t.Errorf("final context: %d tokens, %d messages", res.FinalTokens, res.FinalMessages)
	}
	if res.Format != "openai" || res.Tokenizer != "o200k_base" || res.Budget != 2000 {
		t.Errorf("defaults: format %q, tokenizer %q, budget %d", res.Format, res.Tokenizer, res.Budget)
	}
	if !(res.RenderMedianUS <= res.RenderP99US && res.RenderP99US <= res.RenderMaxUS && res.RenderMaxUS > 0) {
		t.Errorf("render times: median %v, p99 %v, max %v", res.RenderMedianUS, res.RenderP99US, res.RenderMaxUS)
	}
	if res.TokenizeSeconds != nil || res.Ratio != nil {
		t.Errorf("baseline figures without Baseline: %v, %v", res.TokenizeSeconds, res.Ratio)
	}
	if res.PeakRSSMB <= 0 {
		t.Errorf("peak_rss_mb = %v", res.PeakRSSMB)
	}
}

// TestNoViolations replays traces in every format, at budgets from barely
// above the pinned content to everything, with two counters.
func TestNoViolations(t *testing.T) {
	trace, st := genTrace(2, 60)
	for _, format := range []string{"openai", "anthropic", "observation"} {
		for _, counter := range []string{"o200k_base", "heuristic"} {
			for _, budget := range []int{250, 700, 3000, 8000, 1_000_000} {
				t.Run(fmt.Sprintf("%s/%s/%d", format, counter, budget), func(t *testing.T) {
					res := run(t, replay.Config{Trace: bytes.NewReader(trace), Budget: budget, Format: format, Tokenizer: counter})
					if res.Violations.Total != 0 {
						t.Fatalf("violations = %+v; first: %+v", res.Violations, res.FirstViolations)
					}
					if res.Renders != st.assistants+1 || res.FinalTokens > budget {
						t.Fatalf("renders %d, final tokens %d", res.Renders, res.FinalTokens)
					}
				})
			}
		}
	}
}

func TestSampleTrace(t *testing.T) {
	data, err := os.ReadFile("testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"openai", "anthropic", "observation"} {
		res := run(t, replay.Config{Trace: bytes.NewReader(data), Budget: 3000, Format: format})
		if res.Steps != 6 || res.Messages != 14 || res.Renders != 7 || res.Violations.Total != 0 {
			t.Errorf("%s: %+v", format, res)
		}
	}
}

func TestFinalContextFile(t *testing.T) {
	trace, _ := genTrace(3, 30)
	for _, format := range []string{"openai", "anthropic", "observation"} {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			res := run(t, replay.Config{Trace: bytes.NewReader(trace), Budget: 1500, Format: format, Out: &out})
			var fc struct {
				Format       string          `json:"format"`
				Counter      string          `json:"counter"`
				Budget       int             `json:"budget"`
				Tokens       int             `json:"tokens"`
				Steps        []int           `json:"steps"`
				DroppedSteps int             `json:"dropped_steps"`
				Messages     json.RawMessage `json:"messages"`
			}
			dec := json.NewDecoder(&out)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&fc); err != nil {
				t.Fatal(err)
			}
			if fc.Format != format || fc.Counter != "o200k_base" || fc.Budget != 1500 || fc.Tokens != res.FinalTokens || fc.Tokens > 1500 {
				t.Errorf("header: %+v", fc)
			}
			if len(fc.Steps) < 3 || fc.Steps[0] != 0 || fc.Steps[1] != 1 || fc.DroppedSteps == 0 {
				t.Errorf("steps %v, dropped %d: want the pinned 0 and 1, then the newest steps", fc.Steps, fc.DroppedSteps)
			}
			if res.MemorySteps != len(fc.Steps)+fc.DroppedSteps {
				t.Errorf("%d steps shown + %d dropped != %d in memory", len(fc.Steps), fc.DroppedSteps, res.MemorySteps)
			}
			type wireMsg struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			}
			var msgs []wireMsg
			if format == "anthropic" {
				var body struct {
					System   string    `json:"system"`
					Messages []wireMsg `json:"messages"`
				}
				if err := json.Unmarshal(fc.Messages, &body); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(body.System, "You are a careful agent.") {
					t.Errorf("system = %.40q", body.System)
				}
				msgs = body.Messages
				if len(msgs)+1 != res.FinalMessages {
					t.Errorf("%d wire messages + system, want %d", len(msgs), res.FinalMessages)
				}
			} else {
				if err := json.Unmarshal(fc.Messages, &msgs); err != nil {
					t.Fatal(err)
				}
				if len(msgs) != res.FinalMessages || msgs[0].Role != "system" {
					t.Errorf("%d wire messages (first %q), want %d", len(msgs), msgs[0].Role, res.FinalMessages)
				}
				msgs = msgs[1:]
			}
			if msgs[0].Role != "user" || !bytes.Contains(msgs[0].Content, []byte("Task: ")) {
				t.Errorf("first message after the system prompt: %s %.60s", msgs[0].Role, msgs[0].Content)
			}
		})
	}
}

// Trace lines for the error table.
const (
	lSystem = `{"role":"system","content":"You are an agent."}`
	lTask   = `{"role":"user","content":"Fix the bug."}`
	lCall   = `{"role":"assistant","content":"Reading.","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.go\"}"}}]}`
	lResult = `{"role":"tool","tool_call_id":"c1","content":"package a"}`
)

func TestBadLines(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lines   []string
		line    int
		reason  string
		invalid bool // errors.Is(err, agentmem.ErrInvalid)
	}{
		{"invalid JSON", []string{lSystem, lTask, `{"role":"assistant","content":"x"`}, 3, "invalid message JSON", false},
		{"unknown role", []string{lSystem, lTask, `{"role":"robot","content":"x"}`}, 3, `unknown role "robot"`, true},
		{"orphan tool result", []string{lSystem, lTask, lCall, lResult, `{"role":"tool","tool_call_id":"c9","content":"x"}`}, 5, `tool result for "c9" has no pending tool call`, true},
		{"result for another call", []string{lSystem, lTask, lCall, `{"role":"tool","tool_call_id":"c2","content":"x"}`}, 4, `tool result for "c2" has no pending tool call`, true},
		{"second result", []string{lSystem, lTask, `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}},{"id":"b","function":{"name":"f","arguments":"{}"}}]}`,
			`{"role":"tool","tool_call_id":"a","content":"1"}`, `{"role":"tool","tool_call_id":"a","content":"2"}`}, 5, `"a" already has a different result`, false},
		{"invalid UTF-8", []string{lSystem, lTask, "{\"role\":\"user\",\"content\":\"caf\xe9\"}"}, 3, "invalid UTF-8 at byte 29", false},
		{"unknown field", []string{lSystem, lTask, `{"role":"user","content":"x","colour":"red"}`}, 3, `unknown field "colour"`, false},
		{"trailing data", []string{lSystem, `{"role":"user","content":"x"} {"role":"user"}`}, 2, "unexpected data after the JSON object", false},
		{"empty line", []string{lSystem, "", lTask}, 2, "empty line", false},
		{"not an object", []string{lSystem, `["role","user"]`}, 2, "not a JSON object", false},
		{"null", []string{lSystem, `null`}, 2, "not a JSON object", false},
		{"no system prompt first", []string{lTask, lSystem}, 1, "must open with the system prompt", false},
		{"assistant before the task", []string{lSystem, `{"role":"assistant","content":"hi"}`}, 2, "before the task", false},
		{"tool calls on a user message", []string{lSystem, lTask, `{"role":"user","tool_calls":[{"id":"x","function":{"name":"f"}}]}`}, 3, "only assistant messages carry tool calls", true},
		{"tool message without call id", []string{lSystem, lTask, lCall, `{"role":"tool","content":"x"}`}, 4, "tool_call_id", true},
		{"tool call without id", []string{lSystem, lTask, `{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}`}, 3, "tool_calls[0].id", true},
		{"bad content type", []string{lSystem, lTask, `{"role":"user","content":42}`}, 3, "content", true},
		{"wrong field type", []string{lSystem, lTask, `{"role":"user","content":"x","tool_call_id":7}`}, 3, "invalid message JSON", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := strings.Join(tc.lines, "\n") + "\n"
			_, err := replay.Run(bg, replay.Config{Trace: strings.NewReader(trace), Budget: 1000, Tokenizer: "heuristic"})
			var le *replay.LineError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v (%T), want a *LineError", err, err)
			}
			if le.Line != tc.line {
				t.Errorf("line = %d, want %d (%v)", le.Line, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.reason) || !strings.HasPrefix(err.Error(), fmt.Sprintf("trace line %d: ", tc.line)) {
				t.Errorf("err = %q, want it to name line %d and say %q", err, tc.line, tc.reason)
			}
			if got := errors.Is(err, agentmem.ErrInvalid); got != tc.invalid {
				t.Errorf("errors.Is(err, ErrInvalid) = %v, want %v", got, tc.invalid)
			}
		})
	}
}

func TestLineTooLong(t *testing.T) {
	trace := lSystem + "\n" + lTask + "\n" + `{"role":"user","content":"` + strings.Repeat("x", 500) + `"}` + "\n"
	_, err := replay.Run(bg, replay.Config{Trace: strings.NewReader(trace), Budget: 1000, MaxLineBytes: 200})
	var le *replay.LineError
	if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), "longer than 200 bytes") {
		t.Fatalf("err = %v", err)
	}
}

func TestLineEndings(t *testing.T) {
	// CRLF line endings and a last line without a newline.
	trace := lSystem + "\r\n" + lTask + "\r\n" + lCall + "\r\n" + lResult
	res := run(t, replay.Config{Trace: strings.NewReader(trace), Budget: 1000})
	if res.Messages != 4 || res.Renders != 2 || res.Steps != 1 || res.Violations.Total != 0 {
		t.Fatalf("%+v", res)
	}
}

func TestEmptyTrace(t *testing.T) {
	_, err := replay.Run(bg, replay.Config{Trace: strings.NewReader(""), Budget: 1000})
	if err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("err = %v", err)
	}
}

func TestBudgetTooSmall(t *testing.T) {
	trace, _ := genTrace(4, 5)
	_, err := replay.Run(bg, replay.Config{Trace: bytes.NewReader(trace), Budget: 50})
	if !errors.Is(err, agentmem.ErrBudgetTooSmall) {
		t.Fatalf("err = %v, want ErrBudgetTooSmall", err)
	}
	var re *replay.RenderError
	if !errors.As(err, &re) || re.Render != 1 || re.Line != 3 || re.Final {
		t.Fatalf("err = %v, want the first render, before line 3", err)
	}
	if !strings.HasPrefix(err.Error(), "render 1 (before trace line 3): ") {
		t.Errorf("err = %q", err)
	}
	var be *agentmem.BudgetError
	if !errors.As(err, &be) || be.Budget != 50 || be.Required <= 50 {
		t.Errorf("budget error: %+v", be)
	}

	// With no assistant message, the final render is the one that fails.
	_, err = replay.Run(bg, replay.Config{Trace: strings.NewReader(lSystem + "\n" + lTask + "\n"), Budget: 5})
	if !errors.As(err, &re) || !re.Final || re.Render != 1 || !strings.Contains(err.Error(), "the final render, after trace line 2") {
		t.Fatalf("err = %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []replay.Config{
		{Budget: 100},
		{Trace: strings.NewReader(lSystem), Budget: 0},
		{Trace: strings.NewReader(lSystem), Budget: 100, Format: "xml"},
		{Trace: strings.NewReader(lSystem), Budget: 100, Tokenizer: "gpt2"},
	} {
		if _, err := replay.Run(bg, cfg); !errors.Is(err, replay.ErrConfig) {
			t.Errorf("Run(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}

// onlyReader hides every method but Read, so Run cannot seek.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestBaseline(t *testing.T) {
	trace, st := genTrace(5, 20)
	for name, r := range map[string]io.Reader{
		"seeker":   bytes.NewReader(trace),
		"reader":   onlyReader{bytes.NewReader(trace)},
		"midway":   io.NewSectionReader(bytes.NewReader(append([]byte("junk\n"), trace...)), 5, int64(len(trace))),
		"heuristc": bytes.NewReader(trace),
	} {
		t.Run(name, func(t *testing.T) {
			cfg := replay.Config{Trace: r, Budget: 2000, Baseline: true}
			if name == "heuristc" {
				cfg.Tokenizer = "heuristic"
			}
			if s, ok := r.(io.Seeker); ok && name == "midway" {
				if _, err := s.Seek(0, io.SeekStart); err != nil {
					t.Fatal(err)
				}
			}
			res := run(t, cfg)
			if res.Messages != st.lines || res.Violations.Total != 0 {
				t.Fatalf("after the baseline the replay saw %d messages, want %d; %+v", res.Messages, st.lines, res.Violations)
			}
			if res.TokenizeSeconds == nil || res.TokenizeCPUSeconds == nil {
				t.Fatalf("baseline figures missing: %+v", res)
			}
			// The heuristic can be too fast to measure on a small trace;
			// a ratio is reported whenever the baseline took any time.
			if (*res.TokenizeSeconds > 0) != (res.Ratio != nil) || (*res.TokenizeCPUSeconds > 0) != (res.CPURatio != nil) {
				t.Fatalf("ratios %v, %v for baseline times %v, %v", res.Ratio, res.CPURatio, *res.TokenizeSeconds, *res.TokenizeCPUSeconds)
			}
			if cfg.Tokenizer == "" && (res.Ratio == nil || *res.Ratio <= 0) {
				t.Errorf("ratio = %v", res.Ratio)
			}
		})
	}

	// A bad line is reported by the baseline pass too, with its number.
	_, err := replay.Run(bg, replay.Config{Trace: strings.NewReader(lSystem + "\n{\n"), Budget: 100, Baseline: true})
	var le *replay.LineError
	if !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("err = %v", err)
	}
}

func TestUnansweredCalls(t *testing.T) {
	// c1 never gets a result: its action stays pending in the working set,
	// left out of every render, and the renders stay valid.
	trace := strings.Join([]string{lSystem, lTask, lCall,
		`{"role":"assistant","content":"Next.","tool_calls":[{"id":"c2","function":{"name":"grep","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"c2","content":"found"}`,
		`{"role":"assistant","content":"Done."}`,
		`{"role":"assistant","content":"Waiting.","tool_calls":[{"id":"c3","function":{"name":"grep","arguments":"{}"}}]}`,
	}, "\n")
	for _, format := range []string{"openai", "anthropic", "observation"} {
		res := run(t, replay.Config{Trace: strings.NewReader(trace), Budget: 1000, Format: format})
		if res.UnansweredCalls != 2 || res.Violations.Total != 0 || res.Steps != 4 || res.Renders != 5 {
			t.Errorf("%s: unanswered %d, steps %d, renders %d, violations %+v %+v", format, res.UnansweredCalls, res.Steps, res.Renders, res.Violations, res.FirstViolations)
		}
	}
}

func TestResultJSON(t *testing.T) {
	trace, _ := genTrace(7, 5)
	res := run(t, replay.Config{Trace: bytes.NewReader(trace), Budget: 2000})
	line, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"steps", "messages", "renders", "budget", "format", "tokenizer", "total_seconds",
		"render_median_us", "render_p99_us", "render_max_us", "final_tokens", "final_messages", "peak_rss_mb", "violations"}
	dec := json.NewDecoder(bytes.NewReader(line))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for i, key := range want {
		tok, err := dec.Token()
		if err != nil || tok != key {
			t.Fatalf("key %d = %v (%v), want %q: %s", i, tok, err, key, line)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	if bytes.Contains(line, []byte("tokenize_seconds")) || bytes.Contains(line, []byte(`"ratio"`)) || bytes.ContainsRune(line, '\n') {
		t.Errorf("line: %s", line)
	}
	var v struct {
		Violations map[string]int `json:"violations"`
	}
	if err := json.Unmarshal(line, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"over_budget", "tokens_mismatch", "system_missing", "task_missing", "orphan_tool_result", "call_without_result", "api_rule", "window_gap", "total"} {
		if n, ok := v.Violations[k]; !ok || n != 0 {
			t.Errorf("violations[%q] = %d, %v", k, n, ok)
		}
	}
}

func TestCancel(t *testing.T) {
	trace, _ := genTrace(8, 5)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := replay.Run(ctx, replay.Config{Trace: bytes.NewReader(trace), Budget: 2000}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
