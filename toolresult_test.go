package agentmem_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
)

// A tool message's metadata is kept with its result (ToolResult.Metadata)
// and every read of the message gives it back: Recent, MessageByID and
// PopMessage, with the is_error flag among it.
func TestToolMessageMetadataReadBack(t *testing.T) {
	m := newMem(t)
	msgs := []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("look it up")},
		{ID: "as", Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{call("a", "search"), call("b", "fetch")}},
		{ID: "ra", Role: agentmem.RoleTool, ToolCallID: "a", Content: agentmem.Text("found"), Metadata: map[string]string{"source": "web", "latency_ms": "12"}},
		{ID: "rb", Role: agentmem.RoleTool, ToolCallID: "b", Content: agentmem.Text("timeout"), Metadata: map[string]string{"source": "cache", agentmem.MetaIsError: "true"}},
	}
	for _, msg := range msgs {
		if err := m.AddMessage(bg, msg); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]map[string]string{
		"ra": {"source": "web", "latency_ms": "12"},
		"rb": {"source": "cache", agentmem.MetaIsError: "true"},
	}
	recent := m.Recent(2)
	if len(recent) != 2 {
		t.Fatalf("Recent(2) = %+v", recent)
	}
	for _, msg := range recent {
		if !maps.Equal(msg.Metadata, want[msg.ID]) {
			t.Errorf("Recent: message %q has metadata %v, want %v", msg.ID, msg.Metadata, want[msg.ID])
		}
	}
	for id, md := range want {
		got, err := m.MessageByID(id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Role != agentmem.RoleTool || !maps.Equal(got.Metadata, md) {
			t.Errorf("MessageByID(%q) = %+v, want metadata %v", id, got, md)
		}
	}
	a := agentmem.StepsOf[*agentmem.ActionStep](m)[0]
	popped, _ := agentmem.PopMessage(a)
	if popped.ID != "rb" || !maps.Equal(popped.Metadata, want["rb"]) {
		t.Errorf("PopMessage = %+v, want rb with %v", popped, want["rb"])
	}
	// The rendered context does not carry the metadata (a chat API has no
	// field for it), so that it costs nothing.
	c, err := m.Context(bg, agentmem.ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range c.Messages {
		if msg.Role == agentmem.RoleTool && msg.Metadata["source"] != "" {
			t.Errorf("the context renders a result's metadata: %+v", msg)
		}
	}
}

// screenshot is an inline PNG's worth of bytes (a 12,000-byte image).
var screenshot = agentmem.Image{MediaType: "image/png", Data: bytes.Repeat([]byte{0x89}, 12000)}

// Images in tool messages and assistant messages are kept: a tool
// message's with its result (ToolResult.Images), an assistant message's
// on its action (ActionStep.Images), and every read of the message gives
// them back as the image parts they came as.
func TestImagesInToolResultsAndAssistantMessages(t *testing.T) {
	m := newMem(t)
	chart := agentmem.Image{URL: "https://x.test/chart.png", Detail: "low"}
	msgs := []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("open the page")},
		{ID: "as", Role: agentmem.RoleAssistant, Content: agentmem.Content{agentmem.TextPart("Here is my sketch."), agentmem.ImagePart(chart)},
			ToolCalls: []agentmem.ToolCall{call("a", "screenshot")}},
		{ID: "ra", Role: agentmem.RoleTool, ToolCallID: "a", Content: agentmem.Content{agentmem.TextPart("the page"), agentmem.ImagePart(screenshot)}},
	}
	for _, msg := range msgs {
		if err := m.AddMessage(bg, msg); err != nil {
			t.Fatal(err)
		}
	}
	a := agentmem.StepsOf[*agentmem.ActionStep](m)[0]
	if a.ModelOutput != "Here is my sketch." || len(a.Images) != 1 || a.Images[0].URL != chart.URL {
		t.Fatalf("the action keeps %q and images %+v", a.ModelOutput, a.Images)
	}
	if r := a.Results[0]; r.Content != "the page" || len(r.Images) != 1 || !bytes.Equal(r.Images[0].Data, screenshot.Data) {
		t.Fatalf("the result is %+v", r)
	}
	for _, id := range []string{"as", "ra"} {
		got, err := m.MessageByID(id)
		if err != nil {
			t.Fatal(err)
		}
		var want agentmem.Message
		for _, msg := range msgs {
			if msg.ID == id {
				want = msg
			}
		}
		if mustMarshal(t, got.Content) != mustMarshal(t, want.Content) {
			t.Errorf("MessageByID(%q) content %s, want %s", id, mustMarshal(t, got.Content), mustMarshal(t, want.Content))
		}
	}
	// The step's JSON keeps them, and decodes to the same step.
	data, err := agentmem.MarshalStep(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := agentmem.UnmarshalStep(data)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := agentmem.MarshalStep(back); !bytes.Equal(again, data) {
		t.Errorf("round trip:\n%s\n%s", data, again)
	}
	// A retried tool message is one with the same images too: with other
	// images it is a different result.
	f, err := agentmem.FoldMessages([]*agentmem.ActionStep{a}, msgs[2:], agentmem.FoldOptions{})
	if err != nil || len(f.Repeated) != 1 {
		t.Errorf("a retried result with its images: %+v, %v", f, err)
	}
	other := msgs[2].Clone()
	other.Content = agentmem.Text("the page")
	var ce *agentmem.ResultConflictError
	if _, err := agentmem.FoldMessages([]*agentmem.ActionStep{a}, []agentmem.Message{other}, agentmem.FoldOptions{}); !errors.As(err, &ce) {
		t.Errorf("the result without its image: %v, want a conflict", err)
	}
}

