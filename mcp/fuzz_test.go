package mcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// FuzzFoldMessages decodes append's messages argument as the SDK does
// (JSON into []Message) and folds it into steps. Whatever the input, the
// fold never panics, and what it accepts is a valid append whose steps
// render to messages every API accepts.
func FuzzFoldMessages(f *testing.F) {
	f.Add([]byte(`[{"role":"user","content":"hi"}]`), false, "")
	f.Add([]byte(`[{"role":"system","content":"s"},{"role":"user","content":"u"},{"role":"assistant","tool_calls":[{"id":"c1","name":"f","arguments":"{}"}]},{"role":"tool","tool_call_id":"c1","content":"r"}]`), false, "k")
	f.Add([]byte(`[{"role":"assistant","tool_calls":[{"id":"c1","name":"f"},{"id":"c2","name":"g"}]},{"role":"tool","tool_call_id":"c2","content":"x","is_error":true}]`), true, "")
	f.Add([]byte(`[{"role":"tool","tool_call_id":"nobody","content":"x"}]`), false, "")
	f.Add([]byte(`[{"role":"assistant","tool_calls":[{"id":"c","name":"f"},{"id":"c","name":"f"}]}]`), true, "")
	f.Add([]byte(`[]`), false, "")
	clock := func() time.Time { return time.Unix(1_700_000_000, 0).UTC() }
	f.Fuzz(func(t *testing.T, data []byte, flush bool, key string) {
		var msgs []Message
		if json.Unmarshal(data, &msgs) != nil {
			return
		}
		if len(key) > maxIdempotencyKey {
			key = key[:maxIdempotencyKey]
		}
		steps, err := foldMessages(msgs, flush, key, clock, agentmem.NewID)
		if err != nil {
			return
		}
		if len(steps) == 0 || len(steps) > len(msgs) {
			t.Fatalf("%d messages folded into %d steps", len(msgs), len(steps))
		}
		if err := store.ValidateAppend(store.AppendRequest{SessionID: "s", Steps: steps}); err != nil {
			// Only what the store itself bounds may be refused (sizes,
			// and IDs from a key of characters the schema forbids).
			t.Logf("store refuses: %v", err)
			return
		}
		mem := agentmem.New(agentmem.Options{Counter: tokenizer.NewHeuristic()})
		for _, s := range steps {
			if _, err := mem.Add(context.Background(), s); err != nil {
				t.Fatalf("an accepted step does not add: %v", err)
			}
		}
		for _, name := range render.Names() {
			format, _ := render.ByName(name)
			c, err := mem.Context(context.Background(), agentmem.ContextOptions{Format: format})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := render.Validate(name, c.Messages); err != nil {
				t.Fatalf("%s: accepted messages render invalid: %v\n%s", name, err, data)
			}
		}
	})
}
