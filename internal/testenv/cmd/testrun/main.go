// Command testrun runs `go test -json` and reports like plain `go test`, with
// counts: it is the test step of scripts/test.sh.
//
// Usage:
//
//	testrun [-v] [-deadline D] [-summary FILE] [--] [go test arguments]
//
// It prints one line per package and the full output of every failed test,
// as go test does, then the skipped tests grouped by reason and the failed
// tests by name. With -summary it writes the counts as key=value lines
// (passed, failed, skipped, ...) for the calling script's closing line.
// With -v it prints all test output as it comes, like go test -v.
//
// go test runs in its own process group. An interrupt or termination signal
// is passed on to the whole group; a second one kills it. With -deadline,
// when the run takes longer the group gets SIGQUIT, so that every test binary
// still running prints its goroutines' stacks and exits, and SIGKILL if it is
// still there after a grace period.
//
// The exit status is go test's: 0 when everything passed.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var (
		verbose     = flag.Bool("v", false, "print all test output as it comes, like go test -v")
		deadline    = flag.Duration("deadline", 0, "stop go test after this long (0: no limit)")
		grace       = flag.Duration("grace", 30*time.Second, "after the deadline, how long test binaries get to print stacks before they are killed")
		summaryFile = flag.String("summary", "", "write the counts to this file as key=value lines")
		goCmd       = flag.String("go", "go", "the go command")
	)
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: testrun [flags] [--] [go test arguments]\n")
		flag.PrintDefaults()
	}
	flag.Parse()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)

	sum, code := runTests(options{
		goCmd:    *goCmd,
		args:     flag.Args(),
		verbose:  *verbose,
		deadline: *deadline,
		grace:    *grace,
		stdout:   os.Stdout,
		stderr:   os.Stderr,
		signals:  sigs,
	})
	if *summaryFile != "" {
		if err := writeSummary(*summaryFile, sum); err != nil {
			fmt.Fprintln(os.Stderr, "testrun:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

func writeSummary(path string, sum summary) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := sum.write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type options struct {
	goCmd    string
	args     []string // passed to go test after -json
	dir      string   // working directory; "" for the current one
	env      []string // environment; nil to inherit
	verbose  bool
	deadline time.Duration
	grace    time.Duration
	stdout   io.Writer
	stderr   io.Writer
	signals  <-chan os.Signal // signals to pass on to go test; may be nil
}

// runTests runs go test -json with o.args, reports on o.stdout, and returns
// the counts and the exit status to use.
func runTests(o options) (summary, int) {
	args := append([]string{"test", "-json"}, o.args...)
	cmd := exec.Command(o.goCmd, args...)
	cmd.Dir = o.dir
	cmd.Env = o.env
	cmd.Stdin = nil
	cmd.Stderr = o.stderr
	setProcessGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(o.stderr, "testrun:", err)
		return summary{}, 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(o.stderr, "testrun:", err)
		return summary{}, 2
	}

	// Watch for the deadline and for signals while the output is read.
	done := make(chan struct{})        // closed when go test has exited
	watcherDone := make(chan struct{}) // closed when the watcher has returned
	deadlineHit := make(chan struct{})
	var stoppedBy syscall.Signal // the first signal passed on; read after watcherDone
	go func() {
		defer close(watcherDone)
		var timeout <-chan time.Time
		if o.deadline > 0 {
			t := time.NewTimer(o.deadline)
			defer t.Stop()
			timeout = t.C
		}
		var kill <-chan time.Time
		signalled := false
		for {
			select {
			case <-done:
				return
			case <-timeout:
				timeout = nil
				close(deadlineHit)
				fmt.Fprintf(o.stderr, "\ntestrun: go test is still running after the deadline of %v: "+
					"sending SIGQUIT, so that each running test binary prints its goroutines and exits\n", o.deadline)
				signalGroup(cmd, syscall.SIGQUIT)
				kill = time.After(o.grace)
			case <-kill:
				fmt.Fprintf(o.stderr, "testrun: go test still running %v after SIGQUIT: killing it\n", o.grace)
				signalGroup(cmd, syscall.SIGKILL)
				return
			case sig := <-o.signals:
				if signalled {
					fmt.Fprintf(o.stderr, "testrun: second signal: killing go test\n")
					signalGroup(cmd, syscall.SIGKILL)
					return
				}
				signalled = true
				if s, ok := sig.(syscall.Signal); ok {
					stoppedBy = s
				}
				fmt.Fprintf(o.stderr, "\ntestrun: %v: stopping go test\n", sig)
				signalGroup(cmd, sig)
			}
		}
	}()

	rep := newReporter(o.stdout, o.verbose)
	br := bufio.NewReader(stdout)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			rep.line(line)
		}
		if err != nil {
			break
		}
	}
	waitErr := cmd.Wait()
	close(done)
	<-watcherDone
	sum := rep.finish()

	select {
	case <-deadlineHit:
		sum.DeadlineExceeded = true
	default:
	}

	code := 0
	if waitErr != nil {
		code = 1
		var exitErr *exec.ExitError
		if errors.As(waitErr, &exitErr) && exitErr.ExitCode() > 0 {
			code = exitErr.ExitCode()
		}
	}
	if code == 0 && (sum.Failed > 0 || sum.DeadlineExceeded) {
		// Never report success for a run that saw failures.
		code = 1
	}
	if code != 0 && sum.Failed == 0 {
		// go test failed before any package ran (a bad flag or pattern, a
		// broken go.mod): still one failure, so the count never says
		// "0 failed" for a failed run.
		sum.Failed = 1
		fmt.Fprintf(o.stdout, "\nfailed: go test exited with status %d\n", code)
	}
	if stoppedBy != 0 {
		// Stopped on request: exit as shells do for a command a signal
		// ended.
		code = 128 + int(stoppedBy)
	}
	return sum, code
}
