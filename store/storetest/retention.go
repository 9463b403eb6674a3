package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

func (s *suite) retentionTests() []namedTest {
	return []namedTest{
		{"TTLExpiry", func(t *testing.T) {
			e := s.open(t)
			got := e.create(store.CreateRequest{ID: "ttl", TTL: time.Hour, UserID: "u"})
			e.wantTime(got.ExpiresAt, Epoch.Add(time.Hour), "ExpiresAt")
			e.create(store.CreateRequest{ID: "stay", UserID: "u"})
			e.clock.Advance(time.Hour - time.Second)
			e.appendSteps("ttl", steps("t", 2)...)
			if e.get("ttl").ExpiresAt != got.ExpiresAt {
				t.Fatal("an append moved ExpiresAt")
			}
			e.clock.Advance(time.Second) // exactly at ExpiresAt: expired
			_, err := e.st.Get(e.ctx, "", "ttl")
			e.wantErr(err, agentmem.ErrNotFound, "Get of an expired session")
			_, err = e.st.Read(e.ctx, store.ReadRequest{SessionID: "ttl"})
			e.wantErr(err, agentmem.ErrNotFound, "Read of an expired session")
			_, err = e.st.Read(e.ctx, store.ReadRequest{SessionID: "ttl", WorkingSet: true})
			e.wantErr(err, agentmem.ErrNotFound, "working-set Read of an expired session")
			_, err = e.st.Append(e.ctx, store.AppendRequest{SessionID: "ttl", Steps: steps("late", 1)})
			e.wantErr(err, agentmem.ErrNotFound, "Append to an expired session")
			_, err = e.st.Create(e.ctx, store.CreateRequest{ID: "kid", ParentID: "ttl"})
			e.wantErr(err, agentmem.ErrNotFound, "branch of an expired session")
			if ids := e.listAll(store.ListRequest{UserID: "u"}, 0); !slices.Equal(ids, []string{"stay"}) {
				t.Fatalf("List shows %v, want only the live session", ids)
			}
			_, err = e.st.Create(e.ctx, store.CreateRequest{ID: "ttl"})
			e.wantExists(err, "ttl", "Create over an expired session Prune has not deleted")
			resp, err := e.st.Prune(e.ctx, store.PruneRequest{})
			if err != nil || resp.SessionsDeleted != 1 {
				t.Fatalf("Prune: %+v, %v", resp, err)
			}
			e.create(store.CreateRequest{ID: "ttl"}) // free again
			e.wantSeqs(e.appendSteps("ttl", steps("fresh", 1)...), []int64{1}, "append to the new session")
		}},
		{"PersistentAndSessionNeverExpire", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "forever", Retention: store.Persistent})
			e.create(store.CreateRequest{ID: "plain"})
			e.create(store.CreateRequest{ID: "single", Retention: store.SingleRun})
			e.appendSteps("forever", steps("f", 1)...)
			e.clock.Advance(100 * 365 * 24 * time.Hour)
			resp, err := e.st.Prune(e.ctx, store.PruneRequest{})
			if err != nil || resp.SessionsDeleted != 0 {
				t.Fatalf("Prune deleted sessions without a TTL: %+v, %v", resp, err)
			}
			for _, id := range []string{"forever", "plain", "single"} {
				e.get(id)
			}
			if len(e.entries("forever")) != 1 {
				t.Fatal("a persistent session lost its log")
			}
		}},
		{"DeleteExpired", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "x", TTL: time.Minute})
			e.clock.Advance(time.Hour)
			if err := e.st.Delete(e.ctx, "", "x"); err != nil {
				t.Fatalf("Delete of an expired session: %v", err)
			}
			e.create(store.CreateRequest{ID: "x"})
		}},
		{"SingleRunBoundClose", func(t *testing.T) {
			e := s.open(t)
			b, err := store.CreateMemory(e.ctx, e.st, store.CreateRequest{ID: "run", Retention: store.SingleRun}, e.memOptions())
			if err != nil {
				t.Fatal(err)
			}
			e.add(b, taskStep("", "do it"))
			keep, err := store.CreateMemory(e.ctx, e.st, store.CreateRequest{ID: "keep"}, e.memOptions())
			if err != nil {
				t.Fatal(err)
			}
			e.add(keep, taskStep("", "remember it"))
			if err := b.Close(e.ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := keep.Close(e.ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			_, err = e.st.Get(e.ctx, "", "run")
			e.wantErr(err, agentmem.ErrNotFound, "single-run session after its run ended")
			if n := len(e.entries("keep")); n != 1 {
				t.Fatalf("a session-retention session lost its log on Close: %d entries", n)
			}
		}},
	}
}

