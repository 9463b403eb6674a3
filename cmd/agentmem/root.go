package main

import (
	"context"
	"io"

	"github.com/agentmem/agentmem/internal/cli"
	"github.com/spf13/cobra"
)

// newRoot builds the command tree. Each call builds a fresh tree, so
// tests can run commands side by side.
func newRoot(a *cli.App, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentmem",
		Short: "agentmem is the memory layer for LLM agents",
		Long: `agentmem is the memory layer for LLM agents: an agent's run as a log of
typed steps, rendered to valid chat messages that fit an exact token budget.

Every flag can also be given by an environment variable: AGENTMEM_ and the
flag's name in upper case, dashes as underscores (AGENTMEM_TOKENIZER for
--tokenizer, AGENTMEM_LOG_LEVEL for --log-level). A flag given on the
command line wins over its variable.

The load generators and evaluations are a command of their own,
agentmem-bench (go run ./cmd/agentmem-bench --help in a checkout).`,
	}
	// --version prints what `agentmem version` does.
	root.Version = versionLine(readBuild())
	root.SetVersionTemplate("{{.Version}}\n")
	return a.Root(root, stdin, stdout, stderr)
}

// execute runs the command line args and returns the exit code: 0, 1 when
// the command failed, 2 for a usage error. Errors go to stderr.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	return executeApp(ctx, &cli.App{LookupEnv: lookupEnv}, args, stdin, stdout, stderr)
}

// executeApp is execute with the app given: main's makes its logger
// slog's default.
func executeApp(ctx context.Context, a *cli.App, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.Execute(ctx, newRoot(a, stdin, stdout, stderr), args, stderr)
}
