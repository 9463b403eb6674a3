package main

import (
	"net/url"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/bench/load"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { cli.Register(newLoadCmd) }

func newLoadCmd(a *cli.App) *cobra.Command {
	var f load.Config
	cmd := &cobra.Command{
		Use:   "load --server URL --op append|context|loop",
		Short: "Drive a running agentmem serve with concurrent clients and measure it",
		Long: `Load measures a running 'agentmem serve' from another process, as its
clients see it: requests per second and the latency distribution of one
operation under N concurrent keep-alive clients.

It first seeds --sessions new sessions of --steps realistic steps each (a
system prompt of about 2,000 characters, a task, then agent actions: a few
hundred characters of reasoning, one tool call and its result, whose length
is log-normal around 1,500 characters with 3% of 10,000 to 30,000, mixing
prose, JSON, code, stack traces and shell output; deterministic for a
--seed). With --trace it seeds each session from a JSONL trace of OpenAI chat
messages instead (such as 'agentmem-bench trace' writes), through
POST /v1/sessions/{id}/messages.

Then each client, bound to one session (client i to session i mod
--sessions), repeats the operation as fast as the server answers:
  append   POST /v1/sessions/{id}/steps with one new action step and an
           Idempotency-Key (the sessions grow during the run);
  context  GET /v1/sessions/{id}/context?budget=&format=&tokenizer=;
  loop     an agent loop: append one step, then read the context; each
           iteration counts as one request, its latency the pair's;
  mixed    a soak of mixed traffic: each request drawn at random among
           appends (45%), contexts (25%), creates (8%), forks (7%),
           deletes (7%) and recall searches (8%), on the seeded sessions
           and up to 8 of the client's own; the report adds the count of
           each and the server's resident memory and Go heap (from /metrics) over the
           measured period.
Requests in the first --warmup are not counted. Latency is measured from
sending the request to the end of its response body; percentiles are exact
(every sample is kept and sorted).

It prints one JSON line on stdout: requests, requests_per_s, the latency
percentiles in milliseconds, and the failed requests by HTTP status (or
"transport" for a connection error). With append and loop, index_lag says
how far the server's recall index (which follows the log in the
background) was behind: the per-change lag from /metrics of the changes
indexed from the start of the measured period until the index caught up
after it (p50 and p99, as the upper bounds of the histogram's buckets),
the largest lag /readyz showed, sampled every 100ms, and how long a
fresh=true search took right after the run. server_cpu is the CPU time the
server process spent during the measured period (process_cpu_seconds_total
in its /metrics, read when the period starts and ends, so the load
generator's own CPU is not in it) and that time in milliseconds per
request (with loop, per loop): what the server's work costs on a machine
the load generator shares. A run with any failed request exits
with status 1 after printing it. The seeded sessions are deleted at the end
unless --keep.

The load generator needs CPU too: on a small machine it competes with the
server for it, which the figures then include.`,
		Example: `  agentmem serve --store sqlite:///tmp/bench.db &
  agentmem-bench load --server http://127.0.0.1:8080 --op context --clients 16 --duration 30s
  agentmem-bench load --server http://127.0.0.1:8080 --op append --clients 16 --duration 30s
  AGENTMEM_API_KEY=am_... agentmem-bench load --server http://127.0.0.1:8080 --op loop --budget 8000 --format anthropic`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLoad(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Server, "server", "", "the base `URL` of the running server, e.g. http://127.0.0.1:8080 (required)")
	fl.StringVar(&f.APIKey, "api-key", "", "the API key to send as a Bearer token (prefer AGENTMEM_API_KEY: flags show in ps)")
	addLoadFlags(fl, &f)
	fl.BoolVar(&f.Keep, "keep", false, "keep the seeded sessions instead of deleting them at the end")
	return cmd
}

// addLoadFlags adds the flags that shape a load, those of load and compare
// alike: the operation, the clients and sessions, the periods and the
// context requests' query.
func addLoadFlags(fl *pflag.FlagSet, f *load.Config) {
	fl.StringVar(&f.Op, "op", load.OpContext, "the operation: append, context, loop or mixed")
	fl.IntVar(&f.Clients, "clients", 16, "the number of concurrent clients, each with its own keep-alive connection")
	fl.IntVar(&f.Sessions, "sessions", 4, "the number of sessions to seed and spread the clients over")
	fl.IntVar(&f.Steps, "steps", 1000, "the steps of each seeded session (system prompt and task included; ignored with --trace)")
	fl.DurationVar(&f.Duration, "duration", 30*time.Second, "how long to measure")
	fl.DurationVar(&f.Warmup, "warmup", 3*time.Second, "how long to run before measuring (loads the server's caches)")
	fl.DurationVar(&f.Timeout, "timeout", 30*time.Second, "the time limit of one request")
	fl.IntVar(&f.Budget, "budget", 8000, "the token budget of the context requests")
	fl.StringVar(&f.Format, "format", render.NameOpenAI, "the format of the context requests: openai, anthropic or observation")
	fl.StringVar(&f.Tokenizer, "tokenizer", tokenizer.O200kBase, "the token counter of the context requests: o200k_base, cl100k_base or heuristic")
	fl.StringVar(&f.Trace, "trace", "", "seed the sessions from this JSONL trace of OpenAI chat messages (`FILE`) instead of generated steps")
	fl.Uint64Var(&f.Seed, "seed", 42, "the seed of the generated steps")
}

// runLoad runs agentmem-bench load: it prints the result, even of a run in
// which requests failed (exit code 1).
func runLoad(cmd *cobra.Command, a *cli.App, f load.Config) error {
	if err := checkLoadFlags(&f); err != nil {
		return err
	}
	f.Log = a.Log
	res, err := load.Run(cmd.Context(), f)
	if res != nil {
		if perr := cli.PrintJSONLine(cmd.OutOrStdout(), res); perr != nil {
			return perr
		}
	}
	if err != nil {
		return cli.Failure(err)
	}
	return nil
}

// checkLoadFlags checks the flags and trims the server URL to its base.
func checkLoadFlags(f *load.Config) error {
	if f.Server == "" {
		return cli.Usagef("--server is required (the base URL of a running agentmem serve)")
	}
	u, err := url.Parse(f.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return cli.Usagef("--server %q: want http://HOST:PORT or https://HOST:PORT", f.Server)
	}
	if err := checkLoadShape(f); err != nil {
		return err
	}
	f.Server = strings.TrimRight(u.String(), "/")
	return nil
}

// checkLoadShape checks the flags addLoadFlags adds.
func checkLoadShape(f *load.Config) error {
	switch f.Op {
	case load.OpAppend, load.OpContext, load.OpLoop, load.OpMixed:
	default:
		return cli.Usagef("--op %q: want append, context, loop or mixed", f.Op)
	}
	switch {
	case f.Clients < 1 || f.Clients > 10000:
		return cli.Usagef("--clients must be between 1 and 10000")
	case f.Sessions < 1 || f.Sessions > 10000:
		return cli.Usagef("--sessions must be between 1 and 10000")
	case f.Trace == "" && (f.Steps < 2 || f.Steps > 1_000_000):
		return cli.Usagef("--steps must be between 2 and 1000000 (a system prompt, a task, then actions)")
	case f.Duration <= 0:
		return cli.Usagef("--duration must be positive")
	case f.Warmup < 0:
		return cli.Usagef("--warmup must not be negative")
	case f.Timeout <= 0:
		return cli.Usagef("--timeout must be positive")
	case f.Budget < 0:
		return cli.Usagef("--budget must not be negative (0: no budget)")
	}
	if _, err := render.ByName(f.Format); err != nil {
		return cli.Usagef("--format: %v", err)
	}
	if _, err := tokenizer.Get(f.Tokenizer); err != nil {
		return cli.Usagef("--tokenizer %q: %v", f.Tokenizer, err)
	}
	return nil
}
