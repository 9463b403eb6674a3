package scratchpad

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestDefaults(t *testing.T) {
	want := Options{
		MaxVariables:        256,
		MaxValueBytes:       16 * 1024,
		MaxObservations:     50,
		MaxFailures:         20,
		ContextObservations: 5,
		ContextFailures:     3,
		MaxEntryBytes:       4 * 1024,
	}
	if got := (Options{}).withDefaults(); got != want {
		t.Errorf("Options{}.withDefaults() = %+v, want %+v", got, want)
	}
	neg := Options{-1, -1, -1, -1, -1, -1, -1}
	if got := neg.withDefaults(); got != want {
		t.Errorf("negative options: got %+v, want %+v", got, want)
	}
	set := Options{1, 2, 3, 4, 5, 6, 7}
	if got := set.withDefaults(); got != set {
		t.Errorf("set options changed: got %+v, want %+v", got, set)
	}
}

func TestStoreRecall(t *testing.T) {
	p := New(Options{})
	values := []struct {
		key   string
		value any
		want  string
	}{
		{"user_id", 12345, `12345`},
		{"username", "john_doe", `"john_doe"`},
		{"html", "<a href=\"x\">&</a>", `"<a href=\"x\">&</a>"`},
		{"null", nil, `null`},
		{"list", []int{1, 2, 3}, `[1,2,3]`},
		{"object", map[string]any{"b": true, "a": 1.5}, `{"a":1.5,"b":true}`},
		{"raw", json.RawMessage(" { \"z\" : 1 ,\n \"a\" : [ ] } "), `{"z":1,"a":[]}`},
		{"big", json.RawMessage(`12345678901234567890123`), `12345678901234567890123`},
		{"struct", struct {
			Name string `json:"name"`
			Age  int    `json:"age"`
		}{"Ann", 41}, `{"name":"Ann","age":41}`},
		{"ключ 🔑", "значение", `"значение"`},
	}
	for _, v := range values {
		if err := p.Store(v.key, v.value); err != nil {
			t.Fatalf("Store(%q): %v", v.key, err)
		}
	}
	for _, v := range values {
		got, ok := p.Recall(v.key)
		if !ok || string(got) != v.want {
			t.Errorf("Recall(%q) = %s, %v; want %s, true", v.key, got, ok, v.want)
		}
	}
	if got, ok := p.Recall("missing"); ok || got != nil {
		t.Errorf("Recall(missing) = %s, %v; want nil, false", got, ok)
	}

	// Replacing a value.
	if err := p.Store("user_id", "abc"); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.Recall("user_id"); string(got) != `"abc"` {
		t.Errorf("after replace, Recall = %s", got)
	}

	// The recalled slice is a copy.
	got, _ := p.Recall("username")
	got[1] = 'X'
	if again, _ := p.Recall("username"); string(again) != `"john_doe"` {
		t.Errorf("mutating a recalled value changed the pad: %s", again)
	}

	// Keys are sorted.
	keys := p.Keys()
	if !slices.IsSorted(keys) || len(keys) != len(values) {
		t.Errorf("Keys() = %q, want %d sorted keys", keys, len(values))
	}

	if !p.Delete("username") {
		t.Error("Delete(username) = false, want true")
	}
	if p.Delete("username") {
		t.Error("second Delete(username) = true, want false")
	}
	if _, ok := p.Recall("username"); ok {
		t.Error("deleted key still recalled")
	}
}

func TestStoreInvalidKey(t *testing.T) {
	p := New(Options{})
	for _, key := range []string{
		"",
		strings.Repeat("k", MaxKeyBytes+1),
		strings.Repeat("é", MaxKeyBytes/2) + "x", // 129 bytes
		"bad\xffutf8",
		"new\nline",
		"tab\there",
		"nul\x00",
		"del\x7f",
		"c1\u0085",
	} {
		err := p.Store(key, 1)
		if !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Store(%q) error = %v, want ErrInvalidKey", key, err)
		}
	}
	for _, key := range []string{"a", strings.Repeat("k", MaxKeyBytes), strings.Repeat("é", MaxKeyBytes/2), "with space", "emoji 😀", "user.id/2"} {
		if err := p.Store(key, 1); err != nil {
			t.Errorf("Store(%q) = %v, want nil", key, err)
		}
	}
	if n := len(p.Keys()); n != 6 {
		t.Errorf("%d keys stored, want 6", n)
	}
}

func TestStoreInvalidValue(t *testing.T) {
	p := New(Options{})
	for _, v := range []any{make(chan int), func() {}, math.NaN(), math.Inf(1), json.RawMessage(`{"a":`)} {
		if err := p.Store("k", v); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("Store(%T) error = %v, want ErrInvalidValue", v, err)
		}
	}
	if len(p.Keys()) != 0 {
		t.Error("a failed Store changed the pad")
	}
}

