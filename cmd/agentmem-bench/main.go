// Command agentmem-bench measures agentmem on whole runs, not single
// functions, which the go test -bench benchmarks measure. It drives a
// running server with load, times the proxy and the token counters,
// writes realistic agent traces and evaluates recall on a benchmark. Each
// measurement prints its figures as one JSON line on stdout, so runs can be
// compared and recorded in docs/benchmarks.md.
//
// Usage:
//
//	agentmem-bench [--log-level LEVEL] COMMAND [FLAGS]
//
// Commands:
//
//	load      drive a running agentmem serve with concurrent clients
//	compare   compare two agentmem builds' server CPU per request in alternated rounds
//	proxy     measure the latency the proxy routes add to a call
//	tokenize  count the tokens of a file and measure the counter
//	trace     write a realistic agent trace as JSONL
//	eval      evaluate recall on a LoCoMo-format dataset
//
// It is not part of a release: run it from a checkout, with
// go run ./cmd/agentmem-bench or a binary built from it. Flags, their
// AGENTMEM_* environment variables and exit codes follow agentmem's.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentmem/agentmem/internal/cli"
	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	a := &cli.App{LookupEnv: os.LookupEnv, SetDefault: true}
	code := cli.Execute(ctx, newRoot(a, os.Stdin, os.Stdout, os.Stderr), os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// newRoot builds the command tree. Each call builds a fresh tree, so
// tests can run commands side by side.
func newRoot(a *cli.App, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentmem-bench",
		Short: "Measure agentmem on whole runs (server load, the proxy, token counting, recall)",
		Long: `agentmem-bench measures whole runs, not single functions (those are the go
test -bench benchmarks). Each measurement prints its figures as one JSON
line on stdout, so runs can be compared and recorded in docs/benchmarks.md.

Every flag can also be given by an environment variable: AGENTMEM_ and the
flag's name in upper case, dashes as underscores (AGENTMEM_API_KEY for
--api-key). A flag given on the command line wins over its variable.`,
		Args: cobra.NoArgs,
	}
	return a.Root(root, stdin, stdout, stderr)
}

// execute runs the command line args and returns the exit code: 0, 1 when
// the command failed, 2 for a usage error. Errors go to stderr.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	return cli.Execute(ctx, newRoot(&cli.App{LookupEnv: lookupEnv}, stdin, stdout, stderr), args, stderr)
}
