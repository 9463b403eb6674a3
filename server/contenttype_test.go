package server

import (
	"strings"
	"testing"
)

// TestCheckJSONType checks the Content-Type of JSON bodies: what it
// accepts, what it says of the rest, and that the usual one costs no
// allocation.
func TestCheckJSONType(t *testing.T) {
	for _, c := range []struct{ ct, want string }{
		{"application/json", ""},
		{"application/json; charset=utf-8", ""},
		{"Application/JSON; charset=UTF-8", ""},
		{"", "Content-Type is missing"},
		{"text/plain", `not "text/plain"`},
		{"application/json; charset", `not "application/json; charset"`},
		{"application/json; charset=latin1", `must be UTF-8, not "latin1"`},
	} {
		e := checkJSONType(c.ct)
		switch {
		case c.want == "" && e != nil:
			t.Errorf("%q: refused: %s", c.ct, e.Message)
		case c.want != "" && e == nil:
			t.Errorf("%q: accepted", c.ct)
		case e != nil && (e.Status != 415 || e.Field != "Content-Type" || !strings.Contains(e.Message, c.want)):
			t.Errorf("%q: %d %s %q, want 415 Content-Type and %q", c.ct, e.Status, e.Field, e.Message, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { checkJSONType("application/json") }); n != 0 {
		t.Errorf("checking application/json allocates %v times", n)
	}
}

func TestIsEnvelope(t *testing.T) {
	for body, want := range map[string]bool{
		`{"type":"task","task":"x"}`:                  false,
		`{ "type":"task","task":"x"}`:                 false,
		`{"task":"x","type":"task"}`:                  false,
		`{"types":1,"steps":[]}`:                      true,
		`{"steps":[{"type":"task","task":"x"}]}`:      true,
		`{"compaction":{"working":[]}}`:               true,
		`{"type\u0073":[],"steps":[]}`:                true,
		`{"task":"x","steps":"in a step's own text"}`: true,
	} {
		if got := isEnvelope([]byte(body)); got != want {
			t.Errorf("isEnvelope(%s) = %v, want %v", body, got, want)
		}
	}
}
