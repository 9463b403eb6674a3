package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/sqlite"
)

// fullDisk makes the file system of a SQLite database full and empty
// again.
type fullDisk interface {
	// fill leaves no room for the database to grow.
	fill(t *testing.T)
	// empty makes room again.
	empty(t *testing.T)
}

// tmpfsDisk is a small tmpfs of the test's own (it needs root): fill
// writes a ballast file until the file system has no space left, as a
// disk filled by something else would be, and empty removes it.
type tmpfsDisk struct{ dir string }

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted
// when the test ends, or returns false when the process may not mount.
func mountTmpfs(t *testing.T, size int) (*tmpfsDisk, bool) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Logf("no tmpfs (%v): simulating a full disk with max_page_count", err)
		return nil, false
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting the test's tmpfs: %v", err)
		}
	})
	return &tmpfsDisk{dir: dir}, true
}

func (d *tmpfsDisk) ballast() string { return filepath.Join(d.dir, "ballast") }

func (d *tmpfsDisk) fill(t *testing.T) {
	f, err := os.OpenFile(d.ballast(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			break
		}
	}
	// The last bytes a smaller write still finds.
	for _, n := range []int{4096, 512, 1} {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				break
			}
		}
	}
}

func (d *tmpfsDisk) empty(t *testing.T) {
	if err := os.Remove(d.ballast()); err != nil {
		t.Fatal(err)
	}
}

// pageLimit simulates a full disk where the test may not mount one: the
// database may not grow past the pages it has (max_page_count, set on the
// process's one write connection to the file, which SQLite refuses a new
// page with SQLITE_FULL, as it does a write into a full file system).
type pageLimit struct{ db *sqlitedb.DB }

func (p *pageLimit) fill(t *testing.T) {
	var pages int64
	if err := p.db.W.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := p.db.W.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
}

func (p *pageLimit) empty(t *testing.T) {
	if _, err := p.db.W.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
}

// TestSQLiteDiskFull fills the file system of a SQLite store under
// concurrent appends (a small tmpfs, or max_page_count where the test may
// not mount one) and empties it again: while it is full, appends are 503
// with Retry-After, never 500, and /readyz is 503 saying that the store
// is out of space; once there is room, the same server's retries succeed
// and it is ready again; and every acknowledged append is in the log, once
// and in order, also after the store is reopened.
func TestSQLiteDiskFull(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tmpfs, mounted := mountTmpfs(t, 8<<20)
	if mounted {
		dir = tmpfs.dir
	}
	path := filepath.Join(dir, "agentmem.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // before the tmpfs is unmounted
	var disk fullDisk = tmpfs
	if !mounted {
		shared, err := sqlitedb.Open(path, sqlitedb.Options{}) // the store's connections
		if err != nil {
			t.Fatal(err)
		}
		defer shared.Close()
		disk = &pageLimit{db: shared}
	}
	e := onStore(t, st)

	const writers, before, after = 6, 5, 5
	var (
		warm, sawFull, done sync.WaitGroup
		freed               = make(chan struct{})
		mu                  sync.Mutex
		acked               = make([][]string, writers)
		failures            []string
		failed              = make(chan struct{}) // closed by the first failure
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if failures = append(failures, fmt.Sprintf(format, args...)); len(failures) == 1 {
			close(failed)
		}
	}
	warm.Add(writers)
	sawFull.Add(writers)
	done.Add(writers)
	for w := range writers {
		id := fmt.Sprintf("w%d", w)
		e.create(id)
		go func() {
			defer done.Done()
			full, ok := false, 0
			for n := 0; ; n++ {
				key := fmt.Sprintf("%s-%d", id, n)
				body := fmt.Sprintf(`{"type":"message","message":{"role":"user","content":"%s %s"}}`, key, strings.Repeat("x", 2000))
				for {
					r := e.do("POST", "/v1/sessions/"+id+"/steps", body, "Idempotency-Key", key)
					if r.code == http.StatusCreated {
						break
					}
					if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
						fail("%s: status %d, Retry-After %q: %s", key, r.code, r.header.Get("Retry-After"), r.body)
						return
					}
					if !full {
						// Tell the test, and retry once there is room.
						full = true
						sawFull.Done()
						<-freed
					}
				}
				mu.Lock()
				acked[w] = append(acked[w], key+"/0") // the step's ID, from the key
				mu.Unlock()
				if ok++; !full && ok == before {
					warm.Done()
				}
				if full && ok >= before+after {
					return
				}
			}
		}()
	}
	wait := func(wg *sync.WaitGroup, what string) {
		t.Helper()
		ch := make(chan struct{})
		go func() { wg.Wait(); close(ch) }()
		select {
		case <-ch:
		case <-failed:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("waiting for the writers to %s: %s", what, strings.Join(failures, "\n"))
		case <-time.After(2 * time.Minute):
			t.Fatalf("the writers did not %s", what)
		}
	}
	wait(&warm, "append before the disk filled")
	disk.fill(t)
	wait(&sawFull, "all get 503 once the disk was full")

	r := e.do("GET", "/readyz", nil)
	var ready api.ReadyResponse
	r.json(t, &ready)
	if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(ready.Reason, "out of disk space") {
		t.Errorf("/readyz while the disk is full: %d %+v", r.code, ready)
	}
	// A step larger than the room a failed write may have left.
	big := `{"type":"message","message":{"role":"user","content":"` + strings.Repeat("y", 64<<10) + `"}}`
	if r := e.do("POST", "/v1/sessions/w0/steps", big, "Idempotency-Key", "probe"); r.code != http.StatusServiceUnavailable {
		t.Errorf("an append while the disk is full: %d %s", r.code, r.body)
	} else if e := r.apiErr(t); e.Code != api.CodeUnavailable || !strings.Contains(e.Message, "out of disk space") {
		t.Errorf("an append while the disk is full: %+v", e)
	}

	disk.empty(t)
	close(freed)
	e.must(200, "GET", "/readyz", nil)
	wait(&done, "resume once there was room")
	if len(failures) > 0 {
		t.Fatalf("%d requests failed otherwise than with 503:\n%s", len(failures), strings.Join(failures, "\n"))
	}

	// Every acknowledged append is there, once, in order (a 503 append
	// retried with its key is stored once), and stays after a reopen.
	check := func(st *store.Store, when string) {
		t.Helper()
		for w := range writers {
			resp, err := st.Read(ctx, store.ReadRequest{SessionID: fmt.Sprintf("w%d", w)})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, en := range resp.Entries {
				if en.Step != nil && en.Step.Info().ID != "probe/0" {
					ids = append(ids, en.Step.Info().ID)
				}
			}
			if !slices.Equal(ids, acked[w]) {
				t.Errorf("%s: session w%d holds %v, acknowledged %v", when, w, ids, acked[w])
			}
		}
	}
	check(st, "after the disk emptied")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	check(reopened, "after a reopen")
}
