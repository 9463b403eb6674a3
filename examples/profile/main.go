// Command profile is a runnable agent that keeps what it learns about its
// user in a memory block (package blocks), across sessions. The
// application creates the user's block "human", and every context of the
// user's sessions shows it after the system prompt. The agent edits it
// with the blocks tools (memory_append, memory_replace, memory_rethink).
//
// In the first session the user says their name, which the agent appends
// to the block. In the second the user states a preference, for which
// the agent rewrites the block. In the third the user asks something that
// needs both. The agent answers from the block its context shows, though
// that session's conversation holds neither.
//
// With AGENTMEM_LLM_BASE_URL set (and AGENTMEM_LLM_API_KEY,
// AGENTMEM_LLM_MODEL as needed) it talks to that OpenAI-compatible
// endpoint. Without it, it runs against a built-in scripted model served
// on a loopback port, so the whole loop, real HTTP client included,
// works offline:
//
//	go run ./examples/profile
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	user := flag.String("user", "ann", "the user the sessions belong to")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := Run(ctx, Config{User: *user, Out: os.Stdout}); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		os.Exit(1)
	}
}
