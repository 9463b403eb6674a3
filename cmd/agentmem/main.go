// Command agentmem is the command-line interface of agentmem, the memory
// layer for LLM agents.
//
// Usage:
//
//	agentmem [--log-level LEVEL] COMMAND [FLAGS]
//
// Commands:
//
//	replay    replay an agent trace through the memory engine and measure it
//	version   print the version
//
// Every flag can also be given by an environment variable: the flag's name
// in upper case with dashes as underscores, after AGENTMEM_ (for example
// AGENTMEM_TOKENIZER=cl100k_base for --tokenizer). A flag given on the
// command line wins over its variable.
//
// Exit codes: 0 on success, 1 when a command fails, 2 for a usage error (an
// unknown command or flag, a missing or invalid flag value).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}
