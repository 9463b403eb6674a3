// Package replay replays an agent trace through the memory engine and
// measures it. The replay covers the whole of the core (decoding, folding
// messages into steps, counting, fitting, rendering) on a realistic
// workload. Every rendered context is checked for the guarantees agentmem
// makes.
//
// # The trace
//
// A trace is JSONL: one chat message per line, in OpenAI's chat shape.
// That is the JSON form of agentmem.Message, which OpenAI messages decode
// into directly. It opens with the system prompt, then the task (the first
// user message), then the agent's turns. The turns are assistant messages,
// each with zero or more tool calls, every call followed by its tool
// result. Further user and system messages may appear.
//
// Each line is decoded strictly. It must be valid UTF-8 holding exactly
// one JSON object with only the fields of agentmem.Message. The message
// must be accepted by agentmem.Memory.AddMessage (a known role, a tool
// result answering a pending call, ...). The first bad line stops the run
// with a *LineError naming the line (1-based) and the reason.
//
// # The replay
//
// Run adds the messages to an agentmem.Memory one by one with AddMessage.
// Before every assistant message it renders Memory.Context under the
// budget, as an agent loop would before calling the model. After the last
// line it renders once more. So
//
//	renders = assistant messages in the trace + 1
//
// and a trace of N agent turns gives N+1 renders. Only the Context call is
// timed for the render figures (time.Now around the call). On Linux the
// thread's CPU time around the call is reported too, which leaves out the
// time the thread was descheduled. The memory counts a step's tokens when
// it is added, so that cost is in the add phase, not in the renders.
//
// # Checks
//
// Every render is checked, outside the render timing, for:
//
//   - over_budget: the request costs more than the budget. The cost is
//     recounted independently of the engine (agentmem.RequestTokens with a
//     separate memoizing counter), and Context.Tokens is checked too;
//   - tokens_mismatch: the recount differs from Context.Tokens;
//   - system_missing: the first message is not the system prompt of the
//     trace's first line;
//   - task_missing: no user message holds the task (the first user
//     message's text);
//   - orphan_tool_result: a tool result (tool message or tool_result part)
//     that answers no unanswered call of the preceding assistant message;
//   - call_without_result: a tool call (or tool_use part) not answered
//     before the next assistant message or the end;
//   - api_rule: any other rule of the format's API, from render.Validate;
//   - window_gap: the steps shown besides the pinned ones (system prompts
//     and the task) are not the newest whole turns: a gap among them, a
//     window that does not end at the newest step, or a step shown without
//     its turn's question (the one gap allowed is inside the oldest turn
//     shown, after its question, when it is shown in part).
//
// Each kind counts at most once per render; total is the sum of the kinds.
// The structural checks cost O(messages in the render). The recount hashes
// each message's text to find its memoized count, and tokenizes a text
// only the first time it is seen. Their time is reported as check_seconds
// and is not part of total_seconds.
//
// # Baseline
//
// With Config.Baseline, Run first decodes the whole trace into a separate
// set of strings: the content text of every message, and the names and
// arguments of its tool calls. It times the tokenizer alone counting each
// of them once. Ratio is total_seconds over that time: how much the whole
// engine costs beyond the tokenization it cannot avoid.
package replay
