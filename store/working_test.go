package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
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
	if !slices.Equal(store.ReplacedSeqs(log), []int64{3}) || !slices.Equal(store.WorkingSeqs(log), []int64{6, 3, 2, 8}) {
		t.Fatalf("ReplacedSeqs %v, WorkingSeqs %v", store.ReplacedSeqs(log), store.WorkingSeqs(log))
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

func TestPageToken(t *testing.T) {
	c := store.Cursor{CreatedAt: time.Date(2026, 2, 3, 4, 5, 6, 789000, time.UTC), ID: "sess-1"}
	tok := store.EncodePageToken(c)
	got, err := store.DecodePageToken(tok)
	if err != nil || !got.CreatedAt.Equal(c.CreatedAt) || got.ID != c.ID {
		t.Fatalf("DecodePageToken(EncodePageToken(%+v)) = %+v, %v", c, got, err)
	}
	for _, bad := range []string{"", "!!", "AAAA", store.EncodePageToken(store.Cursor{ID: "../x"})} {
		if _, err := store.DecodePageToken(bad); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("DecodePageToken(%q) = %v", bad, err)
		}
	}
	if !c.After(c.CreatedAt.Add(-time.Second), "zzz") || !c.After(c.CreatedAt, "sess-0") || c.After(c.CreatedAt, "sess-1") || c.After(c.CreatedAt.Add(time.Second), "a") {
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
	got := store.Now(func() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 123456789, loc) })
	if got.Location() != time.UTC || got.Nanosecond() != 123456000 || got.Hour() != 10 {
		t.Fatalf("Now = %v", got)
	}
}
