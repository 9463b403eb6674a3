package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/jsoncheck"
)

// The fuzz targets drive the proxy's request decoders with arbitrary
// bodies: a decoder never panics, refuses with a 400 *Error naming valid
// UTF-8, and what it accepts are valid messages that fold into steps (so
// nothing half-valid reaches the session). Seeds are in
// testdata/fuzz/<Name>/.

func checkDecode(t *testing.T, msgs []agentmem.Message, err error) {
	t.Helper()
	if err != nil {
		var e *Error
		var ie *agentmem.InvalidError
		switch {
		case errors.As(err, &e):
			if e.Status != 400 || e.Message == "" || !utf8.ValidString(e.Message) || !utf8.ValidString(e.Field) {
				t.Fatalf("refusal %+v", e)
			}
		case errors.As(err, &ie):
		default:
			t.Fatalf("not a refusal: %v", err)
		}
		return
	}
	if len(msgs) == 0 {
		t.Fatal("accepted without messages")
	}
	for _, m := range msgs {
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an invalid message %+v: %v", m, err)
		}
	}
	// The recognition of a history never fails on decoded messages.
	if _, err := planHistory(nil, msgs); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecodeAnthropicRequest(f *testing.F) {
	f.Add([]byte(`{"system":"s","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"f","input":{"x":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}],"is_error":true},{"type":"text","text":"go on"}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"shot","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"image","source":{"type":"url","url":"https://x/a.png"}},{"type":"text","text":"r"}]}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, err := DecodeAnthropicRequest(body)
		checkDecode(t, msgs, err)
	})
}

func FuzzDecodeOpenAIRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}],"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fields, keys, err := decodeBody(body)
		if err != nil {
			checkDecode(t, nil, err)
			return
		}
		msgs, err := openAI{}.decode(fields)
		checkDecode(t, msgs, err)
		if err == nil {
			// What is accepted encodes back.
			if err := (openAI{}).encode(fields, msgs); err != nil || !json.Valid(fields["messages"]) {
				t.Fatalf("encode: %v", err)
			}
			sent, err := encodeBody(keys, fields)
			if err != nil || !json.Valid(sent) {
				t.Fatalf("encodeBody: %v: %s", err, sent)
			}
		}
	})
}

// FuzzScanBody drives the fast path's scanner (scan.go) with arbitrary
// bodies, and with a known prefix of their messages: what it accepts, its
// values checked as quickBody checks them, decodeBody accepts too, with
// the same members, keys and messages; and a known prefix that ends with
// an element leaves the elements after it.
func FuzzScanBody(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`), 1)
	f.Add([]byte(` { "messages" : [ {"role":"user","content":"a , ]"} , {"role":"assistant","content":"\"b\\"} ] , "stream" : true } `), 1)
	f.Add([]byte(`{"messages":[],"system":[{"type":"text","text":"s"}]}`), 0)
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"},]}`), 1)
	f.Add([]byte(`{"messages":[1,2],"messages":[1,2,3]}`), 2)
	f.Fuzz(func(t *testing.T, body []byte, k int) {
		sc, ok := scanBody(body, func([]byte) int { return 0 })
		fields, keys, err := decodeBody(body)
		if !ok {
			return // the general path decides
		}
		checked := true
		for key, v := range sc.fields {
			if key != "messages" && jsoncheck.Check(v) != nil {
				checked = false
			}
		}
		for _, r := range sc.tail {
			if jsoncheck.Check(r) != nil {
				checked = false
			}
		}
		if !checked {
			return
		}
		if err != nil {
			t.Fatalf("scanned and checked, but decodeBody refuses it: %v", err)
		}
		if !slices.Equal(keys, sc.keys) || len(fields) != len(sc.fields) {
			t.Fatalf("keys %q, scanned %q", keys, sc.keys)
		}
		for key, v := range fields {
			if !bytes.Equal(v, sc.fields[key]) {
				t.Fatalf("member %q: %s, scanned %s", key, v, sc.fields[key])
			}
		}
		raws := elements(fields)
		if len(raws) != len(sc.tail) || !bytes.Equal(messagesPrefix(fields["messages"]), sc.msgs) {
			t.Fatalf("messages %s: %d elements, scanned %d (%s)", fields["messages"], len(raws), len(sc.tail), sc.msgs)
		}
		for i := range raws {
			if !bytes.Equal(raws[i], sc.tail[i]) {
				t.Fatalf("element %d: %s, scanned %s", i, raws[i], sc.tail[i])
			}
		}
		// A known prefix of k elements, as a memo of an earlier request
		// holds it.
		if k <= 0 || k > len(raws) {
			return
		}
		msgs := fields["messages"]
		last := raws[k-1] // a subslice of msgs
		prev := msgs[:cap(msgs)-cap(last)+len(last)]
		// The same prefix, with a byte of its last element changed, is
		// not known.
		other := append([]byte(nil), prev...)
		other[len(other)-1] ^= 1
		if _, ok := scanBody(body, func(m []byte) int {
			if !bytes.HasPrefix(m, other) {
				return -1
			}
			return len(other)
		}); ok {
			t.Fatalf("scanned with a known prefix %s that it does not begin with", other)
		}
		sk, ok := scanBody(body, func(m []byte) int {
			if !bytes.HasPrefix(m, prev) {
				return -1
			}
			return len(prev)
		})
		if !ok || len(sk.tail) != len(raws)-k || !bytes.Equal(sk.msgs, sc.msgs) {
			t.Fatalf("known %s: ok %v, %d elements after it, want %d", prev, ok, len(sk.tail), len(raws)-k)
		}
		for i, r := range sk.tail {
			if !bytes.Equal(r, raws[k+i]) {
				t.Fatalf("element %d after the known prefix: %s, want %s", i, r, raws[k+i])
			}
		}
	})
}

// elements returns the raw elements of a checked body's messages member.
func elements(fields map[string]json.RawMessage) []json.RawMessage {
	var raws []json.RawMessage
	_ = jsoncheck.Elements(fields["messages"], func(_ int, raw []byte) error {
		raws = append(raws, raw)
		return nil
	})
	return raws
}
