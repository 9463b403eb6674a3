package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/examples/internal/scripted"
	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/scratchpad"
	"github.com/agentmem/agentmem/summarize"
	"github.com/agentmem/agentmem/tokenizer"
)

// Config configures one run of the agent.
type Config struct {
	Task     string
	Budget   int
	MaxSteps int
	Verbose  bool
	Out      io.Writer
	// LLM, when set, is used instead of the environment or the scripted model.
	LLM *llm.Config
}

const systemPrompt = `You are a careful agent. Think step by step. Use the tools to gather facts.
Keep facts you will need later in the scratchpad (scratchpad_store) rather than relying on the conversation, which may be summarized.
When you know the answer, call final_answer with it.`

// Result is what a run produced.
type Result struct {
	Answer string
	Steps  int
	Memory *agentmem.Memory
}

// Run runs the agent until it calls final_answer or runs out of steps.
func Run(ctx context.Context, cfg Config) error {
	_, err := run(ctx, cfg)
	return err
}

func run(ctx context.Context, cfg Config) (*Result, error) {
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	model, err := scripted.Connect(cfg.LLM, newScript(), out)
	if err != nil {
		return nil, err
	}
	defer model.Close()
	client := model.Client
	counter, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		return nil, err
	}
	// Summaries come from the model when there is a real one, and from the
	// extractive summarizer otherwise.
	var sum agentmem.Summarizer = summarize.Extractive{Counter: counter}
	if !model.Offline {
		sum = summarize.NewLLM(client, summarize.LLMOptions{})
	}
	mem := agentmem.New(agentmem.Options{
		Counter: counter,
		Policy: &agentmem.Policy{
			// Compact once the working set outgrows one request's budget:
			// truncate old observations, then summarize all but the newest
			// steps if they still cost more than half the budget.
			MaxTokens: cfg.Budget,
			Strategy: agentmem.Chain(
				agentmem.PruneOldObservations(3, 400),
				agentmem.Summarize(sum, agentmem.SummarizeOptions{KeepRecent: 4, Trigger: -1, TriggerTokens: cfg.Budget / 2, MaxSummaryTokens: cfg.Budget / 4}),
			),
		},
		OnCompact: func(c *agentmem.Compaction, err error) {
			if err != nil {
				fmt.Fprintln(out, "  [memory] compaction failed:", err)
				return
			}
			fmt.Fprintf(out, "  [memory] compacted: %d removed, %d truncated, %d summaries added\n", len(c.Removed), len(c.Replaced), len(c.Added))
		},
	})
	pad := scratchpad.New(scratchpad.Options{})
	tools := append(padTools(pad), demoTools()...)

	if _, err := mem.Add(ctx, &agentmem.SystemPromptStep{Content: systemPrompt}); err != nil {
		return nil, err
	}
	if _, err := mem.Add(ctx, &agentmem.TaskStep{Task: cfg.Task}); err != nil {
		return nil, err
	}
	fmt.Fprintln(out, "task:", cfg.Task)

	for step := 1; step <= cfg.MaxSteps; step++ {
		view, err := mem.Context(ctx, agentmem.ContextOptions{Budget: cfg.Budget, TruncateToFill: true})
		if err != nil {
			return nil, err
		}
		msgs := llm.FromAgentmem(view.Messages)
		// The scratchpad's context rides along as a system note.
		if note := pad.Context(); note != "" {
			msgs = append(msgs, llm.Message{Role: "system", Content: llm.TextContent("Scratchpad:\n" + note)})
		}
		resp, err := client.Chat(ctx, llm.ChatRequest{Messages: msgs, Tools: llmTools(tools)})
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", step, err)
		}
		replies, err := llm.ToAgentmem([]llm.Message{resp.Message})
		if err != nil {
			return nil, fmt.Errorf("step %d: the model's reply: %w", step, err)
		}
		reply := replies[0]
		fmt.Fprintf(out, "step %d (%d tokens in context, %d steps dropped): %s\n", step, view.Tokens, view.DroppedSteps, firstLine(reply.Text()))

		if len(reply.ToolCalls) == 0 { // a plain answer ends the run too
			mem.Add(ctx, &agentmem.FinalAnswerStep{Answer: reply.Text()})
			return &Result{Answer: reply.Text(), Steps: step, Memory: mem}, nil
		}
		action := &agentmem.ActionStep{ModelOutput: reply.Text()}
		var final *string
		for _, call := range reply.ToolCalls {
			action.ToolCalls = append(action.ToolCalls, call)
			result, isErr := runTool(ctx, pad, call)
			if call.Name == "final_answer" && !isErr {
				answer := result
				final = &answer
			}
			if isErr {
				pad.Fail(call.Name + ": " + result)
			}
			fmt.Fprintf(out, "  → %s %s = %s\n", call.Name, call.Arguments, firstLine(result))
			action.Results = append(action.Results, agentmem.ToolResult{CallID: call.ID, Content: result, IsError: isErr})
		}
		action.IsFinal = final != nil
		if resp.Usage.TotalTokens > 0 {
			action.Usage = &agentmem.Usage{InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens}
		}
		if _, err := mem.Add(ctx, action); err != nil {
			return nil, err
		}
		if cfg.Verbose {
			fmt.Fprint(out, mem.Visualize())
		}
		if final != nil {
			mem.Add(ctx, &agentmem.FinalAnswerStep{Answer: *final})
			fmt.Fprintln(out, "answer:", *final)
			fmt.Fprint(out, mem.Visualize())
			return &Result{Answer: *final, Steps: step, Memory: mem}, nil
		}
	}
	return nil, fmt.Errorf("no answer after %d steps", cfg.MaxSteps)
}

