package agentmem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/tokenizer"
)

// An agent loop: add steps as they happen and render the context that fits
// the model's budget before every call.
func Example() {
	ctx := context.Background()
	counter, _ := tokenizer.Get(tokenizer.O200kBase)
	mem := agentmem.New(agentmem.Options{Counter: counter})

	mem.Add(ctx, &agentmem.SystemPromptStep{Content: "You are a careful coding agent."})
	mem.Add(ctx, &agentmem.TaskStep{Task: "Find why the login test fails."})
	for i := range 50 {
		id := fmt.Sprintf("call_%d", i)
		mem.Add(ctx, &agentmem.ActionStep{
			ModelOutput: "Let me look at the next file.",
			ToolCalls:   []agentmem.ToolCall{{ID: id, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"auth/file%d.go"}`, i)}},
			Results:     []agentmem.ToolResult{{CallID: id, Content: "package auth // ... a few hundred tokens of source ..."}},
		})
	}

	view, err := mem.Context(ctx, agentmem.ContextOptions{Budget: 500})
	if err != nil {
		panic(err)
	}
	fmt.Println("tokens within budget:", view.Tokens <= 500)
	fmt.Println("first message:", view.Messages[0].Role)
	fmt.Println("steps shown:", len(view.Steps), "dropped:", view.DroppedSteps)
	// Output:
	// tokens within budget: true
	// first message: system
	// steps shown: 13 dropped: 39
}

// The seeds' message-level surface: add OpenAI-style chat messages; a tool
// call waits, pending, until its result arrives, and is never rendered
// without it.
func ExampleMemory_AddMessage() {
	ctx := context.Background()
	mem := agentmem.New(agentmem.Options{Counter: tokenizer.NewHeuristic()})
	mem.AddUser(ctx, "What is the weather in Paris?")
	mem.AddAssistant(ctx, agentmem.Message{ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "weather", Arguments: `{"city":"Paris"}`}}})
	ctxView, _ := mem.Context(ctx, agentmem.ContextOptions{})
	fmt.Println("messages while the call is pending:", len(ctxView.Messages), "pending:", len(ctxView.Pending))
	mem.AddToolResult(ctx, "c1", "18°C, cloudy", false)
	mem.AddAssistant(ctx, agentmem.Message{Content: agentmem.Text("It is 18°C and cloudy in Paris.")})
	for _, m := range mem.Messages(agentmem.RenderOptions{}) {
		text := m.Text()
		for _, c := range m.ToolCalls {
			text += "→ " + c.Name + c.Arguments
		}
		fmt.Printf("%s: %s\n", m.Role, text)
	}
	// Output:
	// messages while the call is pending: 1 pending: 1
	// user: What is the weather in Paris?
	// assistant: → weather{"city":"Paris"}
	// tool: 18°C, cloudy
	// assistant: It is 18°C and cloudy in Paris.
}

// A budget too small for the pinned system prompt and task is a typed
// error, never a silently broken context.
func ExampleBudgetError() {
	ctx := context.Background()
	mem := agentmem.New(agentmem.Options{Counter: tokenizer.NewHeuristic()})
	mem.Add(ctx, &agentmem.SystemPromptStep{Content: "A long system prompt with many rules to follow."})
	_, err := mem.Context(ctx, agentmem.ContextOptions{Budget: 10})
	var be *agentmem.BudgetError
	fmt.Println(errors.Is(err, agentmem.ErrBudgetTooSmall), errors.As(err, &be), be.Required)
	// Output:
	// true true 19
}

// Snapshots carry every step, summaries included, in a versioned JSON form.
func ExampleMemory_Snapshot() {
	ctx := context.Background()
	mem := agentmem.New(agentmem.Options{Counter: tokenizer.NewHeuristic()})
	mem.Add(ctx, &agentmem.TaskStep{Task: "t"})
	mem.SetSummary(ctx, "what happened before", 0)
	data, _ := json.Marshal(mem.Snapshot())

	snap, _ := agentmem.DecodeSnapshot(data)
	resumed := agentmem.New(agentmem.Options{Counter: tokenizer.NewHeuristic()})
	resumed.Restore(snap)
	fmt.Println(resumed.Len(), resumed.NextNumber(), resumed.Summary())
	// Output:
	// 2 2 what happened before
}

// Visualize shows each step with its token cost.
func ExampleMemory_Visualize() {
	ctx := context.Background()
	mem := agentmem.New(agentmem.Options{Counter: tokenizer.NewHeuristic()})
	mem.Add(ctx, &agentmem.SystemPromptStep{Content: "You are helpful."})
	mem.Add(ctx, &agentmem.TaskStep{Task: "List the files."})
	mem.Add(ctx, &agentmem.ActionStep{
		ToolCalls: []agentmem.ToolCall{{ID: "a", Name: "list_dir", Arguments: `{"path":"."}`}},
		Results:   []agentmem.ToolResult{{CallID: "a", Content: "README.md go.mod main.go"}},
	})
	fmt.Print(mem.Visualize())
	// Output:
	// Memory: 3 steps (1 actions), 41 tokens [openai, heuristic]
	// * #0    system_prompt        8 tok
	// * #1    task                 8 tok
	//   #2    action              22 tok  list_dir  obs 24 chars
}

// A chat pins only its system prompt: once the conversation outgrows the
// budget, its first question goes like any other old turn.
func ExamplePinning() {
	ctx := context.Background()
	mem := agentmem.New(agentmem.Options{
		Counter: tokenizer.NewHeuristic(),
		Pinning: &agentmem.Pinning{SystemPrompts: true},
	})
	mem.AddMessage(ctx, agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("Be brief.")})
	for i := 1; i <= 20; i++ {
		mem.AddUser(ctx, fmt.Sprintf("Question %d?", i))
		mem.AddAssistant(ctx, agentmem.Message{Content: agentmem.Text(fmt.Sprintf("Answer %d.", i))})
	}
	view, _ := mem.Context(ctx, agentmem.ContextOptions{Budget: 40})
	for _, m := range view.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	// Output:
	// system: Be brief.
	// user: Question 19?
	// assistant: Answer 19.
	// user: Question 20?
	// assistant: Answer 20.
}

// The seeds' MemoryManager(system_prompt, prune_strategy): the prompt is
// the first step, and Prune(ctx, nil) applies the default strategy (as
// does any add past 1,000 steps).
func ExampleOptions_seedMemoryManager() {
	ctx := context.Background()
	mem := agentmem.New(agentmem.Options{
		SystemPrompt: "You are a helpful assistant.",
		Prune:        agentmem.KeepLastNActions(2),
	})
	mem.Add(ctx, &agentmem.TaskStep{Task: "Analyze this code."})
	for i := range 5 {
		mem.Add(ctx, &agentmem.ActionStep{ModelOutput: fmt.Sprintf("step %d", i), Observation: "ok"})
	}
	mem.Prune(ctx, nil)
	fmt.Print(mem.Visualize())
	// Output:
	// Memory: 4 steps (2 actions), 49 tokens [openai, o200k_base]
	// * #0    system_prompt       10 tok
	// * #1    task                 8 tok
	//   #5    action              14 tok  obs 2 chars
	//   #6    action              14 tok  obs 2 chars
}

// A replica follows a session's log: it is loaded with the working set
// the log reads, then takes the steps appended since and the copies an
// amendment carries, under the numbers the log gave them. Each step is
// counted once, however many contexts show it.
func ExampleReplica() {
	ctx := context.Background()
	working := []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{Number: 1, ID: "sys"}, Content: "You are a careful coding agent."},
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 2, ID: "task"}, Task: "Find why the login test fails."},
	}
	rep, err := agentmem.NewReplica(working, agentmem.ReplicaOptions{Counter: tokenizer.NewHeuristic()})
	if err != nil {
		panic(err)
	}

	// The log appends an action whose call awaits its result...
	call := agentmem.ToolCall{ID: "c1", Name: "read_file", Arguments: `{"path":"auth/login.go"}`}
	rep.Put(&agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 3, ID: "act"}, ToolCalls: []agentmem.ToolCall{call}})
	view, _ := rep.Context(ctx, agentmem.ContextOptions{Budget: 1000})
	fmt.Println("shown:", view.Steps, "pending:", len(view.Pending))

	// ...then an amendment completes it.
	rep.Replace(&agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 3, ID: "act"}, ToolCalls: []agentmem.ToolCall{call},
		Results: []agentmem.ToolResult{{CallID: "c1", Content: "func Login() { ... }"}}})
	view, _ = rep.Context(ctx, agentmem.ContextOptions{Budget: 1000})
	fmt.Println("shown:", view.Steps, "pending:", len(view.Pending))

	// A step the log appended before is not put twice.
	added, _ := rep.Put(&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 2, ID: "task"}, Task: "Find why the login test fails."})
	fmt.Println("put again:", added)
	// Output:
	// shown: [1 2] pending: 1
	// shown: [1 2 3] pending: 0
	// put again: false
}
