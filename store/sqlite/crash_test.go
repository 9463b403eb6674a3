package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// The crash test runs the test binary again as a child process
// (TestCrashChild) that appends to one session as fast as it can and
// reports each acknowledged sequence number on stdout; the parent kills
// it with SIGKILL at a random moment, reopens the database and checks that
// every acknowledged step is there, intact, with no partial append.

const (
	crashEnvDB    = "AGENTMEM_SQLITE_CRASH_DB"
	crashSession  = "crash"
	crashStepSize = 2048
)

// crashStep is the step the child stores at seq: a function of seq alone,
// so the parent can check what it finds.
func crashStep(seq int64) agentmem.Step {
	return store.WithNumber(actionStep(fmt.Sprintf("crash-%d", seq), int(seq), crashStepSize), seq)
}

// crashBatch is the number of steps of the append that starts at seq: the
// child writes batches of 1 to 3 steps, so that a torn multi-entry append
// would show.
func crashBatch(seq int64) int64 { return 1 + seq%3 }

// TestCrashChild is the child process of TestCrashSafety; it does nothing
// in a normal run.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnvDB)
	if path == "" {
		t.Skip("the child process of TestCrashSafety")
	}
	ctx := context.Background()
	st, err := OpenDriver(ctx, path, Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: open: %v\n", err)
		os.Exit(2)
	}
	fmt.Fprintln(os.Stdout, "ready")
	next := int64(1)
	for {
		n := crashBatch(next)
		steps := make([]agentmem.Step, n)
		for i := range steps {
			steps[i] = crashStep(next + int64(i))
		}
		resp, err := st.Append(ctx, store.AppendRequest{SessionID: crashSession, Steps: steps, ExpectedLastSeq: ptr(next - 1)})
		if err != nil {
			fmt.Fprintf(os.Stderr, "child: append: %v\n", err)
			os.Exit(2)
		}
		// os.Stdout is unbuffered: the line is in the pipe when Fprintf
		// returns.
		var b strings.Builder
		for _, seq := range resp.Seqs {
			fmt.Fprintf(&b, "ack %d\n", seq)
		}
		if _, err := os.Stdout.WriteString(b.String()); err != nil {
			os.Exit(2)
		}
		next = resp.LastSeq + 1
	}
}

func TestCrashSafety(t *testing.T) {
	if os.Getenv(crashEnvDB) != "" {
		t.Skip("in the child")
	}
	runs := 20
	if testing.Short() {
		runs = 5
	}
	total := 0
	for run := range runs {
		total += crashRun(t, run)
	}
	t.Logf("%d runs, %d acknowledged appends checked", runs, total)
	if total == 0 {
		t.Fatal("no child acknowledged any append: the test tested nothing")
	}
}

// crashRun does one run of the crash test and returns the number of
// acknowledged steps.
func crashRun(t *testing.T, run int) int {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crash.db")
	st, err := OpenDriver(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: crashSession}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnvDB+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Kill at a random moment once the child appends.
	select {
	case l, ok := <-lines:
		if !ok || l != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("run %d: child did not start: %q %s", run, l, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("run %d: child did not start in time: %s", run, stderr.String())
	}
	delay := time.Duration(50+rand.IntN(351)) * time.Millisecond
	kill := time.After(delay)
	acked := int64(0)
	killed := false
	for !killed {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("run %d: child exited early: %s", run, stderr.String())
			}
			acked = parseAck(t, l, acked)
		case <-kill:
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	for l := range lines { // what the child wrote before it died
		acked = parseAck(t, l, acked)
	}
	cmd.Wait()

	st, err = OpenDriver(ctx, path, Options{})
	if err != nil {
		t.Fatalf("run %d: reopen after SIGKILL: %v", run, err)
	}
	defer st.Close()
	var integrity string
	if err := st.r.QueryRow("PRAGMA integrity_check").Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("run %d: integrity_check: %q %v", run, integrity, err)
	}
	rr, err := st.Read(ctx, store.ReadRequest{SessionID: crashSession})
	if err != nil {
		t.Fatalf("run %d: read: %v", run, err)
	}
	last := rr.Session.LastSeq
	if last < acked {
		t.Fatalf("run %d: %d steps acknowledged, only %d stored", run, acked, last)
	}
	if int64(len(rr.Entries)) != last {
		t.Fatalf("run %d: last_seq %d but %d entries", run, last, len(rr.Entries))
	}
	// Whole batches only.
	boundary := int64(0)
	for boundary < last {
		boundary += crashBatch(boundary + 1)
	}
	if boundary != last {
		t.Fatalf("run %d: last_seq %d is inside a batch (it ends at %d): a torn append", run, last, boundary)
	}
	for i, e := range rr.Entries {
		seq := int64(i + 1)
		if e.Seq != seq || e.Kind != store.StepEntry {
			t.Fatalf("run %d: entry %d has seq %d kind %s", run, i, e.Seq, e.Kind)
		}
		want, _ := store.EncodeStep(crashStep(seq))
		got, err := store.EncodeStep(e.Step)
		if err != nil || string(got) != string(want) {
			t.Fatalf("run %d: step %d differs from what the child wrote (%v)", run, seq, err)
		}
	}
	// The store is writable after the crash.
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: crashSession, Steps: []agentmem.Step{taskStep("after", "x")}}); err != nil {
		t.Fatalf("run %d: append after crash: %v", run, err)
	}
	t.Logf("run %d: killed after %v: %d acknowledged, %d stored", run, delay, acked, last)
	return int(acked)
}

// parseAck reads an "ack N" line and checks that acknowledgements come in
// order.
func parseAck(t *testing.T, line string, prev int64) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimPrefix(line, "ack "), 10, 64)
	if err != nil || !strings.HasPrefix(line, "ack ") {
		t.Fatalf("child said %q", line)
	}
	if n != prev+1 {
		t.Fatalf("ack %d after ack %d", n, prev)
	}
	return n
}