// Images stay refused where no chat API has them: in system messages, in
// agent responses, and without a URL or data.
func TestImagesRefused(t *testing.T) {
	img := agentmem.ImagePart(agentmem.Image{URL: "https://x.test/a.png"})
	for _, msg := range []agentmem.Message{
		{Role: agentmem.RoleSystem, Content: agentmem.Content{agentmem.TextPart("sys"), img}},
		{Role: agentmem.RoleAgentResponse, Content: agentmem.Content{img}},
		{Role: agentmem.RoleTool, ToolCallID: "a", Content: agentmem.Content{agentmem.ImagePart(agentmem.Image{})}},
	} {
		if err := msg.Validate(); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("%s message with %+v: %v, want ErrInvalid", msg.Role, msg.Content, err)
		}
	}
	for _, s := range []agentmem.Step{
		&agentmem.ActionStep{Images: []agentmem.Image{{}}},
		&agentmem.ActionStep{ToolCalls: []agentmem.ToolCall{call("a", "f")}, Results: []agentmem.ToolResult{{CallID: "a", Images: []agentmem.Image{{Detail: "low"}}}}},
	} {
		if err := s.Validate(); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", s, err)
		}
	}
}

// An action's JSON from before images decodes as it did, and an action
// without images encodes to the same bytes.
func TestActionJSONWithoutImagesUnchanged(t *testing.T) {
	old := `{"type":"action","number":3,"id":"s3","model_output":"x","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}],"results":[{"call_id":"a","content":"r","metadata":{"k":"v"}}]}`
	s, err := agentmem.UnmarshalStep([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if a := s.(*agentmem.ActionStep); a.Images != nil || a.Results[0].Images != nil {
		t.Errorf("images from nowhere: %+v", a)
	}
	if got, _ := agentmem.MarshalStep(s); string(got) != old {
		t.Errorf("got %s\nwant %s", got, old)
	}
}

// Image.Describe is what a format writes for an image it cannot show.
func TestImageDescribe(t *testing.T) {
	for _, c := range []struct {
		img  agentmem.Image
		want string
	}{
		{agentmem.Image{URL: "https://x.test/a.png"}, "[image: https://x.test/a.png]"},
		{screenshot, "[image: image/png, 12 kB]"},
		{agentmem.Image{Data: []byte("abc")}, "[image: 3 B]"},
		{agentmem.Image{URL: "data:image/jpeg;base64," + strings.Repeat("A", 2000000)}, "[image: image/jpeg, 1.5 MB]"},
		{agentmem.Image{URL: "data:image/gif,GIF89a%00"}, "[image: image/gif, 7 B]"},
	} {
		if got := c.img.Describe(); got != c.want {
			t.Errorf("%.60q: %q, want %q", c.img.URL, got, c.want)
		}
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