func (s *suite) pruneTests() []namedTest {
	return []namedTest{
		{"ExpiredSessions", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "h1", TTL: time.Hour})
			e.create(store.CreateRequest{ID: "h2", TTL: 2 * time.Hour})
			e.create(store.CreateRequest{ID: "p", Retention: store.Persistent})
			e.appendSteps("h1", steps("h1", 3)...)
			e.clock.Advance(90 * time.Minute)
			resp, err := e.st.Prune(e.ctx, store.PruneRequest{}) // the store's clock
			if err != nil || resp.SessionsDeleted != 1 || resp.EntriesDeleted != 0 {
				t.Fatalf("Prune at +90m: %+v, %v", resp, err)
			}
			if len(resp.Deleted) != 1 || resp.Deleted[0].ID != "h1" || resp.Deleted[0].LastSeq != 3 {
				t.Fatalf("Prune at +90m deleted %+v, want h1 as it was", resp.Deleted)
			}
			resp, err = e.st.Prune(e.ctx, store.PruneRequest{Now: Epoch.Add(90 * time.Minute)})
			if err != nil || resp.SessionsDeleted != 0 {
				t.Fatalf("second Prune at +90m: %+v, %v", resp, err)
			}
			resp, err = e.st.Prune(e.ctx, store.PruneRequest{Now: Epoch.Add(3 * time.Hour)})
			if err != nil || resp.SessionsDeleted != 1 {
				t.Fatalf("Prune at +3h: %+v, %v", resp, err)
			}
			if ids := e.listAll(store.ListRequest{}, 0); !slices.Equal(ids, []string{"p"}) {
				t.Fatalf("after pruning: %v", ids)
			}
			e.clock.Advance(24 * time.Hour)
			e.create(store.CreateRequest{ID: "h1"}) // the ID is free
		}},
		{"ExpiredParentKeepsBranch", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "p", TTL: time.Hour})
			ps := steps("p", 3)
			e.appendSteps("p", ps...)
			e.create(store.CreateRequest{ID: "b", ParentID: "p"})
			e.appendSteps("b", steps("b", 1)...)
			want := e.entriesJSON(e.entries("b"))
			e.clock.Advance(2 * time.Hour)
			if got := e.entriesJSON(e.entries("b")); got != want {
				t.Fatalf("the branch of an expired parent lost history:\n%s", got)
			}
			resp, err := e.st.Prune(e.ctx, store.PruneRequest{})
			if err != nil || resp.SessionsDeleted != 1 {
				t.Fatalf("Prune: %+v, %v", resp, err)
			}
			if got := e.entriesJSON(e.entries("b")); got != want {
				t.Fatalf("pruning the parent changed the branch:\nbefore:\n%s\nafter:\n%s", want, got)
			}
		}},
		{"CoveredAfterDeletingAMiddleBranch", func(t *testing.T) {
			// g <- p <- b; deleting p leaves b reading through g, so
			// g's covered originals stay while b still shows them. Every
			// backend must agree on what Prune deletes here.
			e := s.open(t)
			e.create(store.CreateRequest{ID: "g"})
			e.appendSteps("g", steps("g", 4)...)
			e.create(store.CreateRequest{ID: "p", ParentID: "g"})
			e.create(store.CreateRequest{ID: "b", ParentID: "p"})
			bWant := e.entriesJSON(e.entries("b"))
			sum := &agentmem.SummaryStep{StepInfo: agentmem.StepInfo{ID: "g-sum"}, Summary: "s", Covers: []agentmem.Range{{From: 1, To: 3}}}
			e.append(store.AppendRequest{SessionID: "g", Steps: []agentmem.Step{sum},
				Compaction: &store.CompactionRecord{Working: []int64{store.NewStepRef(0), 4}}})
			if err := e.st.Delete(e.ctx, "", "p"); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Hour)
			resp, err := e.st.Prune(e.ctx, store.PruneRequest{CoveredBefore: e.clock.Now()})
			if err != nil || resp.EntriesDeleted != 0 {
				t.Fatalf("Prune: %+v, %v (want nothing deleted: b reads g's steps 1-4)", resp, err)
			}
			e.wantSeqs(seqsOf(e.entries("g")), []int64{1, 2, 3, 4, 5, 6}, "g after pruning")
			if got := e.entriesJSON(e.entries("b")); got != bWant {
				t.Fatalf("b's history changed:\n%s\nwant\n%s", got, bWant)
			}
		}},
		{"CoveredBefore", func(t *testing.T) {
			e := s.open(t)
			c := e.compactedSession("c") // steps at Epoch, summary and record at +1m
			e.clock.Advance(time.Minute)
			a8 := actionStep("c-a8")
			e.appendSteps("c", a8) // +2m
			e.create(store.CreateRequest{ID: "plain"})
			e.appendSteps("plain", steps("plain", 3)...)
			ws := e.stepsJSON(e.workingSet("c"))
			e.clock.Advance(time.Hour)

			// A cut-off no older than the steps deletes nothing.
			resp, err := e.st.Prune(e.ctx, store.PruneRequest{CoveredBefore: Epoch})
			if err != nil || resp.EntriesDeleted != 0 || resp.SessionsDeleted != 0 {
				t.Fatalf("Prune with a cut-off at the steps' time: %+v, %v", resp, err)
			}
			resp, err = e.st.Prune(e.ctx, store.PruneRequest{CoveredBefore: e.clock.Now()})
			if err != nil || resp.EntriesDeleted != 2 || resp.SessionsDeleted != 0 {
				t.Fatalf("Prune of covered steps: %+v, %v (want the 2 summarized steps deleted)", resp, err)
			}
			e.wantSeqs(seqsOf(e.entries("c")), []int64{1, 2, 5, 6, 7, 8}, "log after pruning covered steps (the replaced original 5 stays)")
			if got := e.stepsJSON(e.workingSet("c")); got != ws {
				t.Fatalf("pruning changed the working set:\n%s\nwant\n%s", got, ws)
			}
			if got := e.encode(e.entries("c")[2].Step); got != e.numbered(c.steps[5], 5) {
				t.Fatalf("original of the replaced step: %s", got)
			}
			if n := len(e.entries("plain")); n != 3 {
				t.Fatalf("a session without compactions lost %d steps", 3-n)
			}
			// Pruning again finds nothing more; the session keeps working.
			resp, err = e.st.Prune(e.ctx, store.PruneRequest{CoveredBefore: e.clock.Now()})
			if err != nil || resp.EntriesDeleted != 0 {
				t.Fatalf("second Prune: %+v, %v", resp, err)
			}
			e.wantSeqs(e.appendSteps("c", steps("after", 1)...), []int64{9}, "append after pruning")
		}},
		{"CoveredKeepsBranchWorkingSet", func(t *testing.T) {
			e := s.open(t)
			e.parentWith5("p")
			e.create(store.CreateRequest{ID: "b", ParentID: "p"}) // its working set: 1-5
			sum := summaryStep("p-sum", "3 and 4", agentmem.Range{From: 3, To: 4})
			e.append(store.AppendRequest{SessionID: "p", Steps: []agentmem.Step{sum}, Compaction: &store.CompactionRecord{
				Working: []int64{1, 2, store.NewStepRef(0), 5}, Removed: []int64{3, 4},
			}})
			bws := e.stepsJSON(e.workingSet("b"))
			e.clock.Advance(time.Hour)
			resp, err := e.st.Prune(e.ctx, store.PruneRequest{CoveredBefore: e.clock.Now()})
			if err != nil || resp.EntriesDeleted != 0 {
				t.Fatalf("Prune deleted steps a branch's working set names: %+v, %v", resp, err)
			}
			if got := e.stepsJSON(e.workingSet("b")); got != bws {
				t.Fatalf("branch working set changed:\n%s", got)
			}
			// Once the branch no longer needs step 3, it goes.
			e.append(store.AppendRequest{SessionID: "b", Compaction: &store.CompactionRecord{Working: []int64{4, 5}, Removed: []int64{1, 2, 3}}})
			e.clock.Advance(time.Hour)
			resp, err = e.st.Prune(e.ctx, store.PruneRequest{CoveredBefore: e.clock.Now()})
			if err != nil || resp.EntriesDeleted != 1 {
				t.Fatalf("Prune after the branch compacted: %+v, %v (want step 3 deleted)", resp, err)
			}
			e.wantSeqs(seqsOf(e.entries("p")), []int64{1, 2, 4, 5, 6, 7}, "parent log")
			e.wantSeqs(seqsOf(e.entries("b")), []int64{1, 2, 4, 5, 6}, "branch log")
		}},
	}
}
