package scratchpad_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/agentmem/scratchpad"
)

func Example() {
	pad := scratchpad.New(scratchpad.Options{})
	pad.Store("user_id", 12345)
	pad.Store("username", "john_doe")
	pad.Observe("Found user in database")
	pad.Fail("Tried to update without permission")

	v, _ := pad.Recall("user_id")
	fmt.Println(string(v))
	fmt.Println(pad.Context())
	// Output:
	// 12345
	// Stored Variables:
	//   user_id: 12345
	//   username: john_doe
	// Observations:
	//   - Found user in database
	// Failed Attempts:
	//   - Tried to update without permission
}

func ExamplePad_Call() {
	pad := scratchpad.New(scratchpad.Options{})
	ctx := context.Background()

	// Tool calls as a model would make them.
	calls := []struct{ name, arguments string }{
		{"scratchpad_store", `{"key":"user_id","value":12345}`},
		{"scratchpad_recall", `{"key":"user_id"}`},
		{"scratchpad_recall", `{"key":"email"}`},
		{"scratchpad_observe", `{"text":"Found user in database"}`},
		{"scratchpad_store", `{"key":"user_id"}`},
		{"scratchpad_context", `{}`},
	}
	for _, c := range calls {
		result, err := pad.Call(ctx, c.name, c.arguments)
		if err != nil {
			// Hand the error back to the model so it can correct the call.
			result = "error: " + err.Error()
		}
		fmt.Println(result)
	}
	// Output:
	// stored "user_id"
	// 12345
	// no variable named "email"
	// observation recorded
	// error: scratchpad: invalid arguments for scratchpad_store: field "value" is required
	// Stored Variables:
	//   user_id: 12345
	// Observations:
	//   - Found user in database
}

func ExamplePad_Tools() {
	pad := scratchpad.New(scratchpad.Options{})
	for _, t := range pad.Tools() {
		fmt.Println(t.Name, string(t.Parameters))
	}
	// Output:
	// scratchpad_store {"type":"object","properties":{"key":{"type":"string","description":"Name of the variable, such as \"user_id\": 1 to 128 bytes, no control characters.","minLength":1,"maxLength":128},"value":{"description":"The value to remember: any JSON value (string, number, boolean, null, array or object), at most 16384 bytes as JSON."}},"required":["key","value"],"additionalProperties":false}
	// scratchpad_recall {"type":"object","properties":{"key":{"type":"string","description":"Name of the variable, such as \"user_id\": 1 to 128 bytes, no control characters.","minLength":1,"maxLength":128}},"required":["key"],"additionalProperties":false}
	// scratchpad_delete {"type":"object","properties":{"key":{"type":"string","description":"Name of the variable, such as \"user_id\": 1 to 128 bytes, no control characters.","minLength":1,"maxLength":128}},"required":["key"],"additionalProperties":false}
	// scratchpad_observe {"type":"object","properties":{"text":{"type":"string","description":"The observation, as a short self-contained note; text longer than 4096 bytes is truncated.","minLength":1}},"required":["text"],"additionalProperties":false}
	// scratchpad_fail {"type":"object","properties":{"text":{"type":"string","description":"The failed attempt and the reason it failed, as a short self-contained note; text longer than 4096 bytes is truncated.","minLength":1}},"required":["text"],"additionalProperties":false}
	// scratchpad_context {"type":"object","properties":{},"additionalProperties":false}
}

func ExamplePad_MarshalJSON() {
	pad := scratchpad.New(scratchpad.Options{})
	pad.Store("user_id", 12345)
	pad.Observe("Found user in database")

	data, _ := pad.MarshalJSON()
	fmt.Println(string(data))

	restored := scratchpad.New(scratchpad.Options{})
	if err := restored.UnmarshalJSON(data); err != nil {
		fmt.Println(err)
	}
	fmt.Println(restored.Keys())

	err := restored.UnmarshalJSON([]byte(`{"version":9}`))
	fmt.Println(errors.Is(err, scratchpad.ErrInvalidSnapshot))
	// Output:
	// {"version":1,"variables":{"user_id":12345},"observations":["Found user in database"],"failures":[]}
	// [user_id]
	// true
}

func ExamplePad_Store() {
	pad := scratchpad.New(scratchpad.Options{MaxVariables: 1})
	fmt.Println(pad.Store("user", map[string]any{"id": 12345, "name": "john_doe"}))
	fmt.Println(errors.Is(pad.Store("other", 1), scratchpad.ErrFull))
	fmt.Println(errors.Is(pad.Store("bad\nkey", 1), scratchpad.ErrInvalidKey))
	fmt.Println(pad.Context())
	// Output:
	// <nil>
	// true
	// true
	// Stored Variables:
	//   user: {"id":12345,"name":"john_doe"}
}
