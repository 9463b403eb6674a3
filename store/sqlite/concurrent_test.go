package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// appendWithRetry appends one step with ExpectedLastSeq set to what it
// last read, reading again and retrying on ErrConflict, as a writer that
// shares a session does. It returns the number of conflicts.
func appendWithRetry(ctx context.Context, st *store.Store, session string, step agentmem.Step) (int, error) {
	conflicts := 0
	for {
		s, err := st.Get(ctx, "", session)
		if err != nil {
			return conflicts, err
		}
		_, err = st.Append(ctx, store.AppendRequest{SessionID: session, Steps: []agentmem.Step{step}, ExpectedLastSeq: ptr(s.LastSeq)})
		if errors.Is(err, agentmem.ErrConflict) {
			conflicts++
			continue
		}
		return conflicts, err
	}
}

// checkLog checks that a session's log holds exactly the step IDs want,
// once each, with contiguous seqs from 1.
func checkLog(t *testing.T, st *store.Store, session string, want map[string]bool) {
	t.Helper()
	rr, err := st.Read(context.Background(), store.ReadRequest{SessionID: session})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(rr.Entries)) != rr.Session.LastSeq || len(rr.Entries) != len(want) {
		t.Fatalf("%s: %d entries, last seq %d, want %d steps", session, len(rr.Entries), rr.Session.LastSeq, len(want))
	}
	seen := map[string]bool{}
	for i, e := range rr.Entries {
		if e.Seq != int64(i+1) || e.Step.Info().Number != i+1 {
			t.Fatalf("%s: entry %d has seq %d", session, i, e.Seq)
		}
		id := e.Step.Info().ID
		if !want[id] || seen[id] {
			t.Fatalf("%s: step %q unexpected or duplicated", session, id)
		}
		seen[id] = true
	}
}

func TestConcurrentWritersOneSession(t *testing.T) {
	ctx := context.Background()
	st, _ := openTemp(t, nil)
	if _, err := st.Create(ctx, store.CreateRequest{ID: "shared"}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 32, 5
	want := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	var mu sync.Mutex
	conflicts := 0
	for g := range writers {
		for k := range each {
			want[fmt.Sprintf("w%d-%d", g, k)] = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				c, err := appendWithRetry(ctx, store.New(st), "shared", actionStep(fmt.Sprintf("w%d-%d", g, k), g*1000+k, 600))
				mu.Lock()
				conflicts += c
				mu.Unlock()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkLog(t, store.New(st), "shared", want)
	t.Logf("%d appends, %d conflicts retried", writers*each, conflicts)
}

func TestConcurrentWritersManySessions(t *testing.T) {
	ctx := context.Background()
	st, _ := openTemp(t, nil)
	const sessions, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for g := range sessions {
		id := fmt.Sprintf("s%d", g)
		if _, err := st.Create(ctx, store.CreateRequest{ID: id}); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				_, err := st.Append(ctx, store.AppendRequest{SessionID: id,
					Steps: []agentmem.Step{actionStep(fmt.Sprintf("%s-%d", id, k), k, 600)}, ExpectedLastSeq: ptr(int64(k))})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for g := range sessions {
		id := fmt.Sprintf("s%d", g)
		want := map[string]bool{}
		for k := range each {
			want[fmt.Sprintf("%s-%d", id, k)] = true
		}
		checkLog(t, store.New(st), id, want)
	}
}

// The multi-process test runs the test binary twice more as writers
// (TestWriterChild) of one session of one database file: SQLite's locks
// (BEGIN IMMEDIATE and busy_timeout) must serialize them.

const (
	writerEnvDB   = "AGENTMEM_SQLITE_WRITER_DB"
	writerEnvName = "AGENTMEM_SQLITE_WRITER_NAME"
	procWriters   = 8
	procAppends   = 10
)

func TestWriterChild(t *testing.T) {
	path, name := os.Getenv(writerEnvDB), os.Getenv(writerEnvName)
	if path == "" {
		t.Skip("a child process of TestConcurrentWritersTwoProcesses")
	}
	ctx := context.Background()
	st, err := OpenDriver(ctx, path, Options{BusyTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var wg sync.WaitGroup
	for g := range procWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range procAppends {
				if _, err := appendWithRetry(ctx, store.New(st), "shared", taskStep(fmt.Sprintf("%s-%d-%d", name, g, k), "x")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestConcurrentWritersTwoProcesses(t *testing.T) {
	if os.Getenv(writerEnvDB) != "" {
		t.Skip("in a child")
	}
	ctx := context.Background()
	st, path := openTemp(t, nil)
	if _, err := st.Create(ctx, store.CreateRequest{ID: "shared"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	var cmds []*exec.Cmd
	for _, name := range []string{"p1", "p2"} {
		for g := range procWriters {
			for k := range procAppends {
				want[fmt.Sprintf("%s-%d-%d", name, g, k)] = true
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriterChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), writerEnvDB+"="+path, writerEnvName+"="+name)
		cmd.Stdout, cmd.Stderr = new(strings.Builder), new(strings.Builder)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer process: %v\n%s%s", err, cmd.Stdout, cmd.Stderr)
		}
	}
	checkLog(t, store.New(st), "shared", want)
}