func TestStoreValueTooLarge(t *testing.T) {
	p := New(Options{MaxValueBytes: 10})
	if err := p.Store("k", "12345678"); err != nil { // "12345678" is 10 bytes
		t.Fatalf("value of exactly the limit: %v", err)
	}
	err := p.Store("k", "123456789")
	if !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("error = %v, want ErrValueTooLarge", err)
	}
	if !strings.Contains(err.Error(), "11 bytes") || !strings.Contains(err.Error(), "10") {
		t.Errorf("error message %q should give the size and the limit", err)
	}
	if got, _ := p.Recall("k"); string(got) != `"12345678"` {
		t.Errorf("a refused value replaced the old one: %s", got)
	}
	// The limit applies to the encoding without HTML escaping.
	if err := p.Store("k", "<<<<<<<<"); err != nil {
		t.Errorf("HTML characters counted as escapes: %v", err)
	}
}

func TestStoreFull(t *testing.T) {
	p := New(Options{MaxVariables: 2})
	for _, k := range []string{"a", "b"} {
		if err := p.Store(k, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Store("c", 1); !errors.Is(err, ErrFull) {
		t.Fatalf("third key: error = %v, want ErrFull", err)
	}
	if err := p.Store("a", 2); err != nil {
		t.Errorf("replacing in a full pad: %v", err)
	}
	p.Delete("b")
	if err := p.Store("c", 3); err != nil {
		t.Errorf("after Delete: %v", err)
	}
	if got := p.Keys(); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Keys() = %q", got)
	}
}

func TestRetention(t *testing.T) {
	p := New(Options{MaxObservations: 3, MaxFailures: 2})
	if got := p.Observations(); len(got) != 0 {
		t.Errorf("new pad has observations %q", got)
	}
	var want []string
	for i := range 100 {
		s := fmt.Sprintf("obs %d", i)
		p.Observe(s)
		want = append(want, s)
		if len(want) > 3 {
			want = want[1:]
		}
		if got := p.Observations(); !slices.Equal(got, want) {
			t.Fatalf("after %d observations: %q, want %q", i+1, got, want)
		}
	}
	for i := range 5 {
		p.Fail(fmt.Sprintf("fail %d", i))
	}
	if got, want := p.Failures(), []string{"fail 3", "fail 4"}; !slices.Equal(got, want) {
		t.Errorf("Failures() = %q, want %q", got, want)
	}
	// The returned slices are copies.
	obs := p.Observations()
	obs[0] = "changed"
	if p.Observations()[0] == "changed" {
		t.Error("mutating Observations() changed the pad")
	}
}

func TestEntryCleaning(t *testing.T) {
	p := New(Options{})
	p.Observe("  padded\t\n")
	p.Observe("")
	p.Observe(" \n\t ")
	p.Observe("line one\r\nline two\rline three")
	p.Observe("bad \xff byte")
	want := []string{"padded", "line one\nline two\nline three", "bad \uFFFD byte"}
	if got := p.Observations(); !slices.Equal(got, want) {
		t.Errorf("Observations() = %q, want %q", got, want)
	}
	p.Fail("   ")
	if got := p.Failures(); len(got) != 0 {
		t.Errorf("blank failure recorded: %q", got)
	}
}

func TestTruncation(t *testing.T) {
	const max = 40
	p := New(Options{MaxEntryBytes: max})
	exact := strings.Repeat("x", max)
	p.Observe(exact)
	if got := p.Observations()[0]; got != exact {
		t.Errorf("entry of exactly MaxEntryBytes changed: %q", got)
	}

	long := strings.Repeat("é", 100) // 200 bytes, two-byte characters
	p.Fail(long)
	got := p.Failures()[0]
	if len(got) > max || !strings.HasSuffix(got, truncationMarker) || !utf8.ValidString(got) {
		t.Errorf("truncated entry %q (%d bytes): want at most %d valid bytes ending in %q", got, len(got), max, truncationMarker)
	}
	if !strings.HasPrefix(long, strings.TrimSuffix(got, truncationMarker)) {
		t.Errorf("truncated entry %q is not a prefix of the text", got)
	}
	if len(got) < max-utf8.UTFMax {
		t.Errorf("truncated entry %q is shorter than needed", got)
	}

	// No white space is left before the marker.
	p.Observe("word " + strings.Repeat(" ", 30) + strings.Repeat("y", 30))
	if got := p.Observations()[1]; got != "word"+truncationMarker {
		t.Errorf("got %q, want %q", got, "word"+truncationMarker)
	}

	// A limit too small for the marker still bounds the entry.
	tiny := New(Options{MaxEntryBytes: 5})
	tiny.Observe("abcdefghij")
	if got := tiny.Observations(); !slices.Equal(got, []string{"abcde"}) {
		t.Errorf("tiny limit: %q", got)
	}
}

func TestCleanEntryIdempotent(t *testing.T) {
	inputs := []string{"", " a ", "a\r\r\nb", "\xff\xfe", strings.Repeat("ab ", 50), strings.Repeat("界", 40) + " z", "x" + strings.Repeat(" ", 40) + "y"}
	for _, max := range []int{1, 3, 5, 15, 16, 17, 20, 64, 4096} {
		for _, in := range inputs {
			once, _ := cleanEntry(in, max)
			twice, truncated := cleanEntry(once, max)
			if once != twice || truncated {
				t.Errorf("cleanEntry(%q, %d) = %q, then %q (truncated %v)", in, max, once, twice, truncated)
			}
			if len(once) > max {
				t.Errorf("cleanEntry(%q, %d) = %q is too long", in, max, once)
			}
		}
	}
}

func TestContextGolden(t *testing.T) {
	p := New(Options{})
	p.Store("username", "john_doe")
	p.Store("user_id", 12345)
	p.Store("roles", []string{"admin", "dev"})
	p.Store("empty", "")
	p.Store("note", "two\nlines")
	for i := 1; i <= 7; i++ {
		p.Observe(fmt.Sprintf("observation %d", i))
	}
	for i := 1; i <= 4; i++ {
		p.Fail(fmt.Sprintf("failure %d", i))
	}
	p.Observe("Found user in database")
	const want = `Stored Variables:
  empty: ""
  note: two
    lines
  roles: ["admin","dev"]
  user_id: 12345
  username: john_doe
Observations:
  - observation 4
  - observation 5
  - observation 6
  - observation 7
  - Found user in database
Failed Attempts:
  - failure 2
  - failure 3
  - failure 4`
	if got := p.Context(); got != want {
		t.Errorf("Context() =\n%s\nwant\n%s", got, want)
	}
}

func TestContextSections(t *testing.T) {
	p := New(Options{ContextObservations: 1, ContextFailures: 1})
	if got := p.Context(); got != "" {
		t.Errorf("empty pad: Context() = %q, want \"\"", got)
	}
	p.Fail("only a failure")
	if got, want := p.Context(), "Failed Attempts:\n  - only a failure"; got != want {
		t.Errorf("Context() = %q, want %q", got, want)
	}
	p.Clear()
	p.Observe("first")
	p.Observe("second\nmore")
	if got, want := p.Context(), "Observations:\n  - second\n    more"; got != want {
		t.Errorf("Context() = %q, want %q", got, want)
	}
	p.Clear()
	p.Store("k", map[string]int{"a": 1})
	if got, want := p.Context(), `Stored Variables:
  k: {"a":1}`; got != want {
		t.Errorf("Context() = %q, want %q", got, want)
	}
}

func TestClear(t *testing.T) {
	p := New(Options{MaxVariables: 1})
	p.Store("a", 1)
	p.Observe("o")
	p.Fail("f")
	p.Clear()
	if len(p.Keys())+len(p.Observations())+len(p.Failures()) != 0 || p.Context() != "" {
		t.Fatal("Clear left content behind")
	}
	if err := p.Store("b", 2); err != nil {
		t.Errorf("Store after Clear: %v", err)
	}
}

func TestZeroPad(t *testing.T) {
	var p Pad
	if err := p.Store("k", "v"); err != nil {
		t.Fatal(err)
	}
	for range 60 {
		p.Observe("o")
	}
	if n := len(p.Observations()); n != DefaultMaxObservations {
		t.Errorf("zero Pad keeps %d observations, want %d", n, DefaultMaxObservations)
	}
	if got := p.Context(); !strings.HasPrefix(got, "Stored Variables:\n  k: v\nObservations:") {
		t.Errorf("Context() = %q", got)
	}
	var q Pad
	if err := json.Unmarshal([]byte(`{"version":1,"variables":{"a":1}}`), &q); err != nil {
		t.Fatal(err)
	}
	if v, _ := q.Recall("a"); string(v) != "1" {
		t.Errorf("Recall = %s", v)
	}
}

func TestConcurrent(t *testing.T) {
	opts := Options{MaxVariables: 8, MaxObservations: 10, MaxFailures: 5}
	p := New(opts)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				key := fmt.Sprintf("k%d", (g*7+i)%12)
				switch i % 10 {
				case 0:
					p.Store(key, i)
				case 1:
					p.Recall(key)
				case 2:
					p.Delete(key)
				case 3:
					p.Observe(fmt.Sprintf("g%d i%d", g, i))
				case 4:
					p.Fail(fmt.Sprintf("g%d i%d", g, i))
				case 5:
					_ = p.Context()
				case 6:
					b, err := p.MarshalJSON()
					if err != nil {
						t.Error(err)
						return
					}
					if g == 0 && i%50 == 6 {
						if err := p.UnmarshalJSON(b); err != nil {
							t.Error(err)
							return
						}
					}
				case 7:
					p.Call(t.Context(), ToolStore, fmt.Sprintf(`{"key":%q,"value":[%d]}`, key, i))
				case 8:
					p.Call(t.Context(), ToolContext, "{}")
					p.Keys()
					p.Observations()
					p.Failures()
				case 9:
					if i%90 == 9 {
						p.Clear()
					}
				}
			}
		})
	}
	wg.Wait()
	if n := len(p.Keys()); n > opts.MaxVariables {
		t.Errorf("%d variables, limit %d", n, opts.MaxVariables)
	}
	if n := len(p.Observations()); n > opts.MaxObservations {
		t.Errorf("%d observations, limit %d", n, opts.MaxObservations)
	}
	if n := len(p.Failures()); n > opts.MaxFailures {
		t.Errorf("%d failures, limit %d", n, opts.MaxFailures)
	}
}
