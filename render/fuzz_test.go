package render_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
)

// FuzzDecodeOpenAIMessages: any input is either refused with an error
// wrapping ErrInvalid, or decodes to messages that are valid on their own
// and that encode (OpenAIRequest) to JSON decoding to the same messages.
// Never a panic. Seeds are in testdata/fuzz/FuzzDecodeOpenAIMessages.
func FuzzDecodeOpenAIMessages(f *testing.F) {
	f.Add([]byte(`[{"role":"user","content":"hi"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, err := render.DecodeOpenAIMessages(data)
		if err != nil {
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		for i, m := range msgs {
			if err := m.Validate(); err != nil {
				t.Fatalf("decoded message %d is invalid: %v", i, err)
			}
		}
		wire, err := json.Marshal(render.OpenAIRequest(msgs))
		if err != nil {
			t.Fatal(err)
		}
		back, err := render.DecodeOpenAIMessages(wire)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", wire, err)
		}
		// The encoder leaves out the name of a tool message, which the
		// API does not define.
		for i := range msgs {
			if msgs[i].Role == agentmem.RoleTool {
				msgs[i].Name = ""
			}
		}
		if !reflect.DeepEqual(back, msgs) {
			t.Fatalf("round trip through %s:\n%s\nwant:\n%s", wire, show(back), show(msgs))
		}
		// Validate never panics on decoded input, in any format.
		for _, name := range render.Names() {
			_ = render.Validate(name, msgs)
			if _, err := render.Encode(name, msgs); err != nil {
				t.Fatal(err)
			}
		}
	})
}
