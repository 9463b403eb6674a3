package jsoncheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		in     string
		path   string // "" with reason "": accepted
		reason string // a part of the reason
	}{
		{in: `{}`},
		{in: ` [1, "a", {"b": null}, true] `},
		{in: `"text"`},
		{in: `{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}`}, // the same key in different objects
		{in: `{"smile":"\ud83d\ude00","path":"C:\\ud800"}`},
		{in: `{"é":"ü","日本":"語"}`},

		{in: `{"a":1,"a":2}`, path: "a", reason: "repeated key"},
		{in: `{"a":1,"\u0061":2}`, path: "a", reason: "repeated key"},
		{in: `{"steps":[{"type":"task"},{"type":"task","metadata":{"k":"1","k":"2"}}]}`, path: "steps[1].metadata.k", reason: "repeated key"},
		{in: `[{"x":[0,{"a b":1,"a b":2}]}]`, path: `[0].x[1]["a b"]`, reason: "repeated key"},
		{in: `{"a":{},"a":{}}`, path: "a", reason: "repeated key"},

		{in: "{\"text\":\"ok\",\"task\":\"\xc3\"}", path: "task", reason: "not valid UTF-8 (byte 21)"},
		{in: "[\"a\",\"b\xff\"]", path: "[1]", reason: "not valid UTF-8"},
		{in: "{\"k\xff\":1}", path: `["k\xff"]`, reason: "not valid UTF-8"},
		{in: "\"\xfe\"", path: "", reason: "not valid UTF-8"},
		{in: `{"m":[{"content":"\ud800"}]}`, path: "m[0].content", reason: "lone UTF-16 surrogate"},
		{in: `{"a":"\udfff\ud800"}`, path: "a", reason: "lone UTF-16 surrogate"},

		{in: `{"a":`, reason: "malformed JSON"},
		{in: `hello`, reason: "malformed JSON"},
		{in: ``, reason: "malformed JSON"},
		{in: `{} {}`, reason: "data after the JSON value"},
		{in: `{}x`, reason: "data after the JSON value"},
		{in: `{"a" 1}`, reason: "malformed JSON"},
	} {
		err := Check([]byte(c.in))
		if c.reason == "" {
			if err != nil {
				t.Errorf("Check(%q) = %v, want nil", c.in, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Check(%q) = %v, want an *Error", c.in, err)
			continue
		}
		if e.Path != c.path || !strings.Contains(e.Reason, c.reason) {
			t.Errorf("Check(%q) = path %q reason %q, want path %q and %q", c.in, e.Path, e.Reason, c.path, c.reason)
		}
	}
}

// TestLongKeyInPath: a path shows at most maxKeyInPath bytes of a key.
func TestLongKeyInPath(t *testing.T) {
	k := strings.Repeat("é", 100)
	err := Check([]byte(`{"` + k + `":1,"` + k + `":2}`))
	var e *Error
	if !errors.As(err, &e) || len(e.Path) > maxKeyInPath+10 || !utf8.ValidString(e.Path) || !strings.HasSuffix(e.Path, `..."]`) {
		t.Errorf("Check: %v", err)
	}
}

// keyTokens counts the keys of every object of a valid JSON text.
func keyTokens(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct{ object, key bool }
	var stack []level
	n := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			top := &stack[len(stack)-1]
			if _, ok := tok.(string); ok && !top.key {
				n++
				top.key = true
				continue
			}
			if tok != json.Delim('}') {
				top.key = false
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, level{object: true})
		case json.Delim('['):
			stack = append(stack, level{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// decodedKeys counts the keys of every object of a decoded value.
func decodedKeys(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		n += len(x)
		for _, e := range x {
			n += decodedKeys(e)
		}
	case []any:
		for _, e := range x {
			n += decodedKeys(e)
		}
	}
	return n
}

// FuzzCheck: Check accepts exactly the JSON texts encoding/json decodes
// without loss: valid UTF-8, no lone surrogate escape, no key repeated in
// an object (checked here by counting: decoding into maps keeps one entry
// per key); and every refusal is an *Error with a valid UTF-8 path
// pointing into the text.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `[{"x":"\ud800"}]`, "{\"k\":\"\xff\"}", `{"a":[1,{"b":{"c":2,"c":3}}]}`, `{} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check: %v is not an *Error", err)
			}
			if !utf8.ValidString(e.Path) || !utf8.ValidString(e.Reason) || e.Reason == "" || e.Offset < 0 || e.Offset > int64(len(data)) {
				t.Fatalf("Check: bad error %+v", e)
			}
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		decErr := dec.Decode(&v)
		if decErr == nil {
			if _, err := dec.Token(); err != io.EOF {
				decErr = errors.New("trailing data")
			}
		}
		lossless := decErr == nil && utf8.Valid(data) && LoneSurrogate(data) < 0 && keyTokens(data) == decodedKeys(v)
		if lossless != (err == nil) {
			t.Fatalf("Check(%q) = %v, but the text decodes without loss: %v (decode error %v)", data, err, lossless, decErr)
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`[`)
	for i := range 2000 {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`{"type":"action","id":"step-1234","metadata":{"a":"b","c":"d"},"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"/src/main.go\"}"}}],"results":[{"call_id":"c1","content":"package main\nfunc main() { println(\"hello, world\") }"}]}`)
	}
	sb.WriteString(`]`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := Check(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValid(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`[`)
	for i := range 2000 {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`{"type":"action","id":"step-1234","metadata":{"a":"b","c":"d"},"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"/src/main.go\"}"}}],"results":[{"call_id":"c1","content":"package main\nfunc main() { println(\"hello, world\") }"}]}`)
	}
	sb.WriteString(`]`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		json.Valid(data)
	}
}

// fieldsTarget is a struct like the request types: a tagged field, an
// untagged one, an embedded struct, a pointer, a map, a slice of structs
// and a type that decodes itself.
type fieldsTarget struct {
	fieldsInner
	Name    string            `json:"name"`
	Plain   int               // no tag: the member is "Plain"
	Ptr     *fieldsInner      `json:"ptr,omitempty"`
	Labels  map[string]string `json:"labels"`
	Items   []fieldsInner     `json:"items"`
	Raw     json.RawMessage   `json:"raw"`
	Skipped string            `json:"-"`
}

type fieldsInner struct {
	ID string `json:"id"`
}

func TestFields(t *testing.T) {
	typ := reflect.TypeFor[fieldsTarget]()
	for _, c := range []struct {
		in, path, reason string
	}{
		{in: `{"id":"a","name":"n","Plain":1,"ptr":{"id":"b"},"labels":{"Name":"x","NAME":"y"},"items":[{"id":"c"}],"raw":{"Anything":1}}`},
		{in: `null`},
		{in: `{"ptr":null,"items":null}`},
		{in: `{"Name":"n"}`, path: "Name", reason: `case-sensitive, and this one is "name"`},
		{in: `{"name":"a","NAME":"b"}`, path: "NAME", reason: "case-sensitive"},
		{in: `{"ID":"a"}`, path: "ID", reason: `this one is "id"`},
		{in: `{"plain":1}`, path: "plain", reason: `this one is "Plain"`},
		{in: `{"ptr":{"Id":"b"}}`, path: "ptr.Id", reason: "case-sensitive"},
		{in: `{"items":[{"id":"a"},{"iD":"b"}]}`, path: "items[1].iD", reason: "case-sensitive"},
		{in: `{"colour":"red"}`, path: "colour", reason: "unknown member"},
		{in: `{"Skipped":"x"}`, path: "Skipped", reason: "unknown member"},
		{in: ` { "name" : "a" , "items" : [ { "id" : "x" } , { "i\u0064" : "y" } ] , "x y" : 1 } `, path: `["x y"]`, reason: "unknown member"},
	} {
		err := Fields([]byte(c.in), typ)
		if c.reason == "" {
			if err != nil {
				t.Errorf("Fields(%s) = %v", c.in, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Path != c.path || !strings.Contains(e.Reason, c.reason) {
			t.Errorf("Fields(%s) = %v, want %s: %s", c.in, err, c.path, c.reason)
		}
	}
}
