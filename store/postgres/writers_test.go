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
	"github.com/agentmem/agentmem/internal/pgdb"
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
	st, err := OpenDriver(ctx, os.Getenv(childURLEnv), Options{Schema: os.Getenv(childSchemaEnv), MaxConns: 8})
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
				seq, err := appendExpecting(ctx, store.New(st), id, step)
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
func appendExpecting(ctx context.Context, st *store.Store, id string, step agentmem.Step) (int64, error) {
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

// TestAppendRetriesUniqueViolation: an append whose insert meets an entry
// the session's row lock did not keep out (on Citus, one inserted on a
// shard's new placement while the append locked the old; played here by
// a trigger that fails the first insert with a unique violation) runs
// its transaction again, and the step is stored once, instead of the
// append failing with ErrConflict. A violation that lasts still fails,
// with ErrConflict, after pgdb.MaxAttempts tries, and stores nothing.
func TestAppendRetriesUniqueViolation(t *testing.T) {
	st := openTest(t, Options{})
	ctx := context.Background()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	// The calls are counted by a sequence: a failing transaction rolls
	// back whatever else the trigger writes.
	execSQL(t, st, `CREATE SEQUENCE inject_calls`)
	execSQL(t, st, `CREATE TABLE inject (fail_through bigint NOT NULL)`)
	execSQL(t, st, `CREATE FUNCTION inject_unique() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('inject_calls') <= (SELECT fail_through FROM inject) THEN
				RAISE EXCEPTION 'duplicate key value violates unique constraint "entries_pkey"' USING ERRCODE = 'unique_violation';
			END IF;
			RETURN NEW;
		END $$`)
	execSQL(t, st, `CREATE TRIGGER inject_unique BEFORE INSERT ON entries FOR EACH ROW EXECUTE FUNCTION inject_unique()`)

	// Two failures, then the insert goes through (pgdb.MaxAttempts is 3).
	execSQL(t, st, `INSERT INTO inject VALUES (2)`)
	resp, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{action("a1", "s")}})
	if err != nil {
		t.Fatalf("append after two unique violations: %v", err)
	}
	if resp.LastSeq != 1 {
		t.Errorf("LastSeq %d, want 1", resp.LastSeq)
	}
	if n := queryInt(t, st, `SELECT last_value FROM inject_calls`); n != 3 {
		t.Errorf("the insert ran %d times, want 3", n)
	}

	// Failures that outlast the tries: ErrConflict, nothing stored.
	execSQL(t, st, `UPDATE inject SET fail_through = 1000`)
	_, err = st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{action("a2", "s")}})
	if !errors.Is(err, agentmem.ErrConflict) {
		t.Errorf("append against a lasting unique violation: %v, want ErrConflict", err)
	}
	if n := queryInt(t, st, `SELECT last_value FROM inject_calls`); n != 3+pgdb.MaxAttempts {
		t.Errorf("the insert ran %d times in all, want %d", n, 3+pgdb.MaxAttempts)
	}
	r, err := st.Read(ctx, store.ReadRequest{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) != 1 || r.Session.LastSeq != 1 {
		t.Errorf("the log holds %d entries, last_seq %d; want a1 alone", len(r.Entries), r.Session.LastSeq)
	}
}
