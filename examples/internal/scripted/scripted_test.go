package scripted

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// post sends a chat request to a model playing script and returns the
// status and the decoded body.
func post(t *testing.T, script Script, body string) (int, map[string]any) {
	t.Helper()
	srv := httptest.NewServer(New(script))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// TestRefusesInvalidConversations: a conversation whose tool messages do
// not answer the calls before them is refused with 400 and an OpenAI
// error body, and the script is not asked.
func TestRefusesInvalidConversations(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"empty":           {`{"messages":[]}`, "messages must not be empty"},
		"result first":    {`{"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, `messages[1]: a tool message must answer a preceding tool call ("c1")`},
		"call unanswered": {`{"messages":[{"role":"assistant","tool_calls":[{"id":"c2","function":{"name":"f"}},{"id":"c1","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"c1","content":"x"},{"role":"user","content":"hi"}]}`, "messages[2]: tool calls [c2] have no tool message"},
		"call at the end": {`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c2","function":{"name":"f"}},{"id":"c1","function":{"name":"f"}}]}]}`, "tool calls [c1 c2] have no tool message"},
		"not JSON":        {`{"messages":`, "invalid JSON: "},
	} {
		t.Run(name, func(t *testing.T) {
			asked := false
			status, out := post(t, func(Request) Reply { asked = true; return Reply{} }, tc.body)
			e, _ := out["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if status != http.StatusBadRequest || e["type"] != "invalid_request_error" || !strings.HasPrefix(msg, tc.want) || asked {
				t.Fatalf("status %d, body %v, script asked: %v; want 400 %q", status, out, asked, tc.want)
			}
		})
	}
}

// TestPlaysTheScript: a valid request reaches the script, with its
// messages and tools, and the reply comes back as a completion, its tool
// call numbered by the requests answered.
func TestPlaysTheScript(t *testing.T) {
	var got Request
	status, out := post(t, func(r Request) Reply {
		got = r
		return Reply{Text: "calling", Tool: "f", Arguments: `{"a":1}`}
	}, `{"messages":[{"role":"system","content":[{"type":"text","text":"be "},{"type":"text","text":"brief"}]},{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %v", status, out)
	}
	if len(got.Messages) != 2 || got.Messages[0].Text() != "be brief" || got.Messages[1].Text() != "hi" || len(got.Tools) != 1 {
		t.Fatalf("the script was asked %+v", got)
	}
	b, _ := json.Marshal(out["choices"])
	if want := `[{"finish_reason":"tool_calls","index":0,"message":{"content":"calling","role":"assistant","tool_calls":[{"function":{"arguments":"{\"a\":1}","name":"f"},"id":"call_1","type":"function"}]}}]`; string(b) != want {
		t.Fatalf("choices %s\nwant %s", b, want)
	}
}
