package main

import "github.com/spf13/cobra"

func init() { register(newBenchCmd) }

// benchCommands holds the constructors of the subcommands of agentmem
// bench. Each lives in its own file and adds itself from an init function
// with registerBench, as the top-level commands do with register.
var benchCommands []func(*app) *cobra.Command

// registerBench adds a subcommand of agentmem bench; call it from init.
func registerBench(newCmd func(*app) *cobra.Command) { benchCommands = append(benchCommands, newCmd) }

// newBenchCmd builds agentmem bench, the group of whole-run measurements.
func newBenchCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure agentmem on whole runs (token counting, server load)",
		Long: `bench measures whole runs, not single functions (those are the go test
-bench benchmarks). Each subcommand prints its figures as one JSON line on
stdout, so runs can be compared and recorded in docs/benchmarks.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	for _, newCmd := range benchCommands {
		cmd.AddCommand(newCmd(a))
	}
	return cmd
}
