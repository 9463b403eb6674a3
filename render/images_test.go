package render_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
)

// The images of a step outside its task: a sketch in the assistant's
// message, a screenshot and a chart returned by one tool, nothing by the
// other.
var (
	sketch   = agentmem.Image{URL: "https://x.test/sketch.png"}
	shot     = agentmem.Image{MediaType: "image/png", Data: bytes.Repeat([]byte{1}, 12000)}
	chart    = agentmem.Image{URL: "data:image/svg+xml,%3Csvg%3E"}
	imgsStep = &agentmem.ActionStep{
		ModelOutput: "Let me look.",
		Images:      []agentmem.Image{sketch},
		ToolCalls: []agentmem.ToolCall{
			{ID: "c1", Name: "screenshot", Arguments: `{}`},
			{ID: "c2", Name: "run", Arguments: `{"cmd":"ls"}`},
		},
		Results: []agentmem.ToolResult{
			{CallID: "c1", Content: "the page", Images: []agentmem.Image{shot, chart}},
			{CallID: "c2", Content: "a.go"},
		},
		Observation: "stdout",
	}
)

// TestImagesRendered: each format shows a tool result's images where its
// API takes them and describes an assistant's in text.
func TestImagesRendered(t *testing.T) {
	checkShow(t, "openai", stepMessages(render.OpenAI, imgsStep, false),
		`assistant: text("Let me look.\n[image: https://x.test/sketch.png]") call(c1 screenshot {}) call(c2 run {"cmd":"ls"})
tool: text("the page\n[image: image/png, 12 kB]\n[image: image/svg+xml, 5 B]") answers(c1)
tool: text("a.go") answers(c2)
user: text("Images returned by tool call c1 (screenshot):") image(12000 bytes) image(data:image/svg+xml,%3Csvg%3E)
user: text("Observation:\nstdout")
`)
	checkShow(t, "anthropic", stepMessages(render.Anthropic, imgsStep, false),
		`assistant: text("Let me look.\n[image: https://x.test/sketch.png]") tool_use(c1 screenshot {}) tool_use(c2 run {"cmd":"ls"})
user: tool_result(c1 "the page" +2 images) tool_result(c2 "a.go") text("Observation:\nstdout")
`)
	checkShow(t, "observation", stepMessages(render.Observation, imgsStep, false),
		`assistant: text("Let me look.\n[image: https://x.test/sketch.png]\nAction: screenshot {}\nAction: run {\"cmd\":\"ls\"}")
user: text("Observation (screenshot): the page\n\nObservation (run): a.go\n\nObservation:\nstdout") image(12000 bytes) image(data:image/svg+xml,%3Csvg%3E)
`)
	// A message step of the assistant's is described alike.
	said := &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Content{agentmem.ImagePart(sketch)}}}
	for _, f := range []agentmem.Format{render.OpenAI, render.Anthropic, render.Observation} {
		checkShow(t, f.Name()+" message step", stepMessages(f, said, false), "assistant: text(\"[image: https://x.test/sketch.png]\")\n")
	}
}

// TestImagesContext: a context holding images outside user messages is
// valid for every API, costs exactly what it reports (each image shown
// ImageTokens, as a user's), and its wire body carries the images where
// the API takes them.
func TestImagesContext(t *testing.T) {
	counter := tokenizer.NewHeuristic()
	for _, f := range []agentmem.Format{render.OpenAI, render.Anthropic, render.Observation} {
		m := agentmem.New(agentmem.Options{Counter: counter, Format: f})
		for _, s := range []agentmem.Step{sysStep, &agentmem.TaskStep{Task: "Look at the page."}, imgsStep, textStep} {
			mustAdd(t, m, s)
		}
		c, err := m.Context(bg, agentmem.ContextOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkContext(t, f.Name(), m, f, counter, c, 0)
		shown := 0
		for _, msg := range c.Messages {
			for _, p := range msg.Content {
				if p.Type == agentmem.PartImage {
					shown++
				}
				shown += len(p.Images)
			}
		}
		if shown != 2 {
			t.Errorf("%s: %d images shown, want the tool result's 2", f.Name(), shown)
		}
		// Without the images, the context costs 2 images less, and the
		// descriptions' and headers' text.
		plain := agentmem.New(agentmem.Options{Counter: counter, Format: f})
		bare := agentmem.CloneStep(imgsStep).(*agentmem.ActionStep)
		bare.Images, bare.Results[0].Images = nil, nil
		for _, s := range []agentmem.Step{sysStep, &agentmem.TaskStep{Task: "Look at the page."}, bare, textStep} {
			mustAdd(t, plain, s)
		}
		pc, err := plain.Context(bg, agentmem.ContextOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Tokens < pc.Tokens+2*agentmem.ImageTokens {
			t.Errorf("%s: %d tokens with the images, %d without: the images are not counted", f.Name(), c.Tokens, pc.Tokens)
		}
		body, err := render.Encode(f.Name(), c.Messages)
		if err != nil {
			t.Fatal(err)
		}
		wire := mustJSON(t, body)
		switch f.Name() {
		case render.NameAnthropic:
			want := `{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"the page"},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64(shot.Data) + `"}},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/svg+xml","data":"PHN2Zz4="}}],"is_error":false}`
			if !strings.Contains(wire, want) {
				t.Errorf("anthropic body %s\nlacks %s", wire, want)
			}
		default:
			var msgs []render.OpenAIMessage
			if err := json.Unmarshal([]byte(wire), &msgs); err != nil {
				t.Fatal(err)
			}
			for _, msg := range msgs {
				if msg.Role != "user" && strings.Contains(mustJSON(t, msg.Content), "image_url") {
					t.Errorf("%s: an image in a %s message: %s", f.Name(), msg.Role, mustJSON(t, msg))
				}
			}
		}
	}
}

// TestImagesWire: agentmem's own routes take images in tool and
// assistant messages in OpenAI's wire shape (image_url parts), an
// extension of OpenAI's API, and OpenAIRequest writes them so: a message
// decoded and encoded again is the same.
func TestImagesWire(t *testing.T) {
	in := `[{"role":"assistant","content":[{"type":"text","text":"See:"},{"type":"image_url","image_url":{"url":"https://x.test/sketch.png"}}],"tool_calls":[{"id":"c1","type":"function","function":{"name":"screenshot","arguments":"{}"}}]},` +
		`{"role":"tool","content":[{"type":"text","text":"the page"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}],"tool_call_id":"c1"}]`
	msgs, err := render.DecodeOpenAIMessages([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	f, err := agentmem.FoldMessages(nil, msgs, agentmem.FoldOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := f.Steps[0].(*agentmem.ActionStep)
	if len(a.Images) != 1 || len(a.Results) != 1 || len(a.Results[0].Images) != 1 || a.Results[0].Images[0].Detail != "low" {
		t.Fatalf("folded into %+v", a)
	}
	if got := mustJSON(t, render.OpenAIRequest(msgs)); got != in {
		t.Errorf("got:\n%s\nwant:\n%s", got, in)
	}
	// A system message's image is still refused.
	if _, err := render.DecodeOpenAIMessages([]byte(`[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x"}}]}]`)); err == nil {
		t.Error("a system message's image was accepted")
	}
}

func b64(data []byte) string {
	b, _ := json.Marshal(data)
	return strings.Trim(string(b), `"`)
}
