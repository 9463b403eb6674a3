package replay_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/replay"
)

// FuzzReplayLine replays a valid prefix (system prompt, task, one tool
// call and its result) followed by one arbitrary line. Run must never
// panic; an error must be a *LineError naming line 5, or a *RenderError
// (a fuzzed system prompt can outgrow the budget); a success must have
// replayed five messages with no violation.
func FuzzReplayLine(f *testing.F) {
	for _, seed := range []string{
		`{"role":"assistant","content":"done"}`,
		`{"role":"assistant","content":"next","tool_calls":[{"id":"c2","type":"function","function":{"name":"grep","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"c1","content":"again"}`,
		`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}`,
		`{"role":"system","content":"new rules"}`,
		`{"role":"agent_call","name":"planner","content":"plan it","agent_calls":[{"agent":"coder","request":"write"}]}`,
		`{"role":"user","content":"x","structured_data":{"a":[1,2]}}`,
		"{\"role\":\"user\",\"content\":\"\xff\"}",
		`{"role":"user","content":"a"} trailing`,
		``,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	prefix := strings.Join([]string{lSystem, lTask, lCall, lResult}, "\n") + "\n"
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.ReplaceAll(line, []byte("\n"), []byte(" ")) // one line
		trace := prefix + string(line) + "\n"
		res, err := replay.Run(bg, replay.Config{Trace: strings.NewReader(trace), Budget: 400, Tokenizer: "heuristic", Format: formatFor(line)})
		if err != nil {
			var le *replay.LineError
			var re *replay.RenderError
			switch {
			case errors.As(err, &le):
				if le.Line != 5 || !strings.HasPrefix(err.Error(), "trace line 5: ") {
					t.Fatalf("error names line %d: %v", le.Line, err)
				}
			case errors.As(err, &re):
			default:
				t.Fatalf("error %T does not name the line: %v", err, err)
			}
			return
		}
		if res.Messages != 5 || res.Violations.Total != 0 {
			t.Fatalf("messages %d, violations %+v %+v", res.Messages, res.Violations, res.FirstViolations)
		}
	})
}

// formatFor spreads the inputs over the three formats.
func formatFor(line []byte) string {
	return []string{"openai", "anthropic", "observation"}[len(line)%3]
}
