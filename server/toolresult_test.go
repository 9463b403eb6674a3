package server

import (
	"maps"
	"testing"

	"github.com/agentmem/agentmem/api"
)

// TestMessageMetadata: the "metadata" of a message sent to POST /messages
// is kept, a tool message's with its result (its is_error "true" marks the
// result an error, as agentmem.Message's does), and POST /pop gives it
// back with the message; GET /steps shows it on the result.
func TestMessageMetadata(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	e.appendMessages("s", `[{"role":"user","content":"Weather?","metadata":{"lang":"en"}},
		{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"weather","arguments":"{}"}},{"id":"c2","function":{"name":"time","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"sunny","metadata":{"source":"met.ie"}}]`)
	e.appendMessages("s", `{"role":"tool","tool_call_id":"c2","content":"clock down","metadata":{"source":"ntp","is_error":"true"}}`)
	var read struct {
		Steps []struct {
			Type     string            `json:"type"`
			Metadata map[string]string `json:"metadata"`
		} `json:"steps"`
		Compactions []struct {
			Replaced []struct {
				Results []struct {
					CallID   string            `json:"call_id"`
					IsError  bool              `json:"is_error"`
					Metadata map[string]string `json:"metadata"`
				} `json:"results"`
			} `json:"replaced"`
		} `json:"compactions"`
	}
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &read)
	if got := read.Steps[0].Metadata; !maps.Equal(got, map[string]string{"lang": "en"}) {
		t.Errorf("the task's metadata is %v", got)
	}
	rs := read.Compactions[len(read.Compactions)-1].Replaced[0].Results
	if len(rs) != 2 || rs[0].Metadata["source"] != "met.ie" || rs[1].Metadata["source"] != "ntp" || !rs[1].IsError || rs[0].IsError {
		t.Errorf("results %+v", rs)
	}
	for _, want := range []struct {
		callID  string
		isError bool
		md      map[string]string
	}{
		{"c2", true, map[string]string{"source": "ntp", "is_error": "true"}},
		{"c1", false, map[string]string{"source": "met.ie"}},
	} {
		var pop api.PopResponse
		e.must(200, "POST", "/v1/sessions/s/pop", nil).json(t, &pop)
		if pop.Message.ToolCallID != want.callID || pop.IsError != want.isError || !maps.Equal(pop.Metadata, want.md) {
			t.Errorf("pop = %+v, want call %s with metadata %v", pop, want.callID, want.md)
		}
	}
	var pop api.PopResponse
	e.must(200, "POST", "/v1/sessions/s/pop", nil).json(t, &pop) // the assistant message
	e.must(200, "POST", "/v1/sessions/s/pop", nil).json(t, &pop) // the task
	if pop.Message.Role != "user" || !maps.Equal(pop.Metadata, map[string]string{"lang": "en"}) {
		t.Errorf("pop of the task = %+v", pop)
	}
}

// TestMessageMetadataRefused: metadata that is not an object of strings is
// refused, naming it, and nothing is stored.
func TestMessageMetadataRefused(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	for body, field := range map[string]string{
		`{"role":"user","content":"x","metadata":7}`:                    "metadata",
		`{"role":"user","content":"x","metadata":{"k":1}}`:              "metadata",
		`[{"role":"user","content":"x","metadata":{"k":"a\u0000b"}}]`:   "messages[0].metadata[k]",
		`[{"role":"user","content":"x"},{"role":"user","metadata":[]}]`: "messages[1].metadata",
	} {
		err := e.must(400, "POST", "/v1/sessions/s/messages", body).apiErr(t)
		if err.Code != api.CodeInvalid || err.Field != field {
			t.Errorf("%s: %+v, want invalid naming %s", body, err, field)
		}
	}
}
