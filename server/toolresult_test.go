package server

import (
	"encoding/json"
	"maps"
	"strings"
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

// TestImagesOutsideUserMessages: images in assistant and tool messages
// (a screenshot tool's), sent to POST /messages as image_url parts, in a
// typed step to POST /steps, or in a function_call_output item, are kept,
// shown in the context where the format's API takes them (described where
// it does not), and given back by pop.
func TestImagesOutsideUserMessages(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	shot := "data:image/png;base64,iVBORw0KGgo="
	e.appendMessages("s", `[{"role":"user","content":"What does the page show?"},
		{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"image_url","image_url":{"url":"https://x.test/sketch.png"}}],"tool_calls":[{"id":"c1","function":{"name":"screenshot","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"the page"},{"type":"image_url","image_url":{"url":"`+shot+`","detail":"low"}}]}]`)
	var c api.ContextResponse
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &c)
	wire := mustMarshal(t, c.Messages)
	for _, want := range []string{
		`{"content":"Looking.\n[image: https://x.test/sketch.png]","role":"assistant","tool_calls":`,
		`{"content":"the page\n[image: image/png, 8 B]","role":"tool","tool_call_id":"c1"}`,
		`{"content":[{"text":"Images returned by tool call c1 (screenshot):","type":"text"},{"image_url":{"detail":"low","url":"` + shot + `"},"type":"image_url"}],"role":"user"}`,
	} {
		if !strings.Contains(wire, want) {
			t.Errorf("openai context %s\nlacks %s", wire, want)
		}
	}
	e.must(200, "GET", "/v1/sessions/s/context?format=anthropic", nil).json(t, &c)
	if wire := mustMarshal(t, c.Messages); !strings.Contains(wire, `"content":[{"text":"the page","type":"text"},{"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"},"type":"image"}]`) {
		t.Errorf("anthropic context %s lacks the tool_result's image", wire)
	}
	var pop api.PopResponse
	e.must(200, "POST", "/v1/sessions/s/pop", nil).json(t, &pop)
	if got := mustMarshal(t, pop.Message.Content); got != `[{"text":"the page","type":"text"},{"image_url":{"detail":"low","url":"`+shot+`"},"type":"image_url"}]` {
		t.Errorf("pop of the result: %s", got)
	}

	// A typed action with images, and an item with one.
	e.create("typed")
	e.must(201, "POST", "/v1/sessions/typed/steps", `{"type":"action","model_output":"shot","images":[{"url":"https://x.test/a.png"}],
		"tool_calls":[{"id":"c","type":"function","function":{"name":"screenshot","arguments":"{}"}}],
		"results":[{"call_id":"c","content":"","images":[{"media_type":"image/png","data":"iVBORw0KGgo="}]}]}`)
	var read struct {
		Steps []struct {
			Images  []agentmemImage `json:"images"`
			Results []struct {
				Images []agentmemImage `json:"images"`
			} `json:"results"`
		} `json:"steps"`
	}
	e.must(200, "GET", "/v1/sessions/typed/steps", nil).json(t, &read)
	if len(read.Steps) != 1 || len(read.Steps[0].Images) != 1 || len(read.Steps[0].Results[0].Images) != 1 || read.Steps[0].Results[0].Images[0].MediaType != "image/png" {
		t.Errorf("typed steps read back as %+v", read)
	}
	e.create("items")
	e.must(201, "POST", "/v1/sessions/items/items", `{"items":[{"role":"user","content":"shoot"},{"type":"function_call","call_id":"c","name":"screenshot","arguments":"{}"},
		{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"`+shot+`"}]}]}`)
	e.must(200, "GET", "/v1/sessions/items/context?format=anthropic", nil).json(t, &c)
	if wire := mustMarshal(t, c.Messages); !strings.Contains(wire, `"content":[{"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"},"type":"image"}]`) {
		t.Errorf("the items session's anthropic context %s lacks the output's image", wire)
	}
	// Still refused: a system message's image.
	err := e.must(400, "POST", "/v1/sessions/s/messages", `{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x"}}]}`).apiErr(t)
	if err.Field != "content[0]" {
		t.Errorf("a system message's image: %+v", err)
	}
}

type agentmemImage struct {
	URL       string `json:"url"`
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
