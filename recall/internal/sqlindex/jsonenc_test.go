package sqlindex

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/recall"
)

var jsonStrings = []string{
	"", "session", "s1#42", "café", "σίσυφοσ", `say "hi"`, `back\\slash`, "<b>&</b>", "tab\there", "nl\n",
	"\x00", "\x7f", "\u2028", "a\u2029b", "\xff", "ok\xc3", "\U0001F600", "2024112415",
}

// AppendJSONString writes what encoding/json writes, escapes included.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendJSONString(%q) = %s, want x%s", s, got, want)
		}
	})
}

// A document's metadata column is what encoding/json writes of the map:
// its keys in order, its strings escaped as it escapes them.
func TestMetadataJSON(t *testing.T) {
	many := map[string]string{}
	for i := range 20 {
		many[fmt.Sprintf("k%02d", 19-i)] = fmt.Sprint(i)
	}
	cases := []map[string]string{
		{"session": "s1", "step": "42", "kind": "action", "user": "alice", "agent": "coder"},
		{"z": "1", "a": "2", "é": "<&>", "\u2028": "\xff", `"q"`: "\n"},
		many,
	}
	for i, s := range jsonStrings {
		cases = append(cases, map[string]string{s: jsonStrings[len(jsonStrings)-1-i]})
	}
	for _, m := range cases {
		want, _ := json.Marshal(m)
		if got := MetadataJSON(recallDoc(m)); got == nil || *got != string(want) {
			t.Errorf("MetadataJSON(%q) = %v, want %s", m, got, want)
		}
	}
	if got := MetadataJSON(recallDoc(nil)); got != nil {
		t.Errorf("MetadataJSON of no metadata = %q, want nil", *got)
	}
}

func recallDoc(m map[string]string) recall.Doc { return recall.Doc{Metadata: m} }
