package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/bench/load"
	"github.com/agentmem/agentmem/internal/cli/clitest"
)

// measuredRun is a measured run of build in round: cpu seconds over requests.
func measuredRun(round int, build string, seconds float64, requests int64) compareRun {
	return compareRun{Round: round, Build: build, Requests: requests,
		ServerCPU: &load.ServerCPU{Seconds: seconds, MsPerOp: seconds * 1000 / float64(requests)}}
}

func TestSummarizeCompare(t *testing.T) {
	t.Run("odd", func(t *testing.T) {
		// base 2, 1, 4 ms a request; head 1, 1, 2.
		got := summarizeCompare([]compareRun{
			measuredRun(1, "base", 2, 1000), measuredRun(1, "head", 1, 1000),
			measuredRun(2, "base", 1, 1000), measuredRun(2, "head", 2, 2000),
			measuredRun(3, "base", 4, 1000), measuredRun(3, "head", 2, 1000),
		})
		want := compareSummary{
			RoundRatios: []roundRatio{{1, 0.5}, {2, 1}, {3, 0.5}},
			Base:        buildSummary{Runs: 3, MedianMsPerOp: 2, CPUSeconds: 7, Requests: 3000, PooledMsPerOp: 2.3333},
			Head:        buildSummary{Runs: 3, MedianMsPerOp: 1, CPUSeconds: 5, Requests: 4000, PooledMsPerOp: 1.25},
			// Pooled: (5/4000) / (7/3000).
			RatioOfMedians: 0.5, MedianRoundRatio: 0.5, PooledRatio: 0.536,
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got  %+v\nwant %+v", got, want)
		}
	})
	t.Run("even, a failed run", func(t *testing.T) {
		// base 1, 2, 3, 4 ms a request: median 2.5. The head's run of
		// round 3 failed: round 3 has no ratio, and its figures are in
		// no sum or median.
		failed := measuredRun(3, "head", 9, 1000)
		failed.Failed, failed.Error = 1, "1 of 1000 requests failed"
		got := summarizeCompare([]compareRun{
			measuredRun(1, "base", 1, 1000), measuredRun(1, "head", 1, 1000),
			measuredRun(2, "base", 2, 1000), measuredRun(2, "head", 1, 1000),
			measuredRun(3, "base", 3, 1000), failed,
			measuredRun(4, "base", 4, 1000), measuredRun(4, "head", 2, 1000),
		})
		want := compareSummary{
			RoundRatios: []roundRatio{{1, 1}, {2, 0.5}, {4, 0.5}},
			Base:        buildSummary{Runs: 4, MedianMsPerOp: 2.5, CPUSeconds: 10, Requests: 4000, PooledMsPerOp: 2.5},
			Head:        buildSummary{Runs: 3, MedianMsPerOp: 1, CPUSeconds: 4, Requests: 3000, PooledMsPerOp: 1.3333},
			// Pooled: (4/3000) / (10/4000).
			RatioOfMedians: 0.4, MedianRoundRatio: 0.5, PooledRatio: 0.533,
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got  %+v\nwant %+v", got, want)
		}
	})
	t.Run("no head measured", func(t *testing.T) {
		failed := compareRun{Round: 1, Build: "head", Error: "no request in the measured period"}
		got := summarizeCompare([]compareRun{measuredRun(1, "base", 1, 1000), failed})
		want := compareSummary{Base: buildSummary{Runs: 1, MedianMsPerOp: 1, CPUSeconds: 1, Requests: 1000, PooledMsPerOp: 1}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got  %+v\nwant %+v", got, want)
		}
	})
}

func TestMedian(t *testing.T) {
	xs := []float64{4, 1, 3, 2}
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{7}, 7}, {[]float64{3, 1, 2}, 2}, {xs, 2.5}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
	if !reflect.DeepEqual(xs, []float64{4, 1, 3, 2}) {
		t.Errorf("median reordered its input: %v", xs)
	}
}

