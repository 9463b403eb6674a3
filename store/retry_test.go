package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

func TestSameStep(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := func(id, text string, n int, tm time.Time, md map[string]string) agentmem.Step {
		return &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: id, Number: n, Time: tm, Metadata: md}, Task: text}
	}
	base := task("k", "do it", 0, time.Time{}, nil)
	for _, c := range []struct {
		name string
		s    agentmem.Step
		same bool
	}{
		{"itself", base, true},
		{"numbered and stamped", task("k", "do it", 9, at, nil), true},
		{"other time zone", task("k", "do it", 0, at.In(time.FixedZone("X", 3600)), nil), true},
		{"other text", task("k", "do it now", 0, time.Time{}, nil), false},
		{"other ID", task("j", "do it", 0, time.Time{}, nil), false},
		{"metadata", task("k", "do it", 0, time.Time{}, map[string]string{"a": "b"}), false},
		{"other kind", &agentmem.PlanningStep{StepInfo: agentmem.StepInfo{ID: "k"}, Plan: "do it"}, false},
		{"nil", nil, false},
	} {
		if got := store.SameStep(base, c.s); got != c.same {
			t.Errorf("SameStep(base, %s) = %v, want %v", c.name, got, c.same)
		}
	}
	if !store.SameStep(nil, nil) {
		t.Error("SameStep(nil, nil) = false")
	}
	// A step as a backend stores it (numbered, through its JSON) is the
	// step it was given.
	for _, s := range codecSteps() {
		n, _, err := storekit.Normalize(s, 99)
		if err != nil || !store.SameStep(n, s) {
			t.Errorf("SameStep(Normalize(%s), itself) = false (%v)", s.Kind(), err)
		}
	}
	// SameStep leaves its arguments alone.
	stamped := task("k", "do it", 9, at, nil)
	store.SameStep(base, stamped)
	if stamped.Info().Number != 9 || !stamped.Info().Time.Equal(at) {
		t.Errorf("SameStep changed a step: %+v", stamped.Info())
	}
}

func TestCheckRetry(t *testing.T) {
	a := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "k/0"}, Task: "a"}
	b := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "k/1"}, Task: "b"}
	b2 := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "k/1"}, Task: "b, changed"}
	req := []agentmem.Step{a, b}

	if retry, err := storekit.CheckRetry(req, make([]agentmem.Step, 2), make([]int64, 2)); retry || err != nil {
		t.Fatalf("nothing stored: %v, %v; want a new append", retry, err)
	}
	if retry, err := storekit.CheckRetry(req, []agentmem.Step{a, b}, []int64{4, 5}); !retry || err != nil {
		t.Fatalf("all stored: %v, %v; want a retry", retry, err)
	}
	for _, c := range []struct {
		name   string
		stored []agentmem.Step
		seqs   []int64
		index  int
		seq    int64
		reason string
	}{
		{"second differs", []agentmem.Step{a, b2}, []int64{4, 5}, 1, 5, "differs from the step stored with this ID at seq 5"},
		{"first stored only", []agentmem.Step{a, nil}, []int64{4, 0}, 1, 0, "while steps[0] is (at seq 4)"},
		{"second stored only", []agentmem.Step{nil, b}, []int64{0, 5}, 0, 0, "while steps[1] is (at seq 5)"},
	} {
		retry, err := storekit.CheckRetry(req, c.stored, c.seqs)
		var re *store.IDReusedError
		if retry || !errors.As(err, &re) || !errors.Is(err, store.ErrIDReused) || !errors.Is(err, agentmem.ErrConflict) {
			t.Fatalf("%s: %v, %v; want an *IDReusedError", c.name, retry, err)
		}
		if re.Index != c.index || re.Seq != c.seq || re.ID != req[c.index].Info().ID || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: %+v (%v)", c.name, re, err)
		}
	}
}

func TestCheckRetriedCompaction(t *testing.T) {
	rec := &store.CompactionRecord{Working: []int64{1, store.NewStepRef(0)}, Removed: []int64{2}}
	stored := &store.CompactionRecord{Working: []int64{1, 3}, Removed: []int64{2}}
	if err := storekit.CheckRetriedCompaction(rec, []int64{3}, 4, stored); err != nil {
		t.Fatalf("the same compaction: %v", err)
	}
	for name, s := range map[string]*store.CompactionRecord{
		"no compaction":     nil,
		"other working set": {Working: []int64{3}, Removed: []int64{1, 2}},
		"other removed":     {Working: []int64{1, 3}},
	} {
		err := storekit.CheckRetriedCompaction(rec, []int64{3}, 4, s)
		var re *store.IDReusedError
		if !errors.As(err, &re) || re.Index != -1 || re.Seq != 4 || !strings.HasPrefix(err.Error(), "store: the compaction ") || !strings.HasPrefix(re.What(), "the compaction ") {
			t.Errorf("%s: %v, want an *IDReusedError for the compaction", name, err)
		}
	}
}
