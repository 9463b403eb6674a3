package main

import (
	"github.com/agentmem/agentmem/internal/bench/proxybench"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newProxyCmd) }

func newProxyCmd(*cli.App) *cobra.Command {
	var f proxybench.Config
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Measure the latency the proxy routes add to a call",
		Long: `proxy measures what POST /v1/chat/completions adds to a call: it starts a
stand-in OpenAI upstream on loopback (package proxytest, answering at once)
and an agentmem server over an in-memory store in this process, gives
each of --clients sessions --turns turns (a user message, then an
assistant reply; every fifth a tool call with a 1 KB result), then has
the clients, concurrently, each send --requests requests: the whole
history plus a new user message (--mode whole, as most agents do) or
only the new message (--mode new), once straight to the upstream and once
through the proxy, recording the reply as the client's history does.
--upstream-delay makes the upstream take that long to answer, as a model
does: with an upstream that answers at once, concurrent clients keep the
CPU busy and the figures measure its throughput rather than the latency
the proxy adds.
Before them every client sends one request, not measured, that warms its
session's caches; the measurement starts when all have. It prints the percentiles of both and their difference, the proxy's
overhead, as one JSON line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.Clients < 1 || f.Turns < 1 || f.Requests < 1 || f.Budget < 0 || f.UpstreamDelay < 0 {
				return cli.Usagef("--clients, --turns and --requests must be positive, --budget and --upstream-delay not negative")
			}
			if f.Mode != "whole" && f.Mode != "new" {
				return cli.Usagef("--mode is whole or new, not %q", f.Mode)
			}
			res, err := proxybench.Run(cmd.Context(), f, func() (func() error, error) {
				return cli.StartCPUProfile(cpuProfile)
			})
			if err != nil {
				return cli.Failure(err)
			}
			return cli.PrintJSONLine(cmd.OutOrStdout(), res)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.Clients, "clients", 16, "concurrent clients, each with a session of its own")
	fl.IntVar(&f.Turns, "turns", 1000, "the turns each session holds before the measurement")
	fl.IntVar(&f.Requests, "requests", 50, "the requests each client sends (each both ways)")
	fl.IntVar(&f.Budget, "budget", 8000, "X-Agentmem-Budget of the requests (0: the model's default)")
	fl.DurationVar(&f.UpstreamDelay, "upstream-delay", 0, "how long the stand-in upstream takes to answer each request (0: at once)")
	fl.StringVar(&f.Mode, "mode", "whole", "whole (each request resends the history) or new (only the new message)")
	// Hidden: for profiling (the whole process: clients, upstream and
	// server).
	fl.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to `FILE`")
	_ = fl.MarkHidden("cpuprofile")
	return cmd
}