func TestCompareBadFlags(t *testing.T) {
	bin, err := os.Executable() // any executable file
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--base is required"},
		{[]string{"--base", bin}, "--head is required"},
		{[]string{"--head", bin}, "--base is required"},
		{[]string{"--base", filepath.Join(t.TempDir(), "none"), "--head", bin}, "--base"},
		{[]string{"--base", bin, "--head", bin, "--rounds", "0"}, "--rounds"},
		{[]string{"--base", bin, "--head", bin, "--op", "delete"}, "--op"},
		{[]string{"--base", bin, "--head", bin, "--clients", "0"}, "--clients"},
		{[]string{"--base", bin, "--head", bin, "--nice", "20"}, "--nice"},
		{[]string{"--base", bin, "--head", bin, "--serve-arg", "--addr=127.0.0.1:1"}, "--serve-arg"},
		{[]string{"--base", bin, "--head", bin, "--serve-arg=--store", "--serve-arg=mem://"}, "--serve-arg"},
		{[]string{"--base", bin, "--head", bin, "--server", "http://127.0.0.1:1"}, "unknown flag: --server"},
	} {
		code, stdout, stderr := runCLI(t, nil, "", append([]string{"compare"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

// writeScript writes an executable shell script standing in for agentmem.
func writeScript(t *testing.T, body string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in server is a shell script")
	}
	path := filepath.Join(t.TempDir(), "agentmem")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// A server that exits or never answers /healthz fails the command, which
// names the build and shows the server's output.
func TestCompareServerFails(t *testing.T) {
	exits := writeScript(t, `echo "unknown flag: $4" >&2; exit 2`)
	hangs := writeScript(t, `echo "starting on $4" >&2; exec sleep 60`)
	ok, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, c := range []struct {
		name       string
		base, head string
		want       []string
	}{
		{"exits", exits, ok, []string{"round 1, the base build", "exited before answering GET /healthz", "unknown flag: --addr"}},
		{"hangs", hangs, ok, []string{"round 1, the base build", "within 300ms", "starting on --addr"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, "", "compare", "--base", c.base, "--head", c.head, "--start-timeout", "300ms", "--rounds", "1")
			if code != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q; want 1 and nothing", code, stdout)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q: %s", w, stderr)
				}
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("left in the temporary directory: %v", left)
			}
		})
	}
}

// compare runs two real servers, built from this tree, one after the
// other, and removes their files.
func TestCompareEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds agentmem and runs two servers for a second each")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build agentmem with")
	}
	bin := filepath.Join(t.TempDir(), "agentmem")
	if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/agentmem/agentmem/cmd/agentmem").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	args := []string{"compare", "--base", bin, "--head", bin, "--rounds", "1",
		"--op", "loop", "--duration", "1s", "--warmup", "0s", "--clients", "2", "--sessions", "2", "--steps", "5"}
	if _, err := exec.LookPath("nice"); err == nil {
		args = append(args, "--nice", "5") // the servers run through nice(1), which execs them
	}
	code, stdout, stderr := runCLI(t, nil, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	res := clitest.DecodeLine[compareResult](t, stdout)
	if len(res.Runs) != 2 || res.Runs[0].Build != "base" || res.Runs[1].Build != "head" {
		t.Fatalf("runs: %+v", res.Runs)
	}
	for _, r := range res.Runs {
		if r.Round != 1 || r.Requests <= 0 || r.ServerCPU == nil || r.ServerCPU.Seconds <= 0 || r.Error != "" {
			t.Errorf("run: %+v (server_cpu %+v)", r, r.ServerCPU)
		}
	}
	if len(res.RoundRatios) != 1 || res.RoundRatios[0].Ratio <= 0 || res.PooledRatio <= 0 || res.RatioOfMedians <= 0 {
		t.Errorf("figures: %+v", res.compareSummary)
	}
	if res.Config.Op != "loop" || res.Config.Rounds != 1 || res.Config.Clients != 2 || res.Config.Base != bin {
		t.Errorf("config: %+v", res.Config)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in the temporary directory: %v", left)
	}
}
