package render_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// checkAppendJSON fails unless AppendJSON writes the messages in the
// format as encoding/json encodes Encode's value with HTML escaping off,
// and as the JSON v2 encoder does with encoding/json's options (how the
// server encoded responses). The one difference of the two encoders is
// invalid UTF-8, which JSON v2 writes as a U+FFFD rather than its escape
// \ufffd; the server has none, since it takes only valid UTF-8.
func checkAppendJSON(t testing.TB, format string, msgs []agentmem.Message) {
	t.Helper()
	wire, err := render.Encode(format, msgs)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wire); err != nil {
		t.Fatal(err)
	}
	want.Truncate(want.Len() - 1) // the Encoder's newline
	v2, err := jsonv2.Marshal(wire, jsonv1.DefaultOptionsV1(), jsontext.EscapeForHTML(false))
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte("prefix")
	got, err := render.AppendJSON(prefix, format, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("%s: AppendJSON did not append to dst: %.100s", format, got)
	}
	got = got[len(prefix):]
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%s: AppendJSON of\n%s\n got %s\nwant %s", format, show(msgs), got, want.Bytes())
	}
	if !bytes.Contains(want.Bytes(), []byte(`\ufffd`)) && !bytes.Equal(v2, want.Bytes()) {
		t.Fatalf("%s: JSON v2 with encoding/json's options writes\n%s\nencoding/json\n%s", format, v2, want.Bytes())
	}
}

// TestAppendJSON: the fixture steps, rendered in each format, and the
// strings that encoding/json escapes, in every field.
func TestAppendJSON(t *testing.T) {
	steps := []agentmem.Step{sysStep, taskStep, actStep, oneCallStep, textStep, planStep, noteStep, sumStep, callStep, respStep, finalStep}
	for _, f := range []agentmem.Format{render.OpenAI, render.Anthropic, render.Observation} {
		var msgs []agentmem.Message
		for _, s := range steps {
			msgs = append(msgs, stepMessages(f, s, false)...)
		}
		msgs, _ = f.Assemble(msgs, nil)
		checkAppendJSON(t, f.Name(), msgs)
		checkAppendJSON(t, f.Name(), nil)
	}
	for _, s := range escapedStrings {
		msgs := randomMessages(rand.New(rand.NewPCG(1, 2)), []string{s}, 30)
		for _, name := range render.Names() {
			checkAppendJSON(t, name, msgs)
		}
	}
	if _, err := render.AppendJSON(nil, "html", nil); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("unknown format: %v, want ErrInvalid", err)
	}
}

// TestAppendJSONEscapesAtEveryOffset: a character to escape is found
// wherever it falls in a long string, which AppendJSON scans eight bytes
// at a time, and so are several in one word and one at the very end.
func TestAppendJSONEscapesAtEveryOffset(t *testing.T) {
	specials := []string{"\x00", "\x1f", " ", "!", "\"", "#", "[", "\\", "]", "<", ">", "&", "~", "\x7f", "\u00e9", "\u2028", "\u2029", "\u2027", "\U0001F642", "\xff", "\xe2\x80"}
	plain := "abcdefghijklmnopqrstuvwx"
	var texts []string
	for _, c := range specials {
		for i := 0; i <= len(plain); i++ {
			texts = append(texts, plain[:i]+c+plain[i:], plain[:i]+c+c+"\n"+plain[i:])
		}
	}
	for _, name := range render.Names() {
		for _, text := range texts {
			checkAppendJSON(t, name, []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text(text)}, {Role: agentmem.RoleAssistant, Content: agentmem.Text(text)}})
		}
	}
}

// escapedStrings are what a JSON encoder may write otherwise than as they
// are: quotes, backslashes, controls, HTML's characters, JavaScript's line
// separators, invalid UTF-8 (alone, cut short, at the end) and JSON text.
var escapedStrings = []string{
	`say "hi" \ there`, "\x00\x01\b\f\n\r\t\x1f\x7f", "<b>&amp;</b>", "a\u2028b\u2029c",
	"bad \xff byte", "cut \xe2\x80", "\xe2", "ünï©ødé 🙂", `{"a": "<&>"}`, `  {"q": 1, "s": "x\u2028"}  `,
	"{\"bad\": \"\xff\"}", "",
}

