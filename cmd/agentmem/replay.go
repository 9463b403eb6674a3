package main

import (
	"bytes"
	"errors"
	"io"
	"os"

	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/replay"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newReplayCmd) }

// replayFlags are the flags of agentmem replay.
type replayFlags struct {
	trace, out, tokenizer, format string
	budget                        int
	baseline                      bool
	cpuProfile, memProfile        string
}

func newReplayCmd(a *cli.App) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay --trace FILE --budget N",
		Short: "Replay an agent trace through the memory engine and measure it",
		Long: `Replay reads a JSONL trace of OpenAI-format chat messages (the system prompt,
the task, then the agent's turns), adds them to a memory one by one, and
renders the context under the budget before every assistant message, as an
agent loop would, and once more at the end. Every render is checked: under
budget, system prompt and task kept, every tool result with its call and
every call with its result, the format's API rules, no gap in the kept
window.

It prints one JSON line to stdout: counts, the total time, the render time
distribution, the final context's size, the peak RSS and the violations by
kind. With --baseline it also times the tokenizer alone on the trace's text
(tokenize_seconds) and reports ratio = total_seconds / tokenize_seconds.

A bad trace line stops the run with its line number (exit code 1).`,
		Example: `  agentmem-bench trace --steps 1000 --seed 42 -o trace_1k.jsonl
  agentmem replay --trace trace_1k.jsonl --budget 8000 --baseline
  agentmem replay --trace trace_1k.jsonl --budget 8000 --format anthropic --out final.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReplay(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.trace, "trace", "", "the JSONL trace to replay (`FILE`, or - for stdin)")
	fl.IntVar(&f.budget, "budget", 0, "the token budget of every render (required)")
	fl.StringVar(&f.tokenizer, "tokenizer", tokenizer.O200kBase, "the token counter: o200k_base, cl100k_base or heuristic")
	fl.StringVar(&f.format, "format", render.NameOpenAI, "the rendering format: openai, anthropic or observation")
	fl.StringVar(&f.out, "out", "", "write the final context as JSON to `FILE`")
	fl.BoolVar(&f.baseline, "baseline", false, "first time the tokenizer alone on the trace's text, and report the ratio")
	// Hidden: for profiling.
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the replay to `FILE`")
	fl.StringVar(&f.memProfile, "memprofile", "", "write a heap profile after the replay to `FILE`")
	for _, name := range []string{"cpuprofile", "memprofile"} {
		_ = fl.MarkHidden(name)
	}
	return cmd
}

func runReplay(cmd *cobra.Command, a *cli.App, f replayFlags) error {
	if f.trace == "" {
		return cli.Usagef("--trace is required")
	}
	if f.budget < 1 {
		return cli.Usagef("--budget is required and must be at least 1 token")
	}
	var trace io.Reader = cmd.InOrStdin()
	if f.trace != "-" {
		file, err := os.Open(f.trace)
		if err != nil {
			return cli.Failure(err)
		}
		defer file.Close()
		trace = file
	}
	var out bytes.Buffer
	cfg := replay.Config{
		Trace:     trace,
		Budget:    f.budget,
		Tokenizer: f.tokenizer,
		Format:    f.format,
		Baseline:  f.baseline,
		Logger:    a.Log,
	}
	if f.out != "" {
		cfg.Out = &out
	}
	stopProfile, err := cli.StartCPUProfile(f.cpuProfile)
	if err != nil {
		return cli.Failure(err)
	}
	res, err := replay.Run(cmd.Context(), cfg)
	if perr := stopProfile(); err == nil && perr != nil {
		err = perr
	}
	if errors.Is(err, replay.ErrConfig) {
		return cli.UsageError(err)
	}
	if err != nil {
		return cli.Failure(err)
	}
	if f.memProfile != "" {
		if err := cli.WriteHeapProfile(f.memProfile); err != nil {
			return cli.Failure(err)
		}
	}
	if f.out != "" {
		if err := os.WriteFile(f.out, out.Bytes(), 0o644); err != nil {
			return cli.Failure(err)
		}
	}
	if err := cli.PrintJSONLine(cmd.OutOrStdout(), res); err != nil {
		return err
	}
	if res.Violations.Total > 0 {
		a.Log.Warn("the replay found violations", "total", res.Violations.Total)
	}
	return nil
}
