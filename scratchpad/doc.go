// Package scratchpad is working memory for an LLM agent: named variables,
// a log of observations and a log of failed attempts. It renders them as a
// short text block for the model's context, and the model itself can use
// it through function-calling tools.
//
// A Pad is created with New and is safe for concurrent use:
//
//	pad := scratchpad.New(scratchpad.Options{})
//	pad.Store("user_id", 12345)
//	pad.Observe("Found user in database")
//	pad.Fail("GET /users/john returned 404: the API wants the numeric id")
//	fmt.Println(pad.Context())
//
// prints
//
//	Stored Variables:
//	  user_id: 12345
//	Observations:
//	  - Found user in database
//	Failed Attempts:
//	  - GET /users/john returned 404: the API wants the numeric id
//
// Everything is bounded (see Options). The number of variables and the
// size of each value are limits that Store enforces with ErrFull and
// ErrValueTooLarge. Observations and failures are retention windows that
// drop the oldest entries. An entry longer than Options.MaxEntryBytes is
// truncated with a visible marker. Context shows only the most recent
// entries.
//
// # Tools
//
// Tools describes six function-calling tools: scratchpad_store,
// scratchpad_recall, scratchpad_delete, scratchpad_observe,
// scratchpad_fail and scratchpad_context. Each has a description written
// for the model and a strict JSON Schema for its arguments. Offer them to
// the model alongside the agent's other tools, and route the calls the
// model makes:
//
//	if pad.Handles(call.Name) {
//		result, err := pad.Call(ctx, call.Name, call.Arguments)
//		if err != nil {
//			result = err.Error() // the messages are written to be shown to the model
//		}
//		// append result as the tool call's result
//	}
//
// # Persistence
//
// A Pad marshals to versioned JSON,
//
//	{"version":1,"variables":{...},"observations":[...],"failures":[...]}
//
// and UnmarshalJSON loads it back, rejecting unknown versions and
// enforcing the Pad's bounds.
//
// # Errors
//
// Every error returned by the package wraps one of the sentinel errors
// (ErrInvalidKey, ErrInvalidValue, ErrValueTooLarge, ErrFull,
// ErrUnknownTool, ErrInvalidArguments, ErrInvalidSnapshot). So callers can
// classify failures with errors.Is. A context error is returned unchanged.
package scratchpad
