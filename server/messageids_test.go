package server

import (
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
)

// TestMessageIDs: the "id" of a message sent to POST /messages becomes
// the ID of the step it starts (system prompt, task, action) or of the
// tool result it carries, whether the result comes in the same request
// or a later one, and reads back from GET /steps.
func TestMessageIDs(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	e.appendMessages("s", `[{"id":"sys","role":"system","content":"Be brief."},{"id":"h1","role":"user","content":"Weather?"}]`)
	e.appendMessages("s", `{"id":"a1","role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{}"}},{"id":"c2","function":{"name":"time"}}]}`)
	e.appendMessages("s", `{"id":"t1","role":"tool","tool_call_id":"c1","content":"sunny"}`)
	// No ID: the step or result gets none of the message's.
	e.appendMessages("s", `[{"role":"tool","tool_call_id":"c2","content":"noon"},{"role":"user","content":"Thanks"}]`, "Idempotency-Key", "k")
	var read struct {
		Steps []struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Results []struct {
				CallID string `json:"call_id"`
				ID     string `json:"id"`
			} `json:"results"`
		} `json:"steps"`
		Compactions []struct {
			Replaced []struct {
				ID      string `json:"id"`
				Results []struct {
					CallID string `json:"call_id"`
					ID     string `json:"id"`
				} `json:"results"`
			} `json:"replaced"`
		} `json:"compactions"`
	}
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &read)
	var got []string
	for _, s := range read.Steps {
		got = append(got, s.Type+":"+s.ID)
	}
	if want := "system_prompt:sys task:h1 action:a1 task:k/0"; strings.Join(got, " ") != want {
		t.Errorf("steps %q, want %q", got, want)
	}
	last := read.Compactions[len(read.Compactions)-1].Replaced[0]
	if last.ID != "a1" || len(last.Results) != 2 || last.Results[0].ID != "t1" || last.Results[1].ID != "" {
		t.Errorf("the completed action %+v: want a1 with results t1 and one without an ID", last)
	}
}

// TestMessageIDRefused: a message ID that is not a non-empty string of at
// most 256 bytes without NUL is refused, naming it, and nothing is stored.
func TestMessageIDRefused(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	for body, field := range map[string]string{
		`{"id":7,"role":"user","content":"x"}`:                                    "id",
		`{"id":"","role":"user","content":"x"}`:                                   "id",
		`[{"role":"user","content":"x"},{"id":null,"role":"user","content":"y"}]`: "messages[1].id",
		`[{"id":"a\u0000b","role":"user","content":"x"}]`:                         "messages[0].id",
		`[{"id":"` + strings.Repeat("x", 257) + `","role":"user","content":"x"}]`: "messages[0].id",
		`[{"id":"ok","role":"user","content":"x","extra":1}]`:                     "messages[0].extra",
	} {
		err := e.must(400, "POST", "/v1/sessions/s/messages", body).apiErr(t)
		if err.Code != api.CodeInvalid || err.Field != field {
			t.Errorf("%s: %+v, want invalid naming %s", body, err, field)
		}
	}
	if s := e.must(200, "GET", "/v1/sessions/s", nil); !strings.Contains(string(s.body), `"last_seq":0`) {
		t.Errorf("a refused append stored something: %s", s.body)
	}
}
