package render_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
)

// exampleMemory is a short agent run: system prompt, task, one action
// that called a tool.
func exampleMemory(f agentmem.Format) *agentmem.Memory {
	ctx := context.Background()
	m := agentmem.New(agentmem.Options{Format: f})
	steps := []agentmem.Step{
		&agentmem.SystemPromptStep{Content: "You are a weather bot."},
		&agentmem.TaskStep{Task: "Weather in Paris?"},
		&agentmem.ActionStep{
			ModelOutput: "Checking.",
			ToolCalls:   []agentmem.ToolCall{{ID: "call_1", Name: "weather", Arguments: `{"city":"Paris"}`}},
			Results:     []agentmem.ToolResult{{CallID: "call_1", Content: "18°C, sunny"}},
		},
	}
	for _, s := range steps {
		if _, err := m.Add(ctx, s); err != nil {
			panic(err)
		}
	}
	return m
}

// Render a memory for Anthropic's Messages API and encode the request body.
func ExampleAnthropic() {
	m := exampleMemory(render.Anthropic)
	c, err := m.Context(context.Background(), agentmem.ContextOptions{Budget: 1000})
	if err != nil {
		panic(err)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(render.AnthropicRequest(c.Messages))
	// Output:
	// {
	//   "system": "You are a weather bot.",
	//   "messages": [
	//     {
	//       "role": "user",
	//       "content": [
	//         {
	//           "type": "text",
	//           "text": "Weather in Paris?"
	//         }
	//       ]
	//     },
	//     {
	//       "role": "assistant",
	//       "content": [
	//         {
	//           "type": "text",
	//           "text": "Checking."
	//         },
	//         {
	//           "type": "tool_use",
	//           "id": "call_1",
	//           "name": "weather",
	//           "input": {
	//             "city": "Paris"
	//           }
	//         }
	//       ]
	//     },
	//     {
	//       "role": "user",
	//       "content": [
	//         {
	//           "type": "tool_result",
	//           "tool_use_id": "call_1",
	//           "content": "18°C, sunny",
	//           "is_error": false
	//         }
	//       ]
	//     }
	//   ]
	// }
}

// Render for a provider without a tool role.
func ExampleObservation() {
	m := exampleMemory(render.Observation)
	c, err := m.Context(context.Background(), agentmem.ContextOptions{})
	if err != nil {
		panic(err)
	}
	for _, msg := range c.Messages {
		fmt.Printf("%s: %s\n", msg.Role, msg.Text())
	}
	// Output:
	// system: You are a weather bot.
	// user: Weather in Paris?
	// assistant: Checking.
	// Action: weather {"city":"Paris"}
	// user: Observation: 18°C, sunny
}

// Encode the OpenAI rendering of a memory as chat-completions messages.
func ExampleOpenAIRequest() {
	m := exampleMemory(render.OpenAI)
	c, err := m.Context(context.Background(), agentmem.ContextOptions{})
	if err != nil {
		panic(err)
	}
	for _, msg := range render.OpenAIRequest(c.Messages) {
		b, _ := json.Marshal(msg)
		fmt.Println(string(b))
	}
	// Output:
	// {"role":"system","content":"You are a weather bot."}
	// {"role":"user","content":"Weather in Paris?"}
	// {"role":"assistant","content":"Checking.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]}
	// {"role":"tool","content":"18°C, sunny","tool_call_id":"call_1"}
}

// Write a context's messages as the JSON array a chat-completions request
// takes, straight into a buffer the caller keeps: what json.Marshal of
// OpenAIRequest gives, without building the wire structs.
func ExampleAppendJSON() {
	m := exampleMemory(render.OpenAI)
	c, err := m.Context(context.Background(), agentmem.ContextOptions{})
	if err != nil {
		panic(err)
	}
	buf := []byte(`{"model":"gpt-4o","messages":`)
	buf, err = render.AppendJSON(buf, render.NameOpenAI, c.Messages)
	if err != nil {
		panic(err)
	}
	buf = append(buf, '}')
	fmt.Println(string(buf))
	// Output:
	// {"model":"gpt-4o","messages":[{"role":"system","content":"You are a weather bot."},{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":"Checking.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","content":"18°C, sunny","tool_call_id":"call_1"}]}
}

// Decode messages posted in OpenAI's format, and see how a bad one is
// reported.
func ExampleDecodeOpenAIMessages() {
	msgs, err := render.DecodeOpenAIMessages([]byte(`[
		{"role": "user", "content": "hi"},
		{"role": "assistant", "content": null, "tool_calls": [
			{"id": "c1", "type": "function", "function": {"name": "clock", "arguments": "{}"}}]},
		{"role": "tool", "tool_call_id": "c1", "content": "noon"}
	]`))
	fmt.Println(len(msgs), msgs[1].ToolCalls[0].Name, msgs[2].Text(), err)

	_, err = render.DecodeOpenAIMessages([]byte(`[{"role": "user", "content": "hi"}, {"role": "tool", "content": "noon"}]`))
	fmt.Println(err)
	// Output:
	// 3 clock noon <nil>
	// agentmem: invalid messages[1].tool_call_id: is required on a tool message
}

// Check a message list against a target API's rules.
func ExampleValidate() {
	msgs := []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("hi")},
		{Role: agentmem.RoleUser, Content: agentmem.Text("anyone?")},
	}
	fmt.Println(render.Validate("openai", msgs))
	fmt.Println(render.Validate("anthropic", msgs))
	assembled, delta := render.Anthropic.Assemble(msgs, tokenizer.NewHeuristic())
	fmt.Println(render.Validate("anthropic", assembled), -delta/agentmem.MessageOverhead)
	// Output:
	// <nil>
	// agentmem: invalid messages[1]: follows another user message; user and assistant must alternate
	// <nil> 1
}

// Choose a format by name, as a configuration file or an HTTP request
// would.
func ExampleByName() {
	f, err := render.ByName("anthropic")
	fmt.Println(f.Name(), err)
	_, err = render.ByName("gemini")
	fmt.Println(err)
	// Output:
	// anthropic <nil>
	// agentmem: invalid format: unknown format "gemini" (known: anthropic, observation, openai)
}
