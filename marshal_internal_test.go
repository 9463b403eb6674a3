package agentmem

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"
)

// encodeTarget has what the step types have: strings, omitempty fields
// of every kind, pointers, maps, slices, times, durations, raw JSON.
type encodeTarget struct {
	S    string            `json:"s"`
	O    string            `json:"o,omitempty"`
	N    int               `json:"n,omitempty"`
	F    float64           `json:"f,omitempty"`
	B    bool              `json:"b,omitempty"`
	P    *int              `json:"p,omitempty"`
	M    map[string]string `json:"m,omitempty"`
	L    []string          `json:"l,omitempty"`
	E    []string          `json:"e"`
	T    time.Time         `json:"t,omitempty"`
	D    time.Duration     `json:"d,omitempty"`
	R    json.RawMessage   `json:"r,omitempty"`
	Any  any               `json:"any,omitempty"`
	Skip string            `json:"-"`
}

// FuzzMarshalJSON: marshalJSON writes exactly what encoding/json writes,
// for any valid UTF-8 strings (HTML characters, control characters,
// U+2028), numbers, maps and times. (Of invalid UTF-8, which no valid
// step holds, encoding/json writes the escape \ufffd and marshalJSON the
// character U+FFFD: the same text.)
func FuzzMarshalJSON(f *testing.F) {
	f.Add("a<b>&c\u2028\x00", "k", int64(3), 1.5, true, int64(1700000000123456789), int64(5))
	f.Add("", "", int64(0), 0.0, false, int64(0), int64(0))
	f.Add("日本語 \"quoted\" \\ \t\n", "é", int64(-1), 1e300, false, int64(-1), int64(-7))
	f.Fuzz(func(t *testing.T, s, k string, n int64, fl float64, b bool, ns, d int64) {
		if !utf8.ValidString(s) || !utf8.ValidString(k) {
			return
		}
		v := encodeTarget{S: s, O: s, N: int(n), F: fl, B: b, M: map[string]string{k: s, "z" + k: k}, L: []string{s, k},
			T: time.Unix(0, ns).UTC(), D: time.Duration(d), Any: map[string]any{s: []any{n, fl, b, nil}}, Skip: s}
		if n%2 == 0 {
			v.P = new(int)
			v.R = json.RawMessage(`{"x": [1, 2]}`)
		}
		want, werr := json.Marshal(v)
		got, gerr := marshalJSON(v)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("encoding/json: %v; marshalJSON: %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("marshalJSON wrote\n%s\nencoding/json\n%s", got, want)
		}
	})
}

// TestMarshalStepAsEncodingJSON: every kind of step, with text that
// needs escaping, encodes byte for byte as it does with encoding/json as
// the encoder, nested values (tool calls, content parts) included.
func TestMarshalStepAsEncodingJSON(t *testing.T) {
	text := "<tag> & \"q\" \u2028 é \x7f \x00"
	when := time.Date(2026, 11, 24, 12, 0, 0, 123456789, time.UTC)
	info := StepInfo{ID: "s<1>", Number: 4, Time: when, Metadata: map[string]string{"b": text, "a": "1"}}
	steps := []Step{
		&SystemPromptStep{StepInfo: info, Content: text},
		&TaskStep{StepInfo: info, Task: text},
		&ActionStep{StepInfo: info, Thought: text, ToolCalls: []ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":"<b>"}`}},
			Results: []ToolResult{{CallID: "c1", Content: text, IsError: true}}, Duration: 1500 * time.Millisecond, Usage: &Usage{InputTokens: 3}},
		&PlanningStep{StepInfo: info, Plan: text},
		&ScratchpadStep{StepInfo: info, Content: text},
		&FinalAnswerStep{StepInfo: info, Answer: text},
		&SummaryStep{StepInfo: info, Summary: text, Covers: []Range{{From: 1, To: 3}}},
		&MessageStep{StepInfo: info, Message: Message{Role: RoleUser, Content: Content{TextPart(text), ImagePart(Image{URL: "https://x/<y>"})}}},
		&MessageStep{StepInfo: info, Message: Message{Role: RoleAssistant, Content: Content{TextPart(text)}, ToolCalls: []ToolCall{{ID: "c", Name: "g", Arguments: "{}"}}}},
	}
	encode := func() [][]byte {
		var out [][]byte
		for _, s := range steps {
			b, err := MarshalStep(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		return out
	}
	got := encode()
	engine := marshalEngine
	marshalEngine = json.Marshal
	want := encode()
	var viaMethod [][]byte // encoding/json through the steps' MarshalJSON
	for _, s := range steps {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		viaMethod = append(viaMethod, b)
	}
	marshalEngine = engine
	for i := range steps {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("%s:\n%s\nencoding/json:\n%s", steps[i].Kind(), got[i], want[i])
		}
		if !bytes.Equal(got[i], viaMethod[i]) {
			t.Errorf("%s:\n%s\nencoding/json through MarshalJSON:\n%s", steps[i].Kind(), got[i], viaMethod[i])
		}
	}
}
