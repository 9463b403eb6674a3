package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"time"

	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newTokenizeCmd) }

// tokenizeFlags are the flags of agentmem-bench tokenize.
type tokenizeFlags struct {
	encoding string
	parallel bool
	workers  int
	repeat   int
}

func newTokenizeCmd(*cli.App) *cobra.Command {
	var f tokenizeFlags
	cmd := &cobra.Command{
		Use:   "tokenize --encoding o200k_base [--parallel] FILE",
		Short: "Count the tokens of a file and measure the counter's throughput",
		Long: `Tokenize counts the tokens of FILE ("-" for standard input) with one of
agentmem's counters and measures how fast: the whole file is counted in one
call, --repeat times, after the encoding has been loaded.

By default the file is counted on one goroutine (tokenizer Counter.Count);
with --parallel it is cut at piece boundaries into chunks counted on
--workers goroutines (tokenizer.CountParallel), which gives the same count.

It prints one JSON line on stdout: the encoding, the file's bytes, its
tokens, the fastest run's seconds and MB/s (10^6 bytes a second, as go
test reports), every run's seconds, and load_ms, the time the encoding's
first use took in this process (loading its embedded ranks).`,
		Example: `  agentmem-bench tokenize --encoding o200k_base corpus.txt
  agentmem-bench tokenize --encoding cl100k_base --parallel --repeat 5 corpus.txt
  cat notes.md | agentmem-bench tokenize --encoding o200k_base -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTokenize(cmd, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.encoding, "encoding", tokenizer.O200kBase, "the counter: o200k_base, cl100k_base or heuristic")
	fl.BoolVar(&f.parallel, "parallel", false, "count on several goroutines (--workers)")
	fl.IntVar(&f.workers, "workers", 0, "goroutines for --parallel (0: GOMAXPROCS, the usable cores)")
	fl.IntVar(&f.repeat, "repeat", 3, "how many times to count the file; the fastest run is reported")
	return cmd
}

// tokenizeResult is the JSON line agentmem-bench tokenize prints.
type tokenizeResult struct {
	Encoding    string    `json:"encoding"`
	File        string    `json:"file"`
	Bytes       int       `json:"bytes"`
	Tokens      int       `json:"tokens"`
	Parallel    bool      `json:"parallel"`
	Workers     int       `json:"workers"`
	Seconds     float64   `json:"seconds"`
	MBPerSecond float64   `json:"mb_per_s"`
	Runs        []float64 `json:"runs_seconds"`
	LoadMS      float64   `json:"load_ms"`
}

func runTokenize(cmd *cobra.Command, f tokenizeFlags, file string) error {
	counter, err := tokenizer.Get(f.encoding)
	if err != nil {
		return cli.Usagef("--encoding: %v", err)
	}
	if f.repeat < 1 {
		return cli.Usagef("--repeat must be at least 1, not %d", f.repeat)
	}
	if f.workers < 0 {
		return cli.Usagef("--workers must not be negative, not %d", f.workers)
	}
	workers := 1
	if f.parallel {
		workers = f.workers
		if workers == 0 {
			workers = runtime.GOMAXPROCS(0)
		}
	}
	var data []byte
	if file == "-" {
		data, err = io.ReadAll(cmd.InOrStdin())
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return cli.Failure(err)
	}
	text := string(data)

	start := time.Now()
	counter.Count("") // loads the ranks on first use
	load := time.Since(start)

	res := tokenizeResult{Encoding: f.encoding, File: file, Bytes: len(text), Parallel: f.parallel, Workers: workers,
		LoadMS: round6(float64(load.Microseconds()) / 1000)}
	best := time.Duration(math.MaxInt64)
	for range f.repeat {
		start := time.Now()
		var n int
		if f.parallel {
			n = tokenizer.CountParallel(counter, text, workers)
		} else {
			n = counter.Count(text)
		}
		d := time.Since(start)
		if len(res.Runs) > 0 && n != res.Tokens {
			return cli.Failure(fmt.Errorf("run %d counted %d tokens, run 1 %d", len(res.Runs)+1, n, res.Tokens))
		}
		res.Tokens = n
		res.Runs = append(res.Runs, round6(d.Seconds()))
		best = min(best, d)
	}
	res.Seconds = round6(best.Seconds())
	if best > 0 {
		res.MBPerSecond = round6(float64(len(text)) / 1e6 / best.Seconds())
	}
	if err := cli.PrintJSONLine(cmd.OutOrStdout(), res); err != nil {
		return err
	}
	return nil
}

// round6 rounds x to 6 decimal places (microseconds, for seconds).
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
