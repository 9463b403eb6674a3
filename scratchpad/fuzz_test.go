package scratchpad

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"unicode/utf8"
)

// fuzzOptions are small bounds, so that fuzzing reaches them.
var fuzzOptions = Options{MaxVariables: 3, MaxValueBytes: 64, MaxObservations: 3, MaxFailures: 2, MaxEntryBytes: 32}

// checkInvariants fails t if p breaks a bound or produces invalid text.
func checkInvariants(t *testing.T, p *Pad, opts Options) {
	t.Helper()
	keys := p.Keys()
	if len(keys) > opts.MaxVariables || !slices.IsSorted(keys) {
		t.Fatalf("keys %q: unsorted or over the limit %d", keys, opts.MaxVariables)
	}
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			t.Fatalf("stored key: %v", err)
		}
		v, ok := p.Recall(k)
		if !ok || !json.Valid(v) || !utf8.Valid(v) || len(v) > opts.MaxValueBytes {
			t.Fatalf("stored value for %q: %q", k, v)
		}
	}
	for _, entries := range [][]string{p.Observations(), p.Failures()} {
		for _, e := range entries {
			if e == "" || len(e) > opts.MaxEntryBytes || !utf8.ValidString(e) {
				t.Fatalf("stored entry %q", e)
			}
		}
	}
	if n := len(p.Observations()); n > opts.MaxObservations {
		t.Fatalf("%d observations, limit %d", n, opts.MaxObservations)
	}
	if n := len(p.Failures()); n > opts.MaxFailures {
		t.Fatalf("%d failures, limit %d", n, opts.MaxFailures)
	}
	if c := p.Context(); !utf8.ValidString(c) {
		t.Fatalf("Context is not valid UTF-8: %q", c)
	}
}

func FuzzCall(f *testing.F) {
	f.Add(ToolStore, `{"key":"user_id","value":12345}`)
	f.Add(ToolRecall, `{"key":"user_id"}`)
	f.Add(ToolDelete, `{"key":"a"}`)
	f.Add(ToolObserve, `{"text":"Found user in database"}`)
	f.Add(ToolFail, `{"text":"404"}`)
	f.Add(ToolContext, ``)
	f.Add(ToolStore, `{"key":1}`)
	f.Add("unknown", `{}`)
	sentinels := []error{ErrInvalidKey, ErrInvalidValue, ErrValueTooLarge, ErrFull, ErrUnknownTool, ErrInvalidArguments}
	f.Fuzz(func(t *testing.T, name, arguments string) {
		p := New(fuzzOptions)
		p.Store("a", 1)
		p.Store("b", "two")
		p.Observe("seen")
		p.Fail("failed")
		result, err := p.Call(context.Background(), name, arguments)
		if err != nil {
			if result != "" {
				t.Errorf("error %v with result %q", err, result)
			}
			if !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(err, s) }) {
				t.Fatalf("untyped error: %v", err)
			}
			if errors.Is(err, ErrUnknownTool) == p.Handles(name) {
				t.Fatalf("Handles(%q) = %v but error %v", name, p.Handles(name), err)
			}
			var ae *ArgumentError
			if errors.As(err, &ae) && ae.Tool != name {
				t.Fatalf("ArgumentError for tool %q, called %q", ae.Tool, name)
			}
		} else if !p.Handles(name) || result == "" {
			t.Fatalf("Call(%q) = %q, nil", name, result)
		}
		if !utf8.ValidString(result) {
			t.Fatalf("result is not valid UTF-8: %q", result)
		}
		checkInvariants(t, p, fuzzOptions)
		b, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := New(fuzzOptions).UnmarshalJSON(b); err != nil {
			t.Fatalf("snapshot does not reload: %v\n%s", err, b)
		}
	})
}

func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"version":1,"variables":{"user_id":12345,"username":"john_doe"},"observations":["Found user in database"],"failures":["404"]}`))
	f.Add([]byte(`{"version":1,"variables":{},"observations":[],"failures":[]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"variables":{"a":" <\u2028> "},"observations":[" x ","","a\r\nb"]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := New(fuzzOptions)
		if err := p.UnmarshalJSON(data); err != nil {
			if !errors.Is(err, ErrInvalidSnapshot) && !errors.Is(err, ErrInvalidKey) &&
				!errors.Is(err, ErrValueTooLarge) && !errors.Is(err, ErrFull) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		checkInvariants(t, p, fuzzOptions)
		b1, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(b1) || !json.Valid(b1) {
			t.Fatalf("snapshot is not valid UTF-8 JSON: %q", b1)
		}
		q := New(fuzzOptions)
		if err := q.UnmarshalJSON(b1); err != nil {
			t.Fatalf("snapshot does not reload: %v\n%s", err, b1)
		}
		b2, err := q.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(b1) != string(b2) {
			t.Fatalf("reload differs:\n%s\n%s", b1, b2)
		}
		if p.Context() != q.Context() {
			t.Fatalf("Context differs after reload:\n%s\n%s", p.Context(), q.Context())
		}
	})
}
