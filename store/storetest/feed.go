package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// feedTests check store.Feed: every committed change in commit order,
// nothing for a refused write, cursors that survive, and no change lost
// to a reader that follows the feed while writers commit.
func (s *suite) feedTests() []namedTest {
	return []namedTest{
		{"ChangesInOrder", func(t *testing.T) {
			e := s.open(t)
			f := e.feed()
			e.create(store.CreateRequest{ID: "a", Tenant: "t1", UserID: "u"})
			e.appendSteps("t1/a", taskStep("a1", "first"), actionStep("a2"))
			e.append(store.AppendRequest{Tenant: "t1", SessionID: "a", Steps: []agentmem.Step{actionStep("a3")},
				Compaction: &store.CompactionRecord{Working: []int64{1, store.NewStepRef(0)}, Removed: []int64{2}}})
			e.create(store.CreateRequest{ID: "b", Tenant: "t1", ParentID: "a", ForkSeq: 2})
			e.appendSteps("t1/b", actionStep("b3"))
			e.create(store.CreateRequest{ID: "plain", Tenant: "t2"}) // not a branch: no change
			e.create(store.CreateRequest{ID: "a", Tenant: "t2"})     // a namesake in another tenant
			if err := e.st.Delete(e.ctx, "t1", "a"); err != nil {
				t.Fatal(err)
			}
			changes := e.drain(f, store.FeedCursor{}, 0)
			var got []string
			for _, c := range changes {
				got = append(got, fmt.Sprintf("%s %s/%s %d", c.Kind, c.Tenant, c.SessionID, c.Seq))
			}
			// Deleting a hands its history to b, as b's own entries: what
			// derives from the logs learns it from these appends.
			want := []string{
				"append t1/a 1", "append t1/a 2", "append t1/a 3", "append t1/a 4",
				"fork t1/b 2", "append t1/b 3", "append t1/b 1", "append t1/b 2", "delete t1/a 0",
			}
			if !slices.Equal(got, want) {
				t.Fatalf("feed:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, c := range changes {
				if c.Time.IsZero() {
					t.Errorf("change %s %s %d has no time", c.Kind, c.SessionID, c.Seq)
				}
			}
		}},
		{"EntriesAndSessionsAsTheyAreNow", func(t *testing.T) {
			e := s.open(t)
			f := e.feed()
			e.create(store.CreateRequest{ID: "a", Tenant: "t1", UserID: "u", Agent: "ag"})
			task := taskStep("a1", "find the bug")
			e.appendSteps("t1/a", task)
			e.append(store.AppendRequest{Tenant: "t1", SessionID: "a", Compaction: &store.CompactionRecord{Working: []int64{1}}})
			e.create(store.CreateRequest{ID: "gone", Tenant: "t1"})
			e.appendSteps("t1/gone", actionStep("g1"))
			e.create(store.CreateRequest{ID: "ttl", TTL: time.Minute})
			e.appendSteps("ttl", actionStep("x1"))
			if err := e.st.Delete(e.ctx, "t1", "gone"); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Hour) // "ttl" expires
			changes := e.drain(f, store.FeedCursor{}, 0)
			byKey := map[string]store.Change{}
			for _, c := range changes {
				byKey[fmt.Sprintf("%s %s %d", c.Kind, c.SessionID, c.Seq)] = c
			}
			c := byKey["append a 1"]
			if c.Session == nil || c.Session.ID != "a" || c.Session.Tenant != "t1" || c.Session.UserID != "u" || c.Session.Agent != "ag" {
				t.Fatalf("append a 1: session %+v", c.Session)
			}
			if c.Entry == nil || c.Entry.Kind != store.StepEntry || c.Entry.Seq != 1 || e.encode(c.Entry.Step) != e.numbered(task, 1) || c.Err != nil {
				t.Fatalf("append a 1: entry %+v, err %v", c.Entry, c.Err)
			}
			c = byKey["append a 2"]
			if c.Entry == nil || c.Entry.Kind != store.CompactionEntry || c.Entry.Compaction == nil || !slices.Equal(c.Entry.Compaction.Working, []int64{1}) {
				t.Fatalf("append a 2: want the compaction entry, got %+v", c.Entry)
			}
			for _, k := range []string{"append gone 1", "append ttl 1"} {
				if c := byKey[k]; c.Kind == "" || c.Session != nil || c.Entry != nil {
					t.Fatalf("%s: the session is gone, want the change without session or entry, got %+v", k, c)
				}
			}
			if c := byKey["delete gone 0"]; c.Tenant != "t1" || c.Session != nil {
				t.Fatalf("delete gone: %+v", c)
			}
		}},
		{"EntriesOfOneBatchAreTheirOwn", func(t *testing.T) {
			// A backend may decode each entry from the driver's buffer,
			// which the next row reuses: every entry of a batch must
			// still be the one appended once the batch is read.
			e := s.open(t)
			f := e.feed()
			e.create(store.CreateRequest{ID: "a"})
			var want []string
			for i := range 40 {
				id := fmt.Sprintf("s%d", i)
				var st agentmem.Step = actionStep(id)
				switch i % 4 {
				case 1:
					st = taskStep(id, strings.Repeat(fmt.Sprintf("task %d ", i), i+1))
				case 2:
					st = &agentmem.MessageStep{StepInfo: info(id), Message: agentmem.Message{Role: agentmem.RoleUser,
						Content: agentmem.Content{agentmem.TextPart("see " + id), agentmem.ImagePart(agentmem.Image{Data: []byte{byte(i), 1, 2}})},
						Data:    []byte(fmt.Sprintf(`{"n":%d}`, i)), Metadata: map[string]string{"k": id}}}
				}
				e.appendSteps("a", st)
				want = append(want, e.numbered(st, int64(i+1)))
			}
			changes := e.readAtLeast(f, store.FeedRequest{}, len(want)).Changes
			for i, c := range changes[:len(want)] {
				if c.Entry == nil || c.Entry.Step == nil {
					t.Fatalf("change %d: no step (err %v)", i, c.Err)
				}
				if got := e.encode(c.Entry.Step); got != want[i] {
					t.Fatalf("entry %d:\n%s\nwant\n%s", i+1, got, want[i])
				}
			}
		}},
		{"WithoutEntries", func(t *testing.T) {
			e := s.open(t)
			f := e.feed()
			e.create(store.CreateRequest{ID: "a", Tenant: "t1", UserID: "u"})
			e.appendSteps("t1/a", taskStep("a1", "find the bug"), actionStep("a2"))
			e.create(store.CreateRequest{ID: "b", Tenant: "t1", ParentID: "a", ForkSeq: 1})
			if err := e.st.Delete(e.ctx, "t1", "a"); err != nil {
				t.Fatal(err)
			}
			all := e.drain(f, store.FeedCursor{}, 0)
			// The same changes, each with its session as it is now and no
			// entry, read through a cursor limit at a time.
			var got []store.Change
			for cur := (store.FeedCursor{}); len(got) < len(all); {
				resp := e.readAtLeast(f, store.FeedRequest{After: cur, Limit: 2, WithoutEntries: true}, 1)
				got = append(got, resp.Changes...)
				cur = resp.Next
			}
			if len(got) != len(all) {
				t.Fatalf("%d changes without entries, %d with", len(got), len(all))
			}
			entries := 0
			for i, c := range got {
				w := all[i]
				if c.Kind != w.Kind || c.Tenant != w.Tenant || c.SessionID != w.SessionID || c.Seq != w.Seq || !c.Time.Equal(w.Time) {
					t.Fatalf("change %d: %+v, want %+v", i, c, w)
				}
				if (c.Session == nil) != (w.Session == nil) || c.Session != nil && (c.Session.ID != w.Session.ID || c.Session.LastSeq != w.Session.LastSeq) {
					t.Fatalf("change %d: session %+v, want %+v", i, c.Session, w.Session)
				}
				if c.Entry != nil || c.Err != nil {
					t.Fatalf("change %d: entry %+v, err %v; want neither", i, c.Entry, c.Err)
				}
				if w.Entry != nil {
					entries++
				}
			}
			if entries == 0 {
				t.Fatalf("no change read with entries has one: %+v", all)
			}
		}},
		{"Paging", func(t *testing.T) {
			e := s.open(t)
			f := e.feed()
			e.create(store.CreateRequest{ID: "a"})
			e.appendSteps("a", steps("a", 7)...)
			reads := 0
			changes, cur := e.follow(f, store.FeedCursor{}, 3, func(resp *store.FeedResponse) {
				reads++
				if len(resp.Changes) > 3 || (resp.More && len(resp.Changes) != 3) {
					t.Fatalf("read %d: %d changes, More %v, limit 3", reads, len(resp.Changes), resp.More)
				}
			})
			var seqs []int64
			for _, c := range changes {
				seqs = append(seqs, c.Seq)
			}
			e.wantSeqs(seqs, seqRange(1, 7), "seqs read 3 at a time")
			if reads < 3 {
				t.Fatalf("7 changes read 3 at a time in %d reads", reads)
			}
			resp, err := f.ReadFeed(e.ctx, store.FeedRequest{After: cur})
			if err != nil || len(resp.Changes) != 0 || resp.More || resp.Next != cur {
				t.Fatalf("read at the end: %+v, %v", resp, err)
			}
		}},
		{"ThroughReachesHead", func(t *testing.T) {
			e := s.open(t)
			f := e.feed()
			head0, err := f.FeedHead(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			e.create(store.CreateRequest{ID: "a"})
			e.appendSteps("a", steps("a", 5)...)
			head, err := f.FeedHead(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if head <= head0 {
				t.Fatalf("FeedHead did not move with appends: %d, then %d", head0, head)
			}
			// A reader that has not read the appends is behind the head.
			resp := e.readAtLeast(f, store.FeedRequest{Limit: 1}, 1)
			if !resp.More || resp.Through >= head {
				t.Fatalf("after 1 of 5 changes: More %v, Through %d, head %d; want More and Through below the head", resp.More, resp.Through, head)
			}
			changes, _ := e.follow(f, store.FeedCursor{}, 2, nil) // fails unless Through reaches the head
			if len(changes) != 5 {
				t.Fatalf("%d changes, want 5", len(changes))
			}
		}},
		{"Cursors", func(t *testing.T) {
			e := s.open(t)
			f := e.feed()
			if c, err := f.LoadCursor(e.ctx, "recall"); err != nil || c != (store.FeedCursor{}) {
				t.Fatalf("LoadCursor of a new consumer: %+v, %v; want the zero cursor", c, err)
			}
			e.create(store.CreateRequest{ID: "a"})
			e.appendSteps("a", steps("a", 4)...)
			resp := e.readAtLeast(f, store.FeedRequest{Limit: 2}, 2)
			first := resp.Next
			if err := f.SaveCursor(e.ctx, "recall", first); err != nil {
				t.Fatal(err)
			}
			resp = e.readAtLeast(f, store.FeedRequest{After: first}, 2)
			end := resp.Next
			if err := f.SaveCursor(e.ctx, "recall", end); err != nil {
				t.Fatal(err)
			}
			// An older cursor does not move it back.
			if err := f.SaveCursor(e.ctx, "recall", first); err != nil {
				t.Fatal(err)
			}
			if c, err := f.LoadCursor(e.ctx, "recall"); err != nil || c != end {
				t.Fatalf("LoadCursor: %+v, %v; want %+v", c, err, end)
			}
			if c, err := f.LoadCursor(e.ctx, "other"); err != nil || c != (store.FeedCursor{}) {
				t.Fatalf("LoadCursor of another consumer: %+v, %v", c, err)
			}
			// Reading after the saved cursor gives what came since.
			e.appendSteps("a", steps("later", 1)...)
			got := e.drain(f, end, 0)
			if len(got) != 1 || got[0].Seq != 5 {
				t.Fatalf("after the saved cursor: %+v, want append a 5", got)
			}
			if s.cfg.Reopen != nil {
				e.st = store.New(s.cfg.Reopen(t, e.st))
				t.Cleanup(func() { closeQuietly(t, e.st) })
				if c, err := e.feed().LoadCursor(e.ctx, "recall"); err != nil || c != end {
					t.Fatalf("LoadCursor after reopen: %+v, %v; want %+v", c, err, end)
				}
				if got := e.drain(e.feed(), end, 0); len(got) != 1 || got[0].Seq != 5 {
					t.Fatalf("after the saved cursor, reopened: %+v", got)
				}
			}
		}},
		{"DropCursor", func(t *testing.T) {
			// A retired consumer holds the feed back until its cursor is
			// dropped; then what the others have read is trimmed.
			e := s.open(t)
			f := e.feed()
			if err := f.SaveCursor(e.ctx, "retired", store.FeedCursor{}); err != nil {
				t.Fatal(err)
			}
			e.create(store.CreateRequest{ID: "a"})
			e.appendSteps("a", steps("a", 3)...)
			end := e.readAtLeast(f, store.FeedRequest{}, 3).Next
			for _, c := range []string{"live", "storetest"} { // e.feed registered the suite's
				if err := f.SaveCursor(e.ctx, c, end); err != nil {
					t.Fatal(err)
				}
			}
			if got := e.drain(f, store.FeedCursor{}, 0); len(got) < 3 {
				t.Fatalf("%d changes kept while a consumer has read none; want them all", len(got))
			}
			if err := f.DropCursor(e.ctx, "retired"); err != nil {
				t.Fatal(err)
			}
			if c, err := f.LoadCursor(e.ctx, "retired"); err != nil || c != (store.FeedCursor{}) {
				t.Fatalf("LoadCursor of a dropped consumer: %+v, %v; want the zero cursor", c, err)
			}
			resp, err := f.ReadFeed(e.ctx, store.FeedRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if !s.cfg.FeedConsumers && len(resp.Changes) != 0 {
				t.Fatalf("after the retired cursor was dropped, %d changes read by every consumer are kept: %+v", len(resp.Changes), resp.Changes)
			}
			if c, err := f.LoadCursor(e.ctx, "live"); err != nil || c != end {
				t.Fatalf("the remaining consumer's cursor: %+v, %v; want %+v", c, err, end)
			}
			// What comes later is there for the remaining consumer.
			e.appendSteps("a", steps("later", 1)...)
			if got := e.drain(f, end, 0); len(got) != 1 || got[0].Seq != 4 {
				t.Fatalf("after the remaining cursor: %+v, want append a 4", got)
			}
			// Dropping again, or a consumer that never saved, does nothing.
			if err := f.DropCursor(e.ctx, "retired"); err != nil {
				t.Fatal(err)
			}
			if err := f.DropCursor(e.ctx, "never"); err != nil {
				t.Fatal(err)
			}
			e.wantErr(f.DropCursor(e.ctx, "a/b"), agentmem.ErrInvalid, "DropCursor with a bad name")
		}},
		{"NothingForRefusedOrRetriedWrites", func(t *testing.T) {
			e := s.open(t)
			f := e.feed()
			e.create(store.CreateRequest{ID: "a"})
			e.appendSteps("a", steps("a", 2)...)
			start := e.drain(f, store.FeedCursor{}, 0)
			cur := store.FeedCursor{}
			if len(start) > 0 {
				resp, err := f.ReadFeed(e.ctx, store.FeedRequest{Limit: len(start)})
				if err != nil {
					t.Fatal(err)
				}
				cur = resp.Next
			}
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "a", Steps: steps("b", 1), ExpectedLastSeq: ptr(int64(1))})
			e.wantErr(err, agentmem.ErrConflict, "append with a stale ExpectedLastSeq")
			_, err = e.st.Append(e.ctx, store.AppendRequest{SessionID: "missing", Steps: steps("b", 1)})
			e.wantErr(err, agentmem.ErrNotFound, "append to a missing session")
			e.wantSeqs(e.appendSteps("a", steps("a", 2)...), []int64{1, 2}, "retried append")
			_, err = e.st.Create(e.ctx, store.CreateRequest{ID: "b", ParentID: "missing"})
			e.wantErr(err, agentmem.ErrNotFound, "branch of a missing session")
			if got := e.drain(f, cur, 0); len(got) != 0 {
				t.Fatalf("refused and retried writes left changes: %+v", got)
			}
		}},
		{"Import", func(t *testing.T) {
			src := s.open(t)
			src.create(store.CreateRequest{ID: "a", Tenant: "t"})
			src.appendSteps("t/a", steps("a", 3)...)
			dump := src.export("t/a")
			dst := src.another()
			f := dst.feed()
			if _, err := store.Import(dst.ctx, dst.st, strings.NewReader(dump), store.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			for _, c := range dst.drain(f, store.FeedCursor{}, 0) {
				if c.Kind != store.ChangeAppend || c.SessionID != "a" || c.Tenant != "t" || c.Entry == nil {
					t.Fatalf("imported session: change %+v", c)
				}
				seqs = append(seqs, c.Seq)
			}
			dst.wantSeqs(seqs, seqRange(1, 3), "changes of an imported session")
		}},
		{"BadInput", func(t *testing.T) {
			e := s.open(t)
			f := e.feed()
			_, err := f.ReadFeed(e.ctx, store.FeedRequest{Limit: -1})
			e.wantErr(err, agentmem.ErrInvalid, "ReadFeed with a negative limit")
			_, err = f.ReadFeed(e.ctx, store.FeedRequest{Limit: store.MaxFeedLimit + 1})
			e.wantErr(err, agentmem.ErrInvalid, "ReadFeed over the limit")
			_, err = f.ReadFeed(e.ctx, store.FeedRequest{After: store.FeedCursor{Pos: -1}})
			e.wantErr(err, agentmem.ErrInvalid, "ReadFeed after a negative cursor")
			_, err = f.LoadCursor(e.ctx, "")
			e.wantErr(err, agentmem.ErrInvalid, "LoadCursor without a name")
			e.wantErr(f.SaveCursor(e.ctx, "a/b", store.FeedCursor{}), agentmem.ErrInvalid, "SaveCursor with a bad name")
			e.wantErr(f.SaveCursor(e.ctx, "ok", store.FeedCursor{Pos: -3}), agentmem.ErrInvalid, "SaveCursor of a negative cursor")
		}},
		{"FollowWhileWriting", func(t *testing.T) {
			e := s.open(t)
			f := e.feed()
			const writers, each = 6, 25
			for w := range writers {
				e.create(store.CreateRequest{ID: fmt.Sprintf("s%d", w)})
			}
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := fmt.Sprintf("s%d", w)
					for i := range each {
						step := actionStep(fmt.Sprintf("%s-%d", id, i))
						if _, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: id, Steps: []agentmem.Step{step}}); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			// Follow the feed while the writers write, then to its end.
			seen := map[string][]int64{}
			var cur store.FeedCursor
			follow := func() {
				resp, err := f.ReadFeed(e.ctx, store.FeedRequest{After: cur, Limit: 7})
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range resp.Changes {
					seen[c.SessionID] = append(seen[c.SessionID], c.Seq)
				}
				cur = resp.Next
			}
			for running := true; running; {
				select {
				case <-done:
					running = false
				default:
					follow()
				}
			}
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			rest, _ := e.follow(f, cur, 7, nil)
			for _, c := range rest {
				seen[c.SessionID] = append(seen[c.SessionID], c.Seq)
			}
			for w := range writers {
				id := fmt.Sprintf("s%d", w)
				e.wantSeqs(seen[id], seqRange(1, each), "changes of "+id+" read while writing")
			}
		}},
	}
}

// feed returns the store's feed; every backend has one. The suite's
// reads are registered as consumer "storetest" (at the start), so that
// no change is trimmed before they read it.
func (e *env) feed() store.Feed {
	e.t.Helper()
	f, ok := e.st.Feed()
	if !ok {
		e.t.Fatal("the store's driver does not implement store.Feed")
	}
	if err := f.SaveCursor(e.ctx, "storetest", store.FeedCursor{}); err != nil {
		e.t.Fatalf("SaveCursor: %v", err)
	}
	return f
}

// drain reads the feed after cur, limit at a time, until it has read
// every change committed before the call (Through reaches the head).
func (e *env) drain(f store.Feed, cur store.FeedCursor, limit int) []store.Change {
	e.t.Helper()
	out, _ := e.follow(f, cur, limit, nil)
	return out
}

// feedWait bounds how long follow waits for the feed to reach its head: a
// PostgreSQL feed is held back while an older transaction anywhere in the
// cluster (another test package's) is still open.
const feedWait = 30 * time.Second

// readAtLeast reads the feed with req until the read returns at least n
// changes: a database feed returns a change only once every older
// transaction has ended, and another test's may still be open.
func (e *env) readAtLeast(f store.Feed, req store.FeedRequest, n int) *store.FeedResponse {
	e.t.Helper()
	deadline := time.Now().Add(feedWait)
	for {
		resp, err := f.ReadFeed(e.ctx, req)
		if err != nil {
			e.t.Fatalf("ReadFeed: %v", err)
		}
		if len(resp.Changes) >= n {
			return resp
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("ReadFeed(%+v) returned %d changes in %v, want %d", req, len(resp.Changes), feedWait, n)
		}
		time.Sleep(10 * time.Millisecond) // an older transaction holds the feed back: poll
	}
}

// follow reads the feed after cur until it has read every change
// committed before the call, calling each with every batch read, and
// returns the changes and the cursor after them.
func (e *env) follow(f store.Feed, cur store.FeedCursor, limit int, each func(*store.FeedResponse)) ([]store.Change, store.FeedCursor) {
	e.t.Helper()
	head, err := f.FeedHead(e.ctx)
	if err != nil {
		e.t.Fatalf("FeedHead: %v", err)
	}
	var out []store.Change
	deadline := time.Now().Add(feedWait)
	for {
		resp, err := f.ReadFeed(e.ctx, store.FeedRequest{After: cur, Limit: limit})
		if err != nil {
			e.t.Fatalf("ReadFeed: %v", err)
		}
		if each != nil {
			each(resp)
		}
		out = append(out, resp.Changes...)
		cur = resp.Next
		if !resp.More && resp.Through >= head {
			return out, cur
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the feed did not reach its head %d in %v (Through %d)", head, feedWait, resp.Through)
		}
		if !resp.More {
			time.Sleep(10 * time.Millisecond) // an older transaction holds the feed back: poll
		}
	}
}
