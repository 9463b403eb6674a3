package replay_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentmem/agentmem/replay"
)

// genRich writes a trace with everything the message-level API accepts:
// system prompts in the middle, agent calls and responses, images, blank
// and whitespace-ended texts, calls with empty or non-JSON arguments,
// error results and calls that never get a result.
func genRich(seed uint64, turns int) []byte {
	r := rand.New(rand.NewPCG(seed, 9))
	var buf bytes.Buffer
	w := func(m map[string]any) { b, _ := json.Marshal(m); buf.Write(b); buf.WriteByte('\n') }
	txt := func(n int) string {
		b := make([]byte, 0, n)
		for len(b) < n {
			b = append(b, []string{"alpha ", "beta ", "gamma\n", "  ", "δέλτα ", "{\"k\":1} "}[r.IntN(6)]...)
		}
		return string(b)
	}
	w(map[string]any{"role": "system", "content": "sys " + txt(100)})
	w(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "task " + txt(50)}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://x/y.png"}}}})
	call := 0
	for range turns {
		switch r.IntN(12) {
		case 0:
			w(map[string]any{"role": "system", "content": "more rules " + txt(30)})
		case 1:
			w(map[string]any{"role": "agent_call", "name": "planner", "content": txt(40), "agent_calls": []any{map[string]any{"agent": "coder", "request": txt(20)}}})
		case 2:
			w(map[string]any{"role": "agent_response", "name": "coder", "content": txt(40)})
		case 3:
			w(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": txt(30)}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://x/z.png"}}}})
		case 4:
			w(map[string]any{"role": "assistant", "content": txt(60) + "   \n"})
			continue
		case 5:
			w(map[string]any{"role": "assistant", "content": "   "})
			continue
		case 6:
			w(map[string]any{"role": "user", "content": "   "})
		}
		n := 1 + r.IntN(3)
		var calls []any
		var ids []string
		for range n {
			call++
			id := fmt.Sprintf("c%d", call)
			ids = append(ids, id)
			calls = append(calls, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "tool", "arguments": []string{"{}", "", "{\"a\": [1, 2]}", "not json"}[r.IntN(4)]}})
		}
		content := any(txt(r.IntN(80)))
		if r.IntN(4) == 0 {
			content = nil
		}
		w(map[string]any{"role": "assistant", "content": content, "tool_calls": calls})
		for _, id := range ids {
			if r.IntN(15) == 0 {
				continue // unanswered
			}
			m := map[string]any{"role": "tool", "tool_call_id": id, "content": txt(r.IntN(900))}
			if r.IntN(5) == 0 {
				m["metadata"] = map[string]any{"is_error": "true"}
			}
			w(m)
		}
	}
	return buf.Bytes()
}

// TestRichTraces replays rich traces in every format at several budgets:
// whatever the history holds, no render may break a guarantee. (Pinned
// system prompts accumulate, so the budgets stay above what they need.)
func TestRichTraces(t *testing.T) {
	for seed := range uint64(2) {
		trace := genRich(seed, 120)
		for _, format := range []string{"openai", "anthropic", "observation"} {
			for _, budget := range []int{600, 900, 2000, 100000} {
				res, err := replay.Run(bg, replay.Config{Trace: bytes.NewReader(trace), Budget: budget, Format: format})
				if err != nil {
					t.Fatalf("seed %d %s %d: %v", seed, format, budget, err)
				}
				if res.Violations.Total != 0 {
					t.Errorf("seed %d %s %d: %+v %+v", seed, format, budget, res.Violations, res.FirstViolations)
				}
			}
		}
	}
}
