package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

func task(id string, n int64) agentmem.Step {
	return store.WithNumber(&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: id}, Task: id}, n)
}

func ids(steps []agentmem.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, fmt.Sprintf("%s@%d", s.Info().ID, s.Info().Number))
	}
	return out
}

func TestWorkingSet(t *testing.T) {
	stepEntry := func(id string, n int64) store.Entry {
		return store.Entry{Seq: n, Kind: store.StepEntry, Step: task(id, n)}
	}
	copy3 := store.WithNumber(&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "c"}, Task: "short"}, 3)
	log := []store.Entry{
		stepEntry("a", 1), stepEntry("b", 2), stepEntry("c", 3), stepEntry("d", 4),
		{Seq: 5, Kind: store.CompactionEntry, Compaction: &store.CompactionRecord{Working: []int64{1, 4}}},
		stepEntry("s", 6),
		{Seq: 7, Kind: store.CompactionEntry, Compaction: &store.CompactionRecord{Working: []int64{6, 3, 2}, Replaced: []agentmem.Step{copy3}}},
		stepEntry("e", 8),
	}
	got := store.WorkingSet(log)
	if want := []string{"s@6", "c@3", "b@2", "e@8"}; !slices.Equal(ids(got), want) {
		t.Fatalf("WorkingSet = %v, want %v", ids(got), want)
	}
	if got[1].(*agentmem.TaskStep).Task != "short" {
		t.Fatal("the replaced step is not shown by its copy")
	}
	if !slices.Equal(store.ReplacedSeqs(log), []int64{3}) || !slices.Equal(storekit.WorkingSeqs(log), []int64{6, 3, 2, 8}) {
		t.Fatalf("ReplacedSeqs %v, WorkingSeqs %v", store.ReplacedSeqs(log), storekit.WorkingSeqs(log))
	}
	// A subset with the compaction, the steps it names and what follows
	// is enough.
	subset := []store.Entry{log[1], log[2], log[5], log[6], log[7]}
	if !slices.Equal(ids(store.WorkingSet(subset)), ids(got)) {
		t.Fatalf("WorkingSet of a subset = %v", ids(store.WorkingSet(subset)))
	}
	if w := ids(store.WorkingSet(log[:4])); !slices.Equal(w, []string{"a@1", "b@2", "c@3", "d@4"}) {
		t.Fatalf("WorkingSet without compaction = %v", w)
	}
	if w := store.WorkingSet(nil); len(w) != 0 {
		t.Fatal("WorkingSet of nothing")
	}
}

