package stepgen

import (
	"bytes"
	"testing"

	"github.com/agentmem/agentmem"
)

// The same seed generates the same steps, another seed others, and every
// step is valid step JSON: an action's one call is answered by its result.
func TestGen(t *testing.T) {
	gen := func(seed uint64) [][]byte {
		g := New(seed)
		steps := [][]byte{g.SystemPromptJSON(), g.TaskJSON()}
		for range 50 {
			steps = append(steps, g.ActionJSON(g.CallID()))
		}
		return steps
	}
	a, b, c := gen(1), gen(1), gen(2)
	if !bytes.Equal(bytes.Join(a, nil), bytes.Join(b, nil)) {
		t.Fatal("one seed generated two runs")
	}
	if bytes.Equal(bytes.Join(a, nil), bytes.Join(c, nil)) {
		t.Fatal("two seeds generated one run")
	}
	large := 0
	for i, data := range a {
		s, err := agentmem.UnmarshalStep(data)
		if err != nil {
			t.Fatalf("step %d: %v: %.200s", i, err, data)
		}
		if i < 2 {
			continue
		}
		act, ok := s.(*agentmem.ActionStep)
		if !ok || len(act.ToolCalls) != 1 || len(act.Results) != 1 || act.Results[0].CallID != act.ToolCalls[0].ID {
			t.Fatalf("step %d is not an action with one answered call: %.300s", i, data)
		}
		if n := len(act.Results[0].Content); n < 80 || n > 30_000 {
			t.Errorf("step %d: a result of %d characters", i, n)
		} else if n >= 1500 {
			large++
		}
	}
	if large == 0 {
		t.Error("no result reached 1,500 characters (the median)")
	}
}
