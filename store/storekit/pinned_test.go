package storekit_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

func TestCheckPinned(t *testing.T) {
	// 1 action, 2 system, 3 task, 4 task, 5 system, 6 action
	ws := []storekit.WorkingStep{
		{Seq: 1, Kind: agentmem.KindAction}, {Seq: 2, Kind: agentmem.KindSystemPrompt}, {Seq: 3, Kind: agentmem.KindTask},
		{Seq: 4, Kind: agentmem.KindTask}, {Seq: 5, Kind: agentmem.KindSystemPrompt}, {Seq: 6, Kind: agentmem.KindAction},
	}
	for _, c := range []store.CompactionRecord{
		{Working: []int64{2, 3, 5}},
		{Working: []int64{5, 3, 2}},
		{Working: []int64{2, 3, 4, 5, 6}},
		// Pinned steps named in Removed leave on purpose.
		{Working: []int64{3, 5}, Removed: []int64{2}},
		{Working: []int64{}, Removed: []int64{1, 2, 3, 4, 5, 6}},
		{Removed: []int64{2, 3, 5}},
	} {
		if err := storekit.CheckPinned(&c, ws); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := storekit.CheckPinned(&store.CompactionRecord{Working: []int64{}}, ws[5:]); err != nil {
		t.Errorf("a working set without pinned steps emptied: %v", err)
	}
	for _, c := range []struct {
		working, removed []int64
		msg              string
	}{
		{[]int64{3, 5}, nil, "step 2, a system prompt"},
		{[]int64{2, 4, 5}, []int64{1, 4}, "step 3, the first task"},
		{[]int64{2, 3, 6}, []int64{1}, "step 5, a system prompt"},
		{[]int64{}, nil, "step 2, a system prompt"},
		{nil, []int64{2, 3, 4}, "step 5, a system prompt"},
	} {
		err := storekit.CheckPinned(&store.CompactionRecord{Working: c.working, Removed: c.removed}, ws)
		var inv *agentmem.InvalidError
		if !errors.As(err, &inv) || inv.Field != "compaction.working" || !strings.Contains(inv.Reason, c.msg) {
			t.Errorf("working %v, removed %v: %v, want an error about %s", c.working, c.removed, err, c.msg)
		}
	}
}

// TestPinnedKindsIsPinnedFlags checks that the rule the store applies to
// kinds is the library's rule for steps.
func TestPinnedKindsIsPinnedFlags(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	kinds := agentmem.Kinds()
	for range 200 {
		steps := make([]agentmem.Step, r.IntN(8))
		ks := make([]agentmem.StepKind, len(steps))
		for i := range steps {
			switch k := kinds[r.IntN(len(kinds))]; k {
			case agentmem.KindSystemPrompt:
				steps[i] = &agentmem.SystemPromptStep{Content: "s"}
			case agentmem.KindTask:
				steps[i] = &agentmem.TaskStep{Task: "t"}
			default:
				steps[i] = &agentmem.SummaryStep{Summary: "x"}
			}
			ks[i] = steps[i].Kind()
		}
		if got, want := agentmem.PinnedKinds(ks), agentmem.PinnedFlags(steps); !slices.Equal(got, want) {
			t.Fatalf("PinnedKinds(%v) = %v, PinnedFlags = %v", ks, got, want)
		}
	}
}
