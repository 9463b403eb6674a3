package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentmem/agentmem/internal/bench/load"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newCompareCmd) }

// compareFlags are the flags of agentmem-bench compare.
type compareFlags struct {
	base, head   string
	rounds       int
	dir          string
	serveArgs    []string
	startTimeout time.Duration
	// nice, when not 0, is the niceness the servers run at (nice -n).
	nice int
	load load.Config
}

func newCompareCmd(a *cli.App) *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare --base BIN --head BIN",
		Short: "Compare two agentmem builds' server CPU per request in alternated rounds",
		Long: `Compare measures the CPU time two builds of agentmem spend serving the same
load, in alternated rounds: on a shared, noisy machine runs of one build
differ from round to round by more than builds differ, so only many rounds,
alternated, say which build is cheaper.

Each of --rounds rounds runs the base build, then the head build. A run
starts 'BIN serve --store sqlite://DIR/NAME.db --addr 127.0.0.1:PORT
--prune-interval 0 --log-level error' on a new SQLite file and a free port,
with any --serve-arg values after those (the servers inherit the
environment), waits for GET /healthz to answer 200, runs the load that
'agentmem-bench load' runs with the same flags against it, stops the server
with SIGTERM and removes its files. DIR is --dir, or a new temporary
directory removed at the end. The server's CPU time comes from its
/metrics: a build without process_cpu_seconds_total there cannot be
compared.

It prints one JSON line on stdout: the config; each run (its round, build,
requests, requests_per_s and server_cpu); the ratio head/base of
server_cpu.ms_per_op of each round; for each build the median ms_per_op of
its runs and its pooled ms_per_op (all its runs' CPU seconds over all
their requests); and three ratios head/base: of the medians, the median of
the rounds' ratios, and of the pooled figures. A run with failed requests
is in the runs with its error but not in the figures; the command then
exits with status 1 after printing. A server that does not start or stop
cleanly ends the command (status 1) after printing the runs before it.`,
		Example: `  go build -o /tmp/agentmem ./cmd/agentmem
  git worktree add /tmp/base BASE && (cd /tmp/base && go build -o /tmp/agentmem-base ./cmd/agentmem)
  agentmem-bench compare --base /tmp/agentmem-base --head /tmp/agentmem --rounds 8 \
    --op loop --clients 16 --sessions 16 --steps 200 --duration 15s --warmup 3s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCompare(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.base, "base", "", "the agentmem binary `BIN` of the build to compare against (required)")
	fl.StringVar(&f.head, "head", "", "the agentmem binary `BIN` of the build to measure (required)")
	fl.IntVar(&f.rounds, "rounds", 8, "the number of rounds, each a run of the base then one of the head")
	fl.StringVar(&f.dir, "dir", "", "the directory `DIR` of the servers' SQLite files (default a new temporary directory, removed at the end)")
	fl.StringArrayVar(&f.serveArgs, "serve-arg", nil, "add `ARG` to each 'serve' command line (repeat the flag for more arguments)")
	fl.DurationVar(&f.startTimeout, "start-timeout", 30*time.Second, "how long a server has to answer GET /healthz")
	fl.IntVar(&f.nice, "nice", 0, "run each server under `nice -n N`, so that the load generator and the rest of the machine take less of its cores (0: at compare's own priority; a negative N needs the privilege to raise it)")
	addLoadFlags(fl, &f.load)
	return cmd
}

// runCompare runs agentmem-bench compare: it prints the runs done, even
// when one failed (exit code 1).
func runCompare(cmd *cobra.Command, a *cli.App, f compareFlags) error {
	if err := checkCompareFlags(&f); err != nil {
		return err
	}
	dir := f.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "agentmem-bench-compare-")
		if err != nil {
			return cli.Failure(err)
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return cli.Failure(err)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return cli.Failure(err)
	}

	res := &compareResult{Config: compareConfigOf(f)}
	builds := []struct{ name, bin string }{{"base", f.base}, {"head", f.head}}
rounds:
	for round := 1; round <= f.rounds; round++ {
		for _, b := range builds {
			a.Log.Info("compare: starting a run", "round", round, "build", b.name, "bin", b.bin)
			run, rerr := compareOne(cmd.Context(), a.Log, f, dir, round, b.name, b.bin)
			if rerr != nil {
				err = fmt.Errorf("round %d, the %s build (%s): %w", round, b.name, b.bin, rerr)
				break rounds
			}
			res.Runs = append(res.Runs, run)
			attrs := []any{"round", round, "build", b.name, "requests", run.Requests, "requests_per_s", run.RequestsPerSecond}
			if run.ServerCPU != nil {
				attrs = append(attrs, "server_cpu_s", run.ServerCPU.Seconds, "ms_per_op", run.ServerCPU.MsPerOp)
			}
			if run.Error != "" {
				attrs = append(attrs, "error", run.Error)
			}
			a.Log.Info("compare: run done", attrs...)
		}
	}
	res.compareSummary = summarizeCompare(res.Runs)
	if len(res.Runs) > 0 {
		if perr := cli.PrintJSONLine(cmd.OutOrStdout(), res); perr != nil {
			return perr
		}
	}
	if err != nil {
		return cli.Failure(err)
	}
	var failed []string
	for _, r := range res.Runs {
		if r.Error != "" {
			failed = append(failed, fmt.Sprintf("round %d, %s: %s", r.Round, r.Build, r.Error))
		}
	}
	if len(failed) > 0 {
		return cli.Failure(fmt.Errorf("%d runs failed and are not in the figures: %s", len(failed), strings.Join(failed, "; ")))
	}
	return nil
}

// checkCompareFlags checks the flags and resolves the binaries.
func checkCompareFlags(f *compareFlags) error {
	for _, b := range []struct {
		flag string
		bin  *string
	}{{"--base", &f.base}, {"--head", &f.head}} {
		if *b.bin == "" {
			return cli.Usagef("%s is required (an agentmem binary)", b.flag)
		}
		path, err := exec.LookPath(*b.bin)
		if err != nil {
			return cli.Usagef("%s %q: %v", b.flag, *b.bin, err)
		}
		*b.bin = path
	}
	switch {
	case f.rounds < 1 || f.rounds > 1000:
		return cli.Usagef("--rounds must be between 1 and 1000")
	case f.startTimeout <= 0:
		return cli.Usagef("--start-timeout must be positive")
	case f.nice < -20 || f.nice > 19:
		return cli.Usagef("--nice must be between -20 and 19")
	}
	if f.nice != 0 {
		if _, err := exec.LookPath("nice"); err != nil {
			return cli.Usagef("--nice: %v", err)
		}
	}
	// compare sets the store and the address of each server itself.
	for _, arg := range f.serveArgs {
		name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if strings.HasPrefix(arg, "-") && (name == "store" || name == "addr") {
			return cli.Usagef("--serve-arg %q: compare gives each server its own --store and --addr", arg)
		}
	}
	return checkLoadShape(&f.load)
}

// compareOne runs one build's run of a round: it starts the server on a
// new SQLite file in dir, loads it, stops it and removes its files. A run
// whose load had failed requests is returned with its Error set; an error
// is a run that could not be made or measured.
func compareOne(ctx context.Context, log *slog.Logger, f compareFlags, dir string, round int, build, bin string) (run compareRun, err error) {
	db := filepath.Join(dir, fmt.Sprintf("r%d-%s.db", round, build))
	if old, _ := filepath.Glob(db + "*"); len(old) > 0 {
		return run, fmt.Errorf("%s exists: each server needs a new SQLite file", old[0])
	}
	defer func() {
		files, _ := filepath.Glob(db + "*")
		for _, name := range files {
			if rerr := os.Remove(name); rerr != nil && err == nil {
				err = rerr
			}
		}
	}()
	srv, err := startServer(ctx, bin, db, f.serveArgs, f.nice, f.startTimeout)
	if err != nil {
		return run, err
	}
	cfg := f.load
	cfg.Server, cfg.Keep, cfg.Log = srv.url, true, log // the file is removed: no need to delete the sessions
	res, lerr := load.Run(ctx, cfg)
	if serr := srv.stop(); serr != nil {
		return run, serr
	}
	if cerr := ctx.Err(); cerr != nil {
		return run, cerr
	}
	if res == nil {
		return run, lerr
	}
	if res.Requests > 0 && res.ServerCPU == nil {
		return run, errors.New("its server reports no server_cpu: its /metrics has no process_cpu_seconds_total")
	}
	run = compareRun{Round: round, Build: build, Requests: res.Requests, Failed: res.Failed,
		RequestsPerSecond: res.RequestsPerSecond, ServerCPU: res.ServerCPU}
	switch {
	case lerr != nil:
		run.Error = lerr.Error()
	case res.Requests == 0:
		run.Error = "no request in the measured period"
	}
	return run, nil
}

// serverProcess is an agentmem serve started by compare.
type serverProcess struct {
	cmd    *exec.Cmd
	url    string
	output *tailBuffer
	exited chan struct{} // closed when the process has exited; then waitErr is set
	// waitErr is what Wait returned.
	waitErr error
}

// startServer starts bin serve on db and a free loopback port, under nice
// -n nice unless nice is 0, and waits until it answers GET /healthz with
// 200. nice execs the server, so the process started is the server. A port another process takes
// between compare's choice and the server's listen is tried again, with
// another port.
func startServer(ctx context.Context, bin, db string, extra []string, nice int, timeout time.Duration) (*serverProcess, error) {
	for attempt := 1; ; attempt++ {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		args := append([]string{"serve", "--store", "sqlite://" + db, "--addr", addr, "--prune-interval", "0", "--log-level", "error"}, extra...)
		if nice != 0 {
			args = append([]string{"-n", strconv.Itoa(nice), bin}, args...)
			bin = "nice"
		}
		s := &serverProcess{cmd: exec.Command(bin, args...), url: "http://" + addr, output: &tailBuffer{max: 4 << 10}, exited: make(chan struct{})}
		s.cmd.Stdout, s.cmd.Stderr = s.output, s.output
		if err := s.cmd.Start(); err != nil {
			return nil, err
		}
		go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
		err = s.waitHealthy(ctx, timeout)
		if err == nil {
			return s, nil
		}
		if serr := s.stop(); serr != nil && ctx.Err() == nil && !errors.Is(err, errServerExited) {
			err = fmt.Errorf("%w; stopping it: %v", err, serr)
		}
		if errors.Is(err, errServerExited) && strings.Contains(s.output.String(), "address already in use") && attempt < 3 {
			continue
		}
		return nil, err
	}
}

// errServerExited is a server that exited before it was healthy.
var errServerExited = errors.New("the server exited before answering GET /healthz")

// waitHealthy polls GET /healthz until it answers 200, the server exits,
// timeout passes or ctx is done. The server gives no other sign that it is
// ready.
func (s *serverProcess) waitHealthy(ctx context.Context, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/healthz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.exited:
			return fmt.Errorf("%w (%v); its output ends: %s", errServerExited, s.waitErr, s.output.Tail())
		case <-deadline.C:
			return fmt.Errorf("the server did not answer GET %s/healthz with 200 within %s; its output ends: %s", s.url, timeout, s.output.Tail())
		case <-tick.C:
		}
	}
}

// stopTimeout is how long a server has to exit after SIGTERM before it is
// killed.
const stopTimeout = 30 * time.Second

// stop stops the server with SIGTERM, or kills it if it has not exited
// within stopTimeout, and waits for it. A server that exits with an error
// is an error, with the end of its output.
func (s *serverProcess) stop() error {
	select {
	case <-s.exited:
	default:
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			_ = s.cmd.Process.Kill()
		}
		t := time.NewTimer(stopTimeout)
		defer t.Stop()
		select {
		case <-s.exited:
		case <-t.C:
			_ = s.cmd.Process.Kill()
			<-s.exited
			return fmt.Errorf("the server did not exit within %s of SIGTERM and was killed; its output ends: %s", stopTimeout, s.output.Tail())
		}
	}
	if s.waitErr != nil {
		return fmt.Errorf("the server exited with %v; its output ends: %s", s.waitErr, s.output.Tail())
	}
	return nil
}

// freeAddr returns a loopback address with a port no one listens on.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// tailBuffer keeps the last max bytes written to it: a server's output,
// for the errors that say why it failed.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns what the buffer holds.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Tail returns what the buffer holds, trimmed, or "(nothing)".
func (t *tailBuffer) Tail() string {
	s := string(bytes.TrimSpace([]byte(t.String())))
	if s == "" {
		return "(nothing)"
	}
	return s
}

// compareResult is the JSON line agentmem-bench compare prints.
type compareResult struct {
	Config compareConfig `json:"config"`
	Runs   []compareRun  `json:"runs"`
	compareSummary
}

// compareConfig is the measurement's shape: the flags.
type compareConfig struct {
	Base      string   `json:"base"`
	Head      string   `json:"head"`
	Rounds    int      `json:"rounds"`
	ServeArgs []string `json:"serve_args,omitempty"`
	Op        string   `json:"op"`
	Clients   int      `json:"clients"`
	Sessions  int      `json:"sessions"`
	Steps     int      `json:"steps,omitempty"`
	Trace     string   `json:"trace,omitempty"`
	Seed      uint64   `json:"seed"`
	Budget    int      `json:"budget"`
	Format    string   `json:"format"`
	Tokenizer string   `json:"tokenizer"`
	Duration  float64  `json:"duration_s"`
	Warmup    float64  `json:"warmup_s"`
	Timeout   float64  `json:"timeout_s"`
}

func compareConfigOf(f compareFlags) compareConfig {
	c := compareConfig{Base: f.base, Head: f.head, Rounds: f.rounds, ServeArgs: f.serveArgs,
		Op: f.load.Op, Clients: f.load.Clients, Sessions: f.load.Sessions, Trace: f.load.Trace, Seed: f.load.Seed,
		Budget: f.load.Budget, Format: f.load.Format, Tokenizer: f.load.Tokenizer,
		Duration: f.load.Duration.Seconds(), Warmup: f.load.Warmup.Seconds(), Timeout: f.load.Timeout.Seconds()}
	if c.Trace == "" {
		c.Steps = f.load.Steps
	}
	return c
}

// compareRun is one run of one build.
type compareRun struct {
	Round             int             `json:"round"`
	Build             string          `json:"build"` // base or head
	Requests          int64           `json:"requests"`
	Failed            int64           `json:"failed,omitempty"`
	RequestsPerSecond float64         `json:"requests_per_s"`
	ServerCPU         *load.ServerCPU `json:"server_cpu,omitempty"`
	// Error says why the run is not in the figures.
	Error string `json:"error,omitempty"`
}

// measured reports whether the run counts in the figures.
func (r compareRun) measured() bool {
	return r.Error == "" && r.Requests > 0 && r.ServerCPU != nil
}

// compareSummary is the figures of the runs. A figure that cannot be
// computed (no measured run of a build) is absent.
type compareSummary struct {
	// RoundRatios is head/base of ms_per_op in each round whose two runs
	// were measured.
	RoundRatios []roundRatio `json:"round_ratios"`
	Base        buildSummary `json:"base"`
	Head        buildSummary `json:"head"`
	// RatioOfMedians is Head.MedianMsPerOp / Base.MedianMsPerOp;
	// MedianRoundRatio the median of RoundRatios; PooledRatio
	// Head.PooledMsPerOp / Base.PooledMsPerOp.
	RatioOfMedians   float64 `json:"ratio_of_medians,omitempty"`
	MedianRoundRatio float64 `json:"median_round_ratio,omitempty"`
	PooledRatio      float64 `json:"pooled_ratio,omitempty"`
}

// roundRatio is head/base of ms_per_op in one round.
type roundRatio struct {
	Round int     `json:"round"`
	Ratio float64 `json:"ratio"`
}

// buildSummary is the figures of one build's measured runs.
type buildSummary struct {
	Runs          int     `json:"runs"`
	MedianMsPerOp float64 `json:"median_ms_per_op,omitempty"`
	// CPUSeconds and Requests are the sums over the runs; PooledMsPerOp is
	// the one over the other, in milliseconds.
	CPUSeconds    float64 `json:"cpu_seconds"`
	Requests      int64   `json:"requests"`
	PooledMsPerOp float64 `json:"pooled_ms_per_op,omitempty"`
}

// summarizeCompare computes the figures of runs, leaving out those not
// measured (a round with one of them has no ratio).
func summarizeCompare(runs []compareRun) compareSummary {
	var s compareSummary
	perOp := map[string][]float64{}
	byRound := map[int]map[string]float64{}
	var rounds []int
	for _, r := range runs {
		if !r.measured() {
			continue
		}
		b := &s.Base
		if r.Build == "head" {
			b = &s.Head
		}
		b.Runs++
		b.CPUSeconds += r.ServerCPU.Seconds
		b.Requests += r.Requests
		perOp[r.Build] = append(perOp[r.Build], r.ServerCPU.MsPerOp)
		if byRound[r.Round] == nil {
			byRound[r.Round] = map[string]float64{}
			rounds = append(rounds, r.Round)
		}
		byRound[r.Round][r.Build] = r.ServerCPU.MsPerOp
	}
	slices.Sort(rounds)
	var ratios []float64
	for _, n := range rounds {
		base, okBase := byRound[n]["base"]
		head, okHead := byRound[n]["head"]
		if okBase && okHead && base > 0 {
			s.RoundRatios = append(s.RoundRatios, roundRatio{Round: n, Ratio: roundTo(head/base, 3)})
			ratios = append(ratios, head/base)
		}
	}
	for _, b := range []struct {
		sum   *buildSummary
		build string
	}{{&s.Base, "base"}, {&s.Head, "head"}} {
		b.sum.CPUSeconds = roundTo(b.sum.CPUSeconds, 2)
		b.sum.MedianMsPerOp = roundTo(median(perOp[b.build]), 4)
		if b.sum.Requests > 0 {
			b.sum.PooledMsPerOp = roundTo(b.sum.CPUSeconds*1000/float64(b.sum.Requests), 4)
		}
	}
	if s.Base.MedianMsPerOp > 0 {
		s.RatioOfMedians = roundTo(median(perOp["head"])/median(perOp["base"]), 3)
	}
	s.MedianRoundRatio = roundTo(median(ratios), 3)
	if s.Base.CPUSeconds > 0 && s.Head.Requests > 0 {
		s.PooledRatio = roundTo((s.Head.CPUSeconds/float64(s.Head.Requests))/(s.Base.CPUSeconds/float64(s.Base.Requests)), 3)
	}
	return s
}

// median returns the median of xs (the mean of the middle two of an even
// count), or 0 for none. It does not change xs.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// roundTo rounds x to n decimals, as load's figures are.
func roundTo(x float64, n int) float64 {
	p := math.Pow10(n)
	return math.Round(x*p) / p
}
