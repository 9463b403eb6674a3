package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// reduce runs a reducer over doc, written in pieces of n bytes.
func reduce(t testing.TB, doc []byte, text int64, n int) ([]byte, *budget, bool) {
	t.Helper()
	bu := newBudget(text)
	r := newReducer(bu)
	for i := 0; i < len(doc); i += n {
		r.Write(doc[i:min(i+n, len(doc))])
	}
	out, ok := r.Result()
	return out, bu, ok
}

// TestReducer: the reducer keeps a document that fits its budget as it
// is (white space aside), cuts the strings of one that does not at a
// character or escape boundary, keeps its shape (the members after a cut
// string, their short strings), and writes valid JSON in every case.
func TestReducer(t *testing.T) {
	for _, c := range []struct {
		name, in string
		text     int64
		want     string
		cut      bool
	}{
		{"fits", `{"a": [1, -2.5e3, true, false, null], "b": {"c": "d"}, "e": []}`, 100, `{"a":[1,-2.5e3,true,false,null],"b":{"c":"d"},"e":[]}`, false},
		{"string cut", `{"text":"` + strings.Repeat("x", 1000) + `","id":"call_1"}`, 100, `{"text":"` + strings.Repeat("x", 256) + `","id":"call_1"}`, true},
		{"budget first", `{"a":"` + strings.Repeat("x", 300) + `","b":"` + strings.Repeat("y", 300) + `"}`, 400, `{"a":"` + strings.Repeat("x", 300) + `","b":"` + strings.Repeat("y", 256) + `"}`, true},
		{"not inside a character", `["` + strings.Repeat("é", 200) + `"]`, 0, `["` + strings.Repeat("é", 128) + `"]`, true},
		{"not inside an escape", `["` + strings.Repeat("a", 254) + `\u00e9\n"]`, 0, `["` + strings.Repeat("a", 254) + `"]`, true},
		{"not between a surrogate pair", `["` + strings.Repeat("a", 250) + `\ud83d\ude00b"]`, 0, `["` + strings.Repeat("a", 250) + `"]`, true},
		{"a surrogate pair kept", `["` + strings.Repeat("a", 240) + `\ud83d\ude00b"]`, 0, `["` + strings.Repeat("a", 240) + `\ud83d\ude00b"]`, false},
		{"escaped quotes", `{"k\"ey":"va\"l\\"}`, 100, `{"k\"ey":"va\"l\\"}`, false},
		{"a long key", `{"` + strings.Repeat("k", 300) + `":1,"b":2}`, 1000, `{"b":2}`, true},
		{"a long number", `[1,` + strings.Repeat("9", 100) + `,3]`, 1000, `[1,0,3]`, true},
		{"too deep", strings.Repeat("[", 70) + strings.Repeat("]", 70), 1000, strings.Repeat("[", 64) + "null" + strings.Repeat("]", 64), true},
		{"a string", `"abc"`, 10, `"abc"`, false},
		{"a number", ` 42 `, 10, `42`, false},
	} {
		for _, n := range []int{1, 7, 1 << 20} {
			got, bu, ok := reduce(t, []byte(c.in), c.text, n)
			if !ok || string(got) != c.want || bu.cut != c.cut {
				t.Errorf("%s, in pieces of %d: %v %s (cut %v), want %s (cut %v)", c.name, n, ok, got, bu.cut, c.want, c.cut)
			}
			if !json.Valid(got) {
				t.Errorf("%s: not JSON: %s", c.name, got)
			}
		}
	}
	for _, bad := range []string{``, `{`, `{"a":}`, `[1,]x`, `{"a" 1}`, "\"a\x01\"", `[1] [2]`, `{"a":"b"`} {
		if out, _, ok := reduce(t, []byte(bad), 100, 1); ok {
			t.Errorf("%q: reduced to %s", bad, out)
		}
	}
}

