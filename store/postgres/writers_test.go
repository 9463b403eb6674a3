package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// writersPerProcess and the steps each writes size the cross-process test.
const writersPerProcess = 32

func appendsPerWriter() int {
	if testing.Short() {
		return 3
	}
	return 6
}

// TestConcurrentWritersAcrossProcesses: 2 processes x 32 goroutines append
// to one session, each append conditional on the LastSeq it read
// (ExpectedLastSeq) and retried on ErrConflict. No step may be lost or
// stored twice, and the seqs must run 1..N without a gap.
func TestConcurrentWritersAcrossProcesses(t *testing.T) {
	url := testURL(t)
	st := openTest(t, Options{})
	ctx := context.Background()
	sess, err := st.Create(ctx, store.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const procs = 2
	type child struct {
		acks []ack
		err  error
	}
	results := make([]child, procs)
	var wg sync.WaitGroup
	for p := range procs {
		cmd, out := startChild(t, "TestWritersChild",
			childEnv+"=writers", childURLEnv+"="+url, childSchemaEnv+"="+st.Schema(),
			childSessionEnv+"="+sess.ID, childTagEnv+"="+fmt.Sprint("p", p),
			fmt.Sprintf("AGENTMEM_PG_TEST_CHILD_APPENDS=%d", appendsPerWriter()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			acks, err := readAcks(out, nil)
			if werr := cmd.Wait(); werr != nil && err == nil {
				err = fmt.Errorf("child %d: %v; stderr:\n%s", p, werr, cmd.Stderr)
			}
			results[p] = child{acks, err}
		}()
	}
	wg.Wait()

	resp, err := st.Read(ctx, store.ReadRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	want := procs * writersPerProcess * appendsPerWriter()
	if len(resp.Entries) != want || resp.Session.LastSeq != int64(want) {
		t.Errorf("%d entries, LastSeq %d; want %d of each", len(resp.Entries), resp.Session.LastSeq, want)
	}
	stored := map[string]int64{}
	for i, e := range resp.Entries {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d: not contiguous", i, e.Seq)
		}
		id := e.Step.Info().ID
		if prev, dup := stored[id]; dup {
			t.Errorf("step %s stored twice, at %d and %d", id, prev, e.Seq)
		}
		stored[id] = e.Seq
	}
	for p, r := range results {
		if r.err != nil {
			t.Errorf("child %d: %v", p, r.err)
			continue
		}
		if len(r.acks) != writersPerProcess*appendsPerWriter() {
			t.Errorf("child %d acknowledged %d steps, want %d", p, len(r.acks), writersPerProcess*appendsPerWriter())
		}
		for _, a := range r.acks {
			if seq, ok := stored[a.id]; !ok {
				t.Errorf("child %d: acknowledged step %s is missing", p, a.id)
			} else if seq != a.seq {
				t.Errorf("child %d: step %s acknowledged at seq %d, stored at %d", p, a.id, a.seq, seq)
			}
		}
	}
}

// TestWritersChild is a child process of
// TestConcurrentWritersAcrossProcesses.
func TestWritersChild(t *testing.T) {
	if os.Getenv(childEnv) != "writers" {
		t.Skip("a child process of TestConcurrentWritersAcrossProcesses")
	}
	ctx := context.Background()
	st, err := Open(ctx, os.Getenv(childURLEnv), Options{Schema: os.Getenv(childSchemaEnv), MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id, tag := os.Getenv(childSessionEnv), os.Getenv(childTagEnv)
	n, _ := strconv.Atoi(os.Getenv("AGENTMEM_PG_TEST_CHILD_APPENDS"))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range writersPerProcess {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range n {
				step := crashStep(fmt.Sprintf("%s-g%d-k%d", tag, g, k))
				seq, err := appendExpecting(ctx, st, id, step)
				if err != nil {
					t.Errorf("append %s: %v", step.ID, err)
					return
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "ack %s %d\n", step.ID, seq)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// appendExpecting appends one step with ExpectedLastSeq set to the LastSeq
// it just read, reading again and retrying (after a short random pause)
// while that loses to another writer.
func appendExpecting(ctx context.Context, st store.Store, id string, step agentmem.Step) (int64, error) {
	for attempt := 0; ; attempt++ {
		sess, err := st.Get(ctx, "", id)
		if err != nil {
			return 0, err
		}
		last := sess.LastSeq
		resp, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: []agentmem.Step{step}, ExpectedLastSeq: &last})
		if err == nil {
			return resp.Seqs[0], nil
		}
		if !errors.Is(err, agentmem.ErrConflict) || attempt > 10000 {
			return 0, err
		}
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
	}
}
