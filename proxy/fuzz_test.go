package proxy

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
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
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, err := DecodeAnthropicRequest(body)
		checkDecode(t, msgs, err)
	})
}

func FuzzDecodeOpenAIRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fields, err := decodeBody(body)
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
		}
	})
}
