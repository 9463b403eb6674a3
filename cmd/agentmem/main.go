// Command agentmem is the command-line interface of agentmem, the memory
// layer for LLM agents.
//
// Usage:
//
//	agentmem [--log-level LEVEL] COMMAND [FLAGS]
//
// Commands:
//
//	serve     the memory server: HTTP API, MCP at /mcp, web inspector at /
//	mcp       the MCP tools over stdio, for desktop assistants and IDEs
//	keys      create, list and revoke API keys
//	recall    search the recall index, or rebuild it from the sessions
//	inspect   show a session as text or JSON: its steps and what the model would see
//	sessions  list the sessions of the store
//	facts     list and search what is known about a user
//	feed      show or drop a consumer's cursor on the change feed
//	export    write sessions to a JSONL file
//	import    read sessions from a JSONL file
//	replay    replay an agent trace through the memory engine and measure it
//	version   print the version, commit and build date (also --version)
//
// Every flag can also be given by an environment variable: the flag's name
// in upper case with dashes as underscores, after AGENTMEM_ (for example
// AGENTMEM_TOKENIZER=cl100k_base for --tokenizer). A flag given on the
// command line wins over its variable.
//
// The load generators and evaluations are a command of their own,
// agentmem-bench.
//
// Exit codes: 0 on success, 1 when a command fails, 2 for a usage error (an
// unknown command or flag, a missing or invalid flag value).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentmem/agentmem/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := executeApp(ctx, &cli.App{LookupEnv: os.LookupEnv, SetDefault: true}, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