// TestWorkingSetAmendments: an amendment's copies apply on top of the
// newest full record's and of earlier amendments (the newest copy of a
// step wins), to steps before and after that record alike; a full record
// after them starts over with its own copies; the working set's members
// are the full record's, so Prune keeps what it did.
func TestWorkingSetAmendments(t *testing.T) {
	stepEntry := func(id string, n int64) store.Entry {
		return store.Entry{Seq: n, Kind: store.StepEntry, Step: task(id, n)}
	}
	short := func(id string, n int64, text string) agentmem.Step {
		return store.WithNumber(&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: id}, Task: text}, n)
	}
	amend := func(n int64, copies ...agentmem.Step) store.Entry {
		return store.Entry{Seq: n, Kind: store.CompactionEntry, Compaction: &store.CompactionRecord{Amend: true, Replaced: copies}}
	}
	texts := func(steps []agentmem.Step) []string {
		var out []string
		for _, s := range steps {
			out = append(out, fmt.Sprintf("%s@%d", s.(*agentmem.TaskStep).Task, s.Info().Number))
		}
		return out
	}
	log := []store.Entry{
		stepEntry("a", 1), stepEntry("b", 2), stepEntry("c", 3),
		amend(4, short("b", 2, "b1")),
		{Seq: 5, Kind: store.CompactionEntry, Compaction: &store.CompactionRecord{Working: []int64{1, 3}, Replaced: []agentmem.Step{short("c", 3, "c1")}, Removed: []int64{2}}},
		stepEntry("d", 6),
		amend(7, short("a", 1, "a1"), short("d", 6, "d1")),
		amend(8, short("a", 1, "a2")),
		stepEntry("e", 9),
	}
	if got, want := texts(store.WorkingSet(log)), []string{"a2@1", "c1@3", "d1@6", "e@9"}; !slices.Equal(got, want) {
		t.Fatalf("WorkingSet = %v, want %v", got, want)
	}
	if got := store.ReplacedSeqs(log); !slices.Equal(got, []int64{1, 3, 6}) {
		t.Fatalf("ReplacedSeqs = %v", got)
	}
	if got := storekit.WorkingSeqs(log); !slices.Equal(got, []int64{1, 3, 6, 9}) {
		t.Fatalf("WorkingSeqs = %v", got)
	}
	if i := storekit.NewestFull(log); i != 4 {
		t.Fatalf("NewestFull = %d", i)
	}
	// Before the full record, the amendment at 4 applies to the steps.
	if got := texts(store.WorkingSet(log[:4])); !slices.Equal(got, []string{"a@1", "b1@2", "c@3"}) {
		t.Fatalf("WorkingSet up to 4 = %v", got)
	}
	if got := storekit.WorkingSeqs(log[:4]); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("WorkingSeqs up to 4 = %v: an amendment does not empty the working set", got)
	}
	// A full record after the amendments applies its own copies only.
	full := append(slices.Clone(log), store.Entry{Seq: 10, Kind: store.CompactionEntry,
		Compaction: &store.CompactionRecord{Working: []int64{1, 6, 9}, Replaced: []agentmem.Step{short("a", 1, "a2")}}})
	if got := texts(store.WorkingSet(full)); !slices.Equal(got, []string{"a2@1", "d@6", "e@9"}) {
		t.Fatalf("WorkingSet after a full record = %v", got)
	}
	// The full record, the steps it names and what follows are enough.
	subset := []store.Entry{log[0], log[2], log[4], log[5], log[6], log[7], log[8]}
	if !slices.Equal(texts(store.WorkingSet(subset)), texts(store.WorkingSet(log))) {
		t.Fatalf("WorkingSet of a subset = %v", texts(store.WorkingSet(subset)))
	}
	fullRec := log[4].Compaction
	for seq, want := range map[int64]bool{1: true, 2: false, 3: true, 4: false, 6: true, 9: true} {
		if got := storekit.InWorkingSet(seq, 5, fullRec); got != want {
			t.Errorf("InWorkingSet(%d) = %v", seq, got)
		}
	}
	if !storekit.InWorkingSet(1, 0, nil) {
		t.Error("InWorkingSet with no full record")
	}
}

func TestPageToken(t *testing.T) {
	c := store.Cursor{CreatedAt: time.Date(2026, 2, 3, 4, 5, 6, 789000, time.UTC), ID: "sess-1", Tenant: "acme"}
	tok := store.EncodePageToken(c)
	got, err := store.DecodePageToken(tok)
	if err != nil || !got.CreatedAt.Equal(c.CreatedAt) || got.ID != c.ID || got.Tenant != c.Tenant {
		t.Fatalf("DecodePageToken(EncodePageToken(%+v)) = %+v, %v", c, got, err)
	}
	for _, bad := range []string{"", "!!", "AAAA", store.EncodePageToken(store.Cursor{ID: ".."})} {
		if _, err := store.DecodePageToken(bad); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("DecodePageToken(%q) = %v", bad, err)
		}
	}
	if !c.After(c.CreatedAt.Add(-time.Second), "zzz", "zzz") || !c.After(c.CreatedAt, "sess-0", "zzz") || !c.After(c.CreatedAt, "sess-1", "ab") ||
		c.After(c.CreatedAt, "sess-1", "acme") || c.After(c.CreatedAt, "sess-1", "b") || c.After(c.CreatedAt.Add(time.Second), "a", "") {
		t.Fatal("Cursor.After")
	}
	size, after, err := store.ValidateList(store.ListRequest{PageSize: 5000, PageToken: tok})
	if err != nil || size != store.MaxPageSize || after == nil || after.ID != "sess-1" {
		t.Fatalf("ValidateList = %d, %+v, %v", size, after, err)
	}
	if size, _, _ := store.ValidateList(store.ListRequest{}); size != store.DefaultPageSize {
		t.Fatalf("default page size %d", size)
	}
}

func TestNow(t *testing.T) {
	loc := time.FixedZone("X", 7200)
	got := storekit.Now(func() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 123456789, loc) })
	if got.Location() != time.UTC || got.Nanosecond() != 123456000 || got.Hour() != 10 {
		t.Fatalf("Now = %v", got)
	}
}
