package postgres

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// The crash test runs a child process (this test binary again, running
// only TestCrashChild) that appends to a session as fast as it can and
// prints a line for every append the store acknowledged. The parent kills
// it with SIGKILL at a random moment, mid-transaction as likely as not,
// then reads the session through a new connection pool.
const (
	childEnv        = "AGENTMEM_PG_TEST_CHILD" // "crash" or "writers"
	childURLEnv     = "AGENTMEM_PG_TEST_CHILD_URL"
	childSchemaEnv  = "AGENTMEM_PG_TEST_CHILD_SCHEMA"
	childSessionEnv = "AGENTMEM_PG_TEST_CHILD_SESSION"
	childTagEnv     = "AGENTMEM_PG_TEST_CHILD_TAG"
)

// crashStep is the step the crash child appends as step k of batch b: its
// content follows from its ID, so the parent can check it is intact.
func crashStep(id string) *agentmem.ActionStep {
	body := strings.Repeat(id+" ", 40)
	return &agentmem.ActionStep{
		StepInfo:    agentmem.StepInfo{ID: id, Metadata: map[string]string{"id": id}},
		Thought:     "thinking about " + id,
		ModelOutput: body,
		ToolCalls:   []agentmem.ToolCall{{ID: "call-" + id, Name: "tool", Arguments: `{"id":"` + id + `"}`}},
		Results:     []agentmem.ToolResult{{CallID: "call-" + id, Content: body}},
	}
}

// startChild runs this test binary as a child running test name, with env
// added. It returns the command and its stdout.
func startChild(t *testing.T, name string, env ...string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = &lockedWriter{w: &strings.Builder{}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// lockedWriter collects a child's stderr for the failure message.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// killed reports whether cmd.Wait's error says the process died of SIGKILL.
func killed(err error) bool {
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// ack is an append the child reported as acknowledged.
type ack struct {
	id  string
	seq int64
}

// readAcks parses "ack ID SEQ" lines until out ends, and closes first
// (if not nil) at the first one. A last line without its newline, cut
// short by the kill, is not an ack.
func readAcks(out io.Reader, first chan<- struct{}) ([]ack, error) {
	var acks []ack
	br := bufio.NewReader(out)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return acks, err
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "ack" {
			continue // go test's own output
		}
		seq, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad ack line %q", line)
		}
		acks = append(acks, ack{id: f[1], seq: seq})
		if len(acks) == 1 && first != nil {
			close(first)
		}
	}
}

func TestCrashSafety(t *testing.T) {
	url := testURL(t)
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	st := openTest(t, Options{})
	ctx := context.Background()
	for round := range rounds {
		sess, err := st.Create(ctx, store.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		cmd, out := startChild(t, "TestCrashChild",
			childEnv+"=crash", childURLEnv+"="+url, childSchemaEnv+"="+st.Schema(), childSessionEnv+"="+sess.ID)
		// Read acks as they come; kill once the child is writing, at a
		// random moment.
		first := make(chan struct{})
		type result struct {
			acks []ack
			err  error
		}
		done := make(chan result, 1)
		go func() {
			acks, err := readAcks(out, first)
			done <- result{acks, err}
		}()
		select {
		case <-first:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Fatalf("round %d: the child acknowledged nothing in a minute; stderr:\n%s", round, cmd.Stderr)
		}
		time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if err := cmd.Wait(); !killed(err) {
			t.Fatalf("round %d: the child ended before the kill (%v); stderr:\n%s", round, err, cmd.Stderr)
		}
		if res.err != nil {
			t.Fatal(res.err)
		}
		acks := res.acks
		if len(acks) == 0 {
			t.Fatalf("round %d: no acks; stderr:\n%s", round, cmd.Stderr)
		}
		checkAfterCrash(t, url, st.Schema(), sess.ID, acks)
		t.Logf("round %d: %d acknowledged steps survived the kill", round, len(acks))
	}
}

// checkAfterCrash reads the session through a new store and checks that
// every acknowledged step is there, intact, at its acknowledged seq; that
// seqs are contiguous; and that batches are whole.
func checkAfterCrash(t *testing.T, url, schema, id string, acks []ack) {
	t.Helper()
	ctx := context.Background()
	st, err := OpenDriver(ctx, url, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	resp, err := st.Read(ctx, store.ReadRequest{SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Session.LastSeq != int64(len(resp.Entries)) {
		t.Errorf("LastSeq %d with %d entries", resp.Session.LastSeq, len(resp.Entries))
	}
	byID := map[string]store.Entry{}
	batches := map[string][2]int{} // batch -> (steps seen, size)
	for i, e := range resp.Entries {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d: not contiguous", i, e.Seq)
		}
		sid := e.Step.Info().ID
		want, _ := store.EncodeStep(store.WithNumber(crashStep(sid), e.Seq))
		got, _ := store.EncodeStep(e.Step)
		if string(got) != string(want) {
			t.Errorf("step %s at seq %d is not intact:\n%s\nwant\n%s", sid, e.Seq, got, want)
		}
		byID[sid] = e
		// IDs are "gG-bB-kK-of-N".
		parts := strings.Split(sid, "-")
		n, _ := strconv.Atoi(parts[len(parts)-1])
		key := strings.Join(parts[:2], "-")
		c := batches[key]
		batches[key] = [2]int{c[0] + 1, n}
	}
	for key, c := range batches {
		if c[0] != c[1] {
			t.Errorf("batch %s: %d of its %d steps stored: not atomic", key, c[0], c[1])
		}
	}
	for _, a := range acks {
		e, ok := byID[a.id]
		if !ok {
			t.Errorf("acknowledged step %s (seq %d) is missing", a.id, a.seq)
			continue
		}
		if e.Seq != a.seq {
			t.Errorf("acknowledged step %s at seq %d, stored at %d", a.id, a.seq, e.Seq)
		}
	}
}

// TestCrashChild is the child of TestCrashSafety: 4 goroutines append
// batches of 1 to 3 steps to one session until the process is killed.
func TestCrashChild(t *testing.T) {
	if os.Getenv(childEnv) != "crash" {
		t.Skip("the child process of TestCrashSafety")
	}
	ctx := context.Background()
	st, err := OpenDriver(ctx, os.Getenv(childURLEnv), Options{Schema: os.Getenv(childSchemaEnv)})
	if err != nil {
		t.Fatal(err)
	}
	id := os.Getenv(childSessionEnv)
	var mu sync.Mutex // one line at a time on stdout
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; ; b++ {
				n := 1 + b%3
				steps := make([]agentmem.Step, n)
				for k := range n {
					steps[k] = crashStep(fmt.Sprintf("g%d-b%d-k%d-of-%d", g, b, k, n))
				}
				resp, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: steps})
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				mu.Lock()
				for k, s := range steps {
					fmt.Fprintf(os.Stdout, "ack %s %d\n", s.Info().ID, resp.Seqs[k])
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}
