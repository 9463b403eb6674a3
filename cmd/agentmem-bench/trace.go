package main

import (
	"github.com/agentmem/agentmem/internal/bench/stepgen"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newTraceCmd) }

// traceFlags are the flags of agentmem-bench trace.
type traceFlags struct {
	steps int
	seed  uint64
	out   string
}

func newTraceCmd(*cli.App) *cobra.Command {
	var f traceFlags
	cmd := &cobra.Command{
		Use:   "trace --steps N [--seed S] [-o FILE]",
		Short: "Write a realistic agent trace as JSONL (for replay and load tests)",
		Long: `Trace writes a synthetic agent run as JSONL, one OpenAI-format chat message
per line: a system prompt of about 2,000 characters, a task of about 300,
then --steps actions, each an assistant message (200-500 characters of
reasoning and one tool call) followed by its tool result (log-normal around
1,500 characters, 3% of 10,000-30,000, mixing prose, JSON, code, stack
traces and shell output). These are the steps 'agentmem-bench load' seeds
sessions with. The same --steps and --seed always give the same file.

'agentmem replay --trace FILE' replays it.`,
		Example: `  agentmem-bench trace --steps 1000 --seed 42 -o /tmp/trace.jsonl
  agentmem replay --trace /tmp/trace.jsonl --budget 8000 --baseline`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.steps < 0 {
				return cli.Usagef("--steps must not be negative")
			}
			if f.out == "" || f.out == "-" {
				if err := stepgen.WriteTrace(cmd.OutOrStdout(), f.steps, f.seed); err != nil {
					return cli.Failure(err)
				}
				return nil
			}
			af, err := cli.CreateAtomic(f.out)
			if err != nil {
				return cli.Failure(err)
			}
			if err := stepgen.WriteTrace(af, f.steps, f.seed); err != nil {
				af.Abort()
				return cli.Failure(err)
			}
			if err := af.Commit(); err != nil {
				return cli.Failure(err)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&f.steps, "steps", 1000, "the number of actions (`N`), each a tool call and its result")
	cmd.Flags().Uint64Var(&f.seed, "seed", 42, "the random `SEED`: the same seed gives the same trace")
	cmd.Flags().StringVarP(&f.out, "out", "o", "", "write to `FILE` (complete or not at all) instead of standard output")
	return cmd
}
