package store_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

func TestCheckPinned(t *testing.T) {
	// 1 action, 2 system, 3 task, 4 task, 5 system, 6 action
	ws := []store.WorkingStep{
		{1, agentmem.KindAction}, {2, agentmem.KindSystemPrompt}, {3, agentmem.KindTask},
		{4, agentmem.KindTask}, {5, agentmem.KindSystemPrompt}, {6, agentmem.KindAction},
	}
	for _, working := range [][]int64{{2, 3, 5}, {5, 3, 2}, {2, 3, 4, 5, 6}, {}, nil} {
		if err := store.CheckPinned(&store.CompactionRecord{Working: working}, ws); err != nil {
			t.Errorf("working %v: %v", working, err)
		}
	}
	for _, c := range []struct {
		working []int64
		msg     string
	}{
		{[]int64{3, 5}, "step 2, a system prompt"},
		{[]int64{2, 4, 5}, "step 3, the first task"},
		{[]int64{2, 3, 6}, "step 5, a system prompt"},
	} {
		err := store.CheckPinned(&store.CompactionRecord{Working: c.working}, ws)
		var inv *agentmem.InvalidError
		if !errors.As(err, &inv) || inv.Field != "compaction.working" || !strings.Contains(inv.Reason, c.msg) {
			t.Errorf("working %v: %v, want an error about %s", c.working, err, c.msg)
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

func TestEncodedKind(t *testing.T) {
	for _, s := range codecSteps() {
		b, err := store.EncodeStep(s)
		if err != nil {
			t.Fatal(err)
		}
		// The start of the encoding is enough.
		if k, err := store.EncodedKind(b[:min(len(b), store.KindPrefixBytes)]); err != nil || k != s.Kind() {
			t.Errorf("EncodedKind(prefix of %s) = %q, %v", s.Kind(), k, err)
		}
	}
	// Another field order is decoded whole.
	if k, err := store.EncodedKind([]byte(`{"number":1,"id":"x","type":"task","task":"t"}`)); err != nil || k != agentmem.KindTask {
		t.Errorf("EncodedKind of a step not starting with its type: %q, %v", k, err)
	}
	for _, bad := range []string{`{"type":"nope","number":1}`, `{"number":1,"type":"nope"}`, `{"type":"`, ``} {
		if _, err := store.EncodedKind([]byte(bad)); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("EncodedKind(%q): %v, want ErrInvalid", bad, err)
		}
	}
}
