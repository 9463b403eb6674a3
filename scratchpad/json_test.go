package scratchpad

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestMarshalEmpty(t *testing.T) {
	b, err := New(Options{}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":1,"variables":{},"observations":[],"failures":[]}`; string(b) != want {
		t.Errorf("MarshalJSON() = %s, want %s", b, want)
	}
}

func TestMarshalGolden(t *testing.T) {
	p := New(Options{})
	p.Store("username", "<john & doe>")
	p.Store("user_id", 12345)
	p.Observe("Found user in database")
	p.Fail("tried \"john\"")
	b, err := json.Marshal(p) // through encoding/json, as callers will
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"variables":{"user_id":12345,"username":"\u003cjohn \u0026 doe\u003e"},` +
		`"observations":["Found user in database"],"failures":["tried \"john\""]}`
	if string(b) != want {
		t.Errorf("json.Marshal =\n%s\nwant\n%s", b, want)
	}
	direct, _ := p.MarshalJSON()
	if !strings.Contains(string(direct), `"<john & doe>"`) {
		t.Errorf("MarshalJSON escapes HTML: %s", direct)
	}
}

func TestRoundTrip(t *testing.T) {
	opts := Options{MaxObservations: 4, MaxFailures: 3}
	p := New(opts)
	p.Store("a", map[string]any{"nested": []any{1, "two", nil, true}})
	p.Store("b", "multi\nline ✓")
	p.Store("c", json.RawMessage(`1e400`))
	for i := range 9 {
		p.Observe(fmt.Sprintf("observation %d", i))
		p.Fail(fmt.Sprintf("failure %d", i))
	}
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	q := New(opts)
	q.Store("stale", 1)
	q.Observe("stale")
	if err := q.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Keys(), q.Keys()) || !slices.Equal(p.Observations(), q.Observations()) || !slices.Equal(p.Failures(), q.Failures()) {
		t.Fatalf("round trip differs:\n%s\n%s", p.Context(), q.Context())
	}
	for _, k := range p.Keys() {
		a, _ := p.Recall(k)
		b, _ := q.Recall(k)
		if string(a) != string(b) {
			t.Errorf("Recall(%q): %s != %s", k, a, b)
		}
	}
	if p.Context() != q.Context() {
		t.Errorf("Context differs:\n%s\n%s", p.Context(), q.Context())
	}
	b2, _ := q.MarshalJSON()
	if string(b) != string(b2) {
		t.Errorf("re-marshal differs:\n%s\n%s", b, b2)
	}

	// Through encoding/json with the Pad in a struct.
	type state struct {
		Pad *Pad `json:"pad"`
	}
	enc, err := json.Marshal(state{p})
	if err != nil {
		t.Fatal(err)
	}
	dec := state{Pad: New(opts)}
	if err := json.Unmarshal(enc, &dec); err != nil {
		t.Fatal(err)
	}
	if dec.Pad.Context() != p.Context() {
		t.Errorf("embedded round trip differs:\n%s\n%s", p.Context(), dec.Pad.Context())
	}
}

func TestUnmarshalVersions(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"variables":{}}`,
		`{"version":0}`,
		`{"version":2}`,
		`{"version":-1}`,
		`{"version":"1"}`,
		`{"version":1.5}`,
		`{"version":null}`,
	} {
		err := New(Options{}).UnmarshalJSON([]byte(in))
		if !errors.Is(err, ErrInvalidSnapshot) || !strings.Contains(err.Error(), "version") {
			t.Errorf("UnmarshalJSON(%s) = %v, want ErrInvalidSnapshot about the version", in, err)
		}
	}
	for _, in := range []string{`{"version":1}`, `{"version":1,"variables":null,"observations":null,"failures":null}`} {
		if err := New(Options{}).UnmarshalJSON([]byte(in)); err != nil {
			t.Errorf("UnmarshalJSON(%s) = %v", in, err)
		}
	}
}

func TestUnmarshalMalformed(t *testing.T) {
	for _, in := range []string{
		``,
		`null`,
		`[]`,
		`"x"`,
		`{"version":1`,
		`{"version":1} {}`,
		`{"version":1,"extra":true}`,
		`{"Version":1}`,
		`{"version":1,"variables":[]}`,
		`{"version":1,"variables":{"a":}}`,
		`{"version":1,"observations":"x"}`,
		`{"version":1,"observations":[1]}`,
		`{"version":1,"failures":{}}`,
	} {
		err := New(Options{}).UnmarshalJSON([]byte(in))
		if !errors.Is(err, ErrInvalidSnapshot) {
			t.Errorf("UnmarshalJSON(%s) = %v, want ErrInvalidSnapshot", in, err)
		}
	}
}

func TestUnmarshalBounds(t *testing.T) {
	opts := Options{MaxVariables: 2, MaxValueBytes: 8, MaxObservations: 2, MaxFailures: 1, MaxEntryBytes: 20}
	errCases := []struct {
		in   string
		want error
	}{
		{`{"version":1,"variables":{"a":1,"b":2,"c":3}}`, ErrFull},
		{`{"version":1,"variables":{"":1}}`, ErrInvalidKey},
		{`{"version":1,"variables":{"a\u0000":1}}`, ErrInvalidKey},
		{`{"version":1,"variables":{"` + strings.Repeat("k", 129) + `":1}}`, ErrInvalidKey},
		{`{"version":1,"variables":{"a":"123456789"}}`, ErrValueTooLarge},
	}
	for _, c := range errCases {
		p := New(opts)
		p.Store("keep", 1)
		p.Observe("keep")
		err := p.UnmarshalJSON([]byte(c.in))
		if !errors.Is(err, c.want) {
			t.Errorf("UnmarshalJSON(%.60s) = %v, want %v", c.in, err, c.want)
		}
		if got := p.Context(); got != "Stored Variables:\n  keep: 1\nObservations:\n  - keep" {
			t.Errorf("failed UnmarshalJSON changed the pad:\n%s", got)
		}
	}

	p := New(opts)
	in := `{"version":1,"variables":{"a":  [ 1 , 2 ] },` +
		`"observations":["o1"," o2 ","","o3 is a long observation that will be cut"],` +
		`"failures":["f1","f2"]}`
	if err := p.UnmarshalJSON([]byte(in)); err != nil {
		t.Fatal(err)
	}
	if v, _ := p.Recall("a"); string(v) != `[1,2]` {
		t.Errorf("value not compacted: %s", v)
	}
	wantObs := []string{"o2", "o3 is" + truncationMarker}
	if got := p.Observations(); !slices.Equal(got, wantObs) {
		t.Errorf("Observations() = %q, want %q", got, wantObs)
	}
	if got := p.Failures(); !slices.Equal(got, []string{"f2"}) {
		t.Errorf("Failures() = %q", got)
	}
}