// randomMessages returns n random messages of every role, with every kind
// of part, in no format's shape, their strings drawn from texts and a few
// plain ones.
func randomMessages(r *rand.Rand, texts []string, n int) []agentmem.Message {
	pool := append([]string{"", "plain", " ", "{}", `{"k":[1,2]}`, "not json"}, texts...)
	str := func() string {
		if len(texts) > 0 && r.IntN(2) == 0 {
			return texts[r.IntN(len(texts))]
		}
		return pool[r.IntN(len(pool))]
	}
	image := func() agentmem.Image {
		switch r.IntN(4) {
		case 0:
			return agentmem.Image{URL: str(), Detail: []string{"", "low", str()}[r.IntN(3)]}
		case 1:
			return agentmem.Image{URL: "data:image/png;base64,iVBORw0KGgo="}
		case 2:
			return agentmem.Image{URL: "data:" + str() + "," + str()}
		}
		return agentmem.Image{Data: []byte(str()), MediaType: []string{"", "image/png", str()}[r.IntN(3)]}
	}
	call := func() agentmem.ToolCall {
		return agentmem.ToolCall{ID: str(), Name: str(), Arguments: str()}
	}
	roles := []agentmem.Role{agentmem.RoleSystem, agentmem.RoleUser, agentmem.RoleAssistant, agentmem.RoleTool, agentmem.RoleAgentCall, agentmem.RoleAgentResponse}
	msgs := make([]agentmem.Message, n)
	for i := range msgs {
		m := agentmem.Message{Role: roles[r.IntN(len(roles))]}
		for range r.IntN(5) {
			var p agentmem.Part
			switch r.IntN(6) {
			case 0, 1:
				p = agentmem.TextPart(str())
			case 2:
				p = agentmem.ImagePart(image())
			case 3:
				c := call()
				p = agentmem.Part{Type: agentmem.PartToolUse, ToolCall: &c}
			case 4:
				p = agentmem.Part{Type: agentmem.PartToolResult, ToolCallID: str(), Text: str(), IsError: r.IntN(2) == 0}
				for range r.IntN(3) {
					p.Images = append(p.Images, image())
				}
			default:
				p = agentmem.Part{Type: agentmem.PartType(str()), Text: str()}
			}
			m.Content = append(m.Content, p)
		}
		for range r.IntN(3) {
			m.ToolCalls = append(m.ToolCalls, call())
		}
		if r.IntN(3) == 0 {
			m.Name = str()
		}
		if r.IntN(3) == 0 {
			m.ToolCallID = str()
		}
		if r.IntN(5) == 0 {
			m.AgentCalls = []agentmem.AgentCall{{Agent: str(), Request: str()}}
		}
		if r.IntN(5) == 0 {
			m.Data = json.RawMessage(`{"k":"<v>"}`)
		}
		msgs[i] = m
	}
	return msgs
}

// TestPropertyAppendJSON: random messages of any shape, with strings to
// escape, encode alike in every format.
func TestPropertyAppendJSON(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 50
	}
	for it := range iterations {
		r := rand.New(rand.NewPCG(uint64(it), 7))
		msgs := randomMessages(r, escapedStrings[:1+r.IntN(len(escapedStrings))], r.IntN(12))
		for _, name := range render.Names() {
			checkAppendJSON(t, name, msgs)
		}
	}
}

// FuzzAppendJSON: random messages with the fuzzer's strings in every
// field encode alike in every format. Seeds are in
// testdata/fuzz/FuzzAppendJSON.
func FuzzAppendJSON(f *testing.F) {
	f.Add(uint64(1), "<b>", "\u2028\xff")
	f.Fuzz(func(t *testing.T, seed uint64, a, b string) {
		msgs := randomMessages(rand.New(rand.NewPCG(seed, 0)), []string{a, b}, 1+int(seed%8))
		for _, name := range render.Names() {
			checkAppendJSON(t, name, msgs)
		}
	})
}

// BenchmarkAppendJSON compares AppendJSON with marshalling Encode's value
// by reflection, on a context of a dozen messages of about 30 kB.
func BenchmarkAppendJSON(b *testing.B) {
	var steps []agentmem.Step
	steps = append(steps, &agentmem.SystemPromptStep{Content: strings.Repeat("You are a careful coder. ", 40)}, &agentmem.TaskStep{Task: "Fix the failing test in pkg/a."})
	for i := range 6 {
		result := strings.Repeat(fmt.Sprintf("func f%d(x int) int { return x * %d } // line of \"file\" %d\n", i, i, i), 60)
		steps = append(steps, &agentmem.ActionStep{
			ModelOutput: "Let me read the file.",
			ToolCalls:   []agentmem.ToolCall{{ID: fmt.Sprintf("call_%d", i), Name: "read_file", Arguments: `{"path": "a.go"}`}},
			Results:     []agentmem.ToolResult{{CallID: fmt.Sprintf("call_%d", i), Content: result}},
		})
	}
	opts := jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsontext.EscapeForHTML(false))
	for _, f := range []agentmem.Format{render.OpenAI, render.Anthropic} {
		var msgs []agentmem.Message
		for _, s := range steps {
			msgs = append(msgs, stepMessages(f, s, false)...)
		}
		msgs, _ = f.Assemble(msgs, nil)
		b.Run(f.Name()+"/reflect", func(b *testing.B) {
			b.ReportAllocs()
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				wire, _ := render.Encode(f.Name(), msgs)
				if err := jsonv2.MarshalWrite(&buf, wire, opts); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
		b.Run(f.Name()+"/append", func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				var err error
				if buf, err = render.AppendJSON(buf[:0], f.Name(), msgs); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}
