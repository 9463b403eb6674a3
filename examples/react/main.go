// Command react is a runnable ReAct agent built on agentmem: a loop that
// asks a model for the next action and runs the tools it calls. It keeps
// its history in an agentmem.Memory that fits every request to a token
// budget, prunes old observations and summarizes what does not fit. The agent
// also has a scratchpad (working memory) it uses through tool calls.
//
// With AGENTMEM_LLM_BASE_URL set (and AGENTMEM_LLM_API_KEY,
// AGENTMEM_LLM_MODEL as needed) it talks to that OpenAI-compatible
// endpoint: OpenAI, Ollama, vLLM, llama.cpp server. Without it, it runs
// against a built-in scripted model served on a loopback port, so the
// whole loop, real HTTP client included, works offline:
//
//	go run ./examples/react
//	go run ./examples/react -task "What is 17*23, and is it prime?"
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	task := flag.String("task", "Plan a trip: find the weather in Paris and Oslo, remember both, and tell me which city is warmer.", "the task to give the agent")
	budget := flag.Int("budget", 2000, "token budget of each model request")
	maxSteps := flag.Int("max-steps", 12, "most model calls before giving up")
	verbose := flag.Bool("v", false, "print the memory after every step")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := Config{Task: *task, Budget: *budget, MaxSteps: *maxSteps, Verbose: *verbose, Out: os.Stdout}
	if err := Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "react:", err)
		os.Exit(1)
	}
}