// TestReducerStructure: members left out when the structure is spent
// leave valid JSON, and what the reducer holds stays within its bounds
// whatever the size of the document.
func TestReducerStructure(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"choices":[`)
	for i := range 20000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"index":%d,"text":"%s"}`, i, strings.Repeat("t", 100))
	}
	b.WriteString(`],"end":true}`)
	out, bu, ok := reduce(t, b.Bytes(), 4096, 4096)
	if !ok || !json.Valid(out) || !bu.cut {
		t.Fatalf("%v cut %v: %.300s", ok, bu.cut, out)
	}
	if len(out) > 4096+structureBytes {
		t.Errorf("%d bytes written from %d", len(out), b.Len())
	}
	var doc struct {
		Choices []struct{ Index int } `json:"choices"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Choices) == 0 || doc.Choices[0].Index != 0 {
		t.Errorf("%v %d", err, len(doc.Choices))
	}
}

// FuzzReducer: whatever JSON it reads, the reducer writes valid JSON,
// within its bounds, equal to its input when nothing was cut.
func FuzzReducer(f *testing.F) {
	for _, s := range []string{`{"a":[1,"b",{"c":null}]}`, `"\ud83d\ude00"`, `["é\n\u0041"]`, `[[[[]]]]`, `{"":""}`, `0`} {
		f.Add([]byte(s), uint16(3), uint8(2))
	}
	f.Fuzz(func(t *testing.T, in []byte, text uint16, piece uint8) {
		if !json.Valid(in) {
			return
		}
		out, bu, ok := reduce(t, in, int64(text), int(piece)+1)
		if !ok {
			t.Fatalf("valid JSON %q was not reduced", in)
		}
		if !json.Valid(out) {
			t.Fatalf("%q reduced to invalid %q", in, out)
		}
		if len(out) > int(text)+structureBytes {
			t.Fatalf("%d bytes written", len(out))
		}
		if !bu.cut {
			var a, b bytes.Buffer
			_ = json.Compact(&a, in)
			_ = json.Compact(&b, out)
			if a.String() != b.String() {
				t.Fatalf("nothing cut, but %q became %q", in, out)
			}
		}
	})
}

// TestUTF8Check: invalid UTF-8 is found whatever the pieces it comes in,
// and a character split between pieces is not taken for it.
func TestUTF8Check(t *testing.T) {
	for _, c := range []struct {
		in      string
		invalid bool
	}{
		{"plain ascii", false}, {"é€😀 mixed", false}, {"bad \xff byte", true}, {"cut at the end \xe2\x82", true},
		{"a lone continuation \x80", true}, {strings.Repeat("😀", 50), false},
	} {
		for n := 1; n <= 5; n++ {
			var u utf8Check
			for i := 0; i < len(c.in); i += n {
				u.Write([]byte(c.in[i:min(i+n, len(c.in))]))
			}
			if u.Invalid() != c.invalid {
				t.Errorf("%q in pieces of %d: invalid %v", c.in, n, u.Invalid())
			}
		}
	}
}

// TestAccumulatorsBounded: a streamed reply of any size, with any number
// of tool calls or blocks, is held within the budget and the structure,
// and reported truncated.
func TestAccumulatorsBounded(t *testing.T) {
	const text = 4096
	piece := strings.Repeat("p", 1000)
	oa := openAI{}.stream(newBudget(text))
	for i := range 5000 {
		d, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece,
			"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d", i), "function": map[string]any{"name": "f", "arguments": piece}}}}}}})
		oa.event("", d)
	}
	oa.event("", []byte(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`))
	if oa.held() > text+structureBytes || !oa.truncated() {
		t.Errorf("openai: held %d, truncated %v", oa.held(), oa.truncated())
	}
	if m, ok := oa.reply(false); !ok || len(m.Text()) > text || len(m.Text()) == 0 || len(m.ToolCalls) == 0 || len(m.ToolCalls) > structureBytes/callCost {
		t.Errorf("openai: %v, %d bytes of text, %d calls", ok, len(m.Text()), len(m.ToolCalls))
	}
	an := anthropic{}.stream(newBudget(text))
	for i := range 5000 {
		start, _ := json.Marshal(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", i), "name": "f", "input": map[string]any{}}})
		delta, _ := json.Marshal(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
		an.event("content_block_start", start)
		an.event("content_block_delta", delta)
		an.event("content_block_stop", []byte(fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)))
	}
	an.event("message_stop", []byte(`{"type":"message_stop"}`))
	if an.held() > text+structureBytes || !an.truncated() {
		t.Errorf("anthropic: held %d, truncated %v", an.held(), an.truncated())
	}
	if m, ok := an.reply(false); !ok || len(m.ToolCalls) == 0 || len(m.ToolCalls) > structureBytes/callCost {
		t.Errorf("anthropic: %v, %d calls", ok, len(m.ToolCalls))
	}
}

// TestFitStep: a reply whose step would be larger than the store takes is
// cut to fit, escapes and metadata counted; one that fits is left alone.
func TestFitStep(t *testing.T) {
	small := agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text("short")}
	if cut, err := fitStep(&small); cut || err != nil || small.Text() != "short" {
		t.Errorf("a short reply: cut %v %v", cut, err)
	}
	// Control characters take 6 bytes each as JSON.
	text := strings.Repeat("\x01é<", 1<<20)
	big := agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text(text),
		ToolCalls: []agentmem.ToolCall{{ID: "c", Name: "f", Arguments: strings.Repeat("a", 2<<20)}},
		Metadata:  map[string]string{"k": strings.Repeat("m", 1000)}}
	cut, err := fitStep(&big)
	if !cut || err != nil {
		t.Fatalf("cut %v %v", cut, err)
	}
	f, err := agentmem.FoldMessages(nil, []agentmem.Message{big}, agentmem.FoldOptions{KeepPending: true, NewID: agentmem.NewID})
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.EncodeStep(f.Steps[0])
	if err != nil || len(b) > store.MaxStepBytes || len(b) < store.MaxStepBytes/2 {
		t.Errorf("the step is %d bytes as JSON: %v", len(b), err)
	}
	if !strings.HasPrefix(text, big.Text()) || !utf8.ValidString(big.Text()) || len(big.ToolCalls) != 1 {
		t.Errorf("not a prefix of the text, or the call lost")
	}
}
