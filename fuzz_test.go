package agentmem_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentmem/agentmem"
)

// FuzzUnmarshalStep: any input either decodes to a valid step whose JSON
// round-trips exactly and that had every required member (requiredKeys),
// not null, or is refused with ErrInvalid. Never a panic.
func FuzzUnmarshalStep(f *testing.F) {
	f.Add([]byte(`{"type":"action","number":3,"model_output":"x","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}],"results":[{"call_id":"a","content":"r"}]}`))
	f.Add([]byte(`{"type":"summary","summary":"s","covers":[{"from":1,"to":4}]}`))
	f.Add([]byte(`{"type":"task","task":"t","images":[{"url":"https://x"}]}`))
	f.Add([]byte(`{"type":"action","model_output":"x","images":[{"url":"https://x"}],"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}],"results":[{"call_id":"a","content":"","images":[{"media_type":"image/png","data":"AAAA"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := agentmem.UnmarshalStep(data)
		if err != nil {
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded step is invalid: %v", err)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(data, &members); err != nil {
			t.Fatalf("accepted %q, which is not a JSON object: %v", data, err)
		}
		for _, k := range requiredKeys[s.Kind()] {
			if v, ok := members[k]; !ok || string(v) == "null" {
				t.Fatalf("accepted %q without its required %q", data, k)
			}
		}
		out, err := agentmem.MarshalStep(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := agentmem.UnmarshalStep(out)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		out2, _ := agentmem.MarshalStep(back)
		if !bytes.Equal(out, out2) {
			t.Fatalf("JSON not stable:\n%s\n%s", out, out2)
		}
		_ = s.Messages(agentmem.RenderOptions{})
	})
}

// FuzzDecodeSnapshot: any input is refused with ErrInvalid or restores
// into a memory that renders and snapshots stably.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte(`{"version":1,"next_number":2,"steps":[{"type":"system_prompt","number":0,"content":"s"},{"type":"task","number":1,"task":"t"}]}`))
	f.Add([]byte(`[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}],"summary":"before"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := agentmem.DecodeSnapshot(data)
		if err != nil {
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		m := agentmem.New(agentmem.Options{Counter: words{}})
		if err := m.Restore(snap); err != nil {
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("restore error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		if _, err := m.Context(bg, agentmem.ContextOptions{Budget: 1000}); err != nil && !errors.Is(err, agentmem.ErrBudgetTooSmall) {
			t.Fatal(err)
		}
		a, err := json.Marshal(m.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		snap2, err := agentmem.DecodeSnapshot(a)
		if err != nil {
			t.Fatalf("re-decode: %v\n%s", err, a)
		}
		m2 := agentmem.New(agentmem.Options{Counter: words{}})
		if err := m2.Restore(snap2); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(m2.Snapshot())
		if !bytes.Equal(a, b) {
			t.Fatalf("snapshot not stable:\n%s\n%s", a, b)
		}
	})
}

// FuzzMessageJSON: a message that decodes and validates re-encodes to JSON
// that decodes to the same encoding.
func FuzzMessageJSON(f *testing.F) {
	f.Add([]byte(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"https://x"}}]}`))
	f.Add([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`))
	f.Add([]byte(`{"role":"tool","tool_call_id":"c","content":"r","metadata":{"k":"v"}}`))
	f.Add([]byte(`{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"r"},{"type":"image","image":{"url":"https://x"}},{"type":"tool_result","tool_call_id":"c","images":[{"data":"AAAA"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m agentmem.Message
		if err := json.Unmarshal(data, &m); err != nil {
			return
		}
		if m.Validate() != nil {
			return
		}
		a, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var m2 agentmem.Message
		if err := json.Unmarshal(a, &m2); err != nil {
			t.Fatalf("re-decode %s: %v", a, err)
		}
		b, _ := json.Marshal(m2)
		if !bytes.Equal(a, b) {
			t.Fatalf("not stable:\n%s\n%s", a, b)
		}
	})
}

// FuzzFoldMessages: any list of messages folds, against a pending action,
// into valid steps and updated copies of the action (or is refused with
// ErrInvalid or ErrConflict), without changing its arguments; with Flush
// nothing is left pending.
func FuzzFoldMessages(f *testing.F) {
	f.Add([]byte(`[{"role":"tool","tool_call_id":"b","content":"rb"}]`), true, false)
	f.Add([]byte(`[{"role":"user","content":"u"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"result a"}]`), false, true)
	f.Add([]byte(`[{"role":"tool","tool_call_id":"a","content":"other"}]`), true, true)
	f.Fuzz(func(t *testing.T, data []byte, keep, flush bool) {
		var msgs []agentmem.Message
		if json.Unmarshal(data, &msgs) != nil {
			return
		}
		open := []*agentmem.ActionStep{pendingAB()}
		before, _ := agentmem.MarshalStep(open[0])
		out, err := agentmem.FoldMessages(open, msgs, agentmem.FoldOptions{KeepPending: keep, Flush: flush})
		if after, _ := agentmem.MarshalStep(open[0]); !bytes.Equal(before, after) {
			t.Fatal("the open action changed")
		}
		if err != nil {
			if !errors.Is(err, agentmem.ErrInvalid) && !errors.Is(err, agentmem.ErrConflict) {
				t.Fatalf("error wraps neither ErrInvalid nor ErrConflict: %v", err)
			}
			return
		}
		for _, s := range out.Steps {
			if err := s.Validate(); err != nil {
				t.Fatalf("invalid step %+v: %v", s, err)
			}
			if flush && agentmem.IsPending(s) {
				t.Fatalf("pending after a flush: %+v", s)
			}
		}
		for _, u := range out.Updated {
			if err := u.Validate(); err != nil || u.Number != 7 || u.ID != "act" || (flush && u.Pending()) {
				t.Fatalf("updated copy %+v: %v", u, err)
			}
		}
	})
}