// tool is one function the model may call.
type tool struct {
	name, description string
	parameters        json.RawMessage
	run               func(ctx context.Context, args string) (string, error)
}

func padTools(pad *scratchpad.Pad) []tool {
	var out []tool
	for _, t := range pad.Tools() {
		out = append(out, tool{name: t.Name, description: t.Description, parameters: t.Parameters,
			run: func(ctx context.Context, args string) (string, error) { return pad.Call(ctx, t.Name, args) }})
	}
	return out
}

func llmTools(tools []tool) []llm.Tool {
	out := make([]llm.Tool, len(tools))
	for i, t := range tools {
		out[i] = llm.NewTool(t.name, t.description, t.parameters)
	}
	return out
}

func runTool(ctx context.Context, pad *scratchpad.Pad, call agentmem.ToolCall) (string, bool) {
	for _, t := range append(padTools(pad), demoTools()...) {
		if t.name == call.Name {
			res, err := t.run(ctx, call.Arguments)
			if err != nil {
				return err.Error(), true
			}
			return res, false
		}
	}
	return fmt.Sprintf("unknown tool %q", call.Name), true
}

// demoTools are the agent's world: a weather service, a calculator and
// the final_answer tool.
func demoTools() []tool {
	return []tool{
		{
			name:        "get_weather",
			description: "Current weather of a city. Returns temperature in °C and conditions.",
			parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`),
			run: func(_ context.Context, args string) (string, error) {
				var a struct{ City string }
				if err := json.Unmarshal([]byte(args), &a); err != nil || a.City == "" {
					return "", errors.New("get_weather needs {\"city\": string}")
				}
				w, ok := weather[strings.ToLower(a.City)]
				if !ok {
					return "", fmt.Errorf("no weather station for %q", a.City)
				}
				return w, nil
			},
		},
		{
			name:        "multiply",
			description: "Multiplies two integers.",
			parameters:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`),
			run: func(_ context.Context, args string) (string, error) {
				var a struct{ A, B int64 }
				if err := json.Unmarshal([]byte(args), &a); err != nil {
					return "", fmt.Errorf("multiply: %w", err)
				}
				return fmt.Sprint(a.A * a.B), nil
			},
		},
		{
			name:        "final_answer",
			description: "Give the final answer to the task and stop.",
			parameters:  json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`),
			run: func(_ context.Context, args string) (string, error) {
				var a struct{ Answer string }
				if err := json.Unmarshal([]byte(args), &a); err != nil || a.Answer == "" {
					return "", errors.New("final_answer needs {\"answer\": string}")
				}
				return a.Answer, nil
			},
		},
	}
}

var weather = map[string]string{
	"paris":  "18°C, light rain, wind 12 km/h from the west. " + strings.Repeat("Hourly: 17°C 18°C 18°C 19°C 18°C. ", 20),
	"oslo":   "9°C, clear sky, wind 4 km/h from the north. " + strings.Repeat("Hourly: 8°C 9°C 9°C 10°C 9°C. ", 20),
	"berlin": "14°C, overcast.",
}

// firstLine returns the first line of s, cut to about 100 bytes on a
// UTF-8 boundary (agentmem.TruncateText, whose marker starts on a new
// line, which is left out).
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 100 {
		s, _, _ = strings.Cut(agentmem.TruncateText(s, 100), "\n")
		s += "…"
	}
	return s
}
