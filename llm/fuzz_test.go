package llm

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzContentUnmarshal checks that decoding arbitrary bytes into Content
// never panics and that whatever decodes survives marshal → unmarshal
// unchanged.
func FuzzContentUnmarshal(f *testing.F) {
	for _, s := range []string{
		`"hello"`, `null`, `""`, `[]`, `42`,
		`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"http://x","detail":"high"}}]`,
		`[{"type":"image_url","image_url":"data:image/png;base64,AA=="}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Content
		if err := json.Unmarshal(data, &c); err != nil {
			return
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("Marshal(%#v) after decoding %q: %v", c, data, err)
		}
		var c2 Content
		if err := json.Unmarshal(b, &c2); err != nil {
			t.Fatalf("Unmarshal(%s) (re-encoded from %q): %v", b, data, err)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip changed content:\n in   %q\n dec  %#v\n enc  %s\n dec2 %#v", data, c, b, c2)
		}
		_ = c.String()
	})
}
