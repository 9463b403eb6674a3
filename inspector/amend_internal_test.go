package inspector

import (
	"testing"
	"time"

	"github.com/agentmem/agentmem"
)

func TestFormatDelay(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                            "+0 ms",
		40 * time.Millisecond:        "+40 ms",
		300 * time.Millisecond:       "+0.3 s",
		1 * time.Second:              "+1 s",
		2540 * time.Millisecond:      "+2.5 s",
		12 * time.Second:             "+12 s",
		125 * time.Second:            "+2 min 5 s",
		3*time.Hour + 20*time.Minute: "+3 h 20 min",
		4*24*time.Hour + 5*time.Hour: "+4 days",
		-time.Second:                 "",
	} {
		if got := formatDelay(d); got != want {
			t.Errorf("formatDelay(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestDescribeAmendment: an amendment says which results arrived, or
// which were taken back (a popped tool result); one of a step the page
// does not show says what the copy is.
func TestDescribeAmendment(t *testing.T) {
	calls := []agentmem.ToolCall{{ID: "a", Name: "run_tests"}, {ID: "b", Name: "lint"}}
	step := func(results ...string) *agentmem.ActionStep {
		s := &agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 8}, ToolCalls: calls}
		for _, id := range results {
			s.Results = append(s.Results, agentmem.ToolResult{CallID: id, Content: "x"})
		}
		return s
	}
	for _, c := range []struct {
		prev, copy *agentmem.ActionStep
		want, off  string
	}{
		{step(), step("a"), "result of run_tests arrived", "#8 amended: 1 of 2 calls answered"},
		{step("a"), step("a", "b"), "result of lint arrived", "results of #8 arrived"},
		{step(), step("b", "a"), "results of run_tests, lint arrived", "results of #8 arrived"},
		{step("a", "b"), step("a"), "result of lint withdrawn", "#8 amended: 1 of 2 calls answered"},
		{step("a"), step("a"), "amended", "#8 amended: 1 of 2 calls answered"},
	} {
		if got := describeAmendment(c.prev, c.copy); got != c.want {
			t.Errorf("from %d to %d results: %q, want %q", len(c.prev.Results), len(c.copy.Results), got, c.want)
		}
		if got := describeOffPage(8, c.copy); got != c.off {
			t.Errorf("off the page, %d results: %q, want %q", len(c.copy.Results), got, c.off)
		}
	}
	one := &agentmem.ActionStep{ToolCalls: calls[:1], Results: []agentmem.ToolResult{{CallID: "a"}}}
	if got := describeOffPage(3, one); got != "result of #3 arrived" {
		t.Errorf("off the page, one call answered: %q", got)
	}
	if got := describeOffPage(3, &agentmem.TaskStep{}); got != "#3 amended" {
		t.Errorf("off the page, a task: %q", got)
	}
}
