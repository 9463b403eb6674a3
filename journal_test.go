package agentmem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
)

// logJournal is an in-test journal: numbers start at 100 and skip one
// after every compaction (as a store's sequence would for its compaction
// record), and it can be told to fail.
type logJournal struct {
	mu     sync.Mutex
	next   int
	steps  []agentmem.Step
	comps  []agentmem.JournalCompaction
	failOn string
}

func (j *logJournal) Append(_ context.Context, steps []agentmem.Step) ([]int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failOn == "append" {
		return nil, errors.New("disk on fire")
	}
	out := make([]int, len(steps))
	for i, s := range steps {
		out[i] = j.next
		j.next++
		if s.Info().ID == "" || s.Info().Time.IsZero() {
			return nil, fmt.Errorf("step %d reached the journal without ID or time", i)
		}
		j.steps = append(j.steps, agentmem.CloneStep(s))
	}
	return out, nil
}

func (j *logJournal) Compact(_ context.Context, c agentmem.JournalCompaction) ([]int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failOn == "compact" {
		return nil, errors.New("disk on fire")
	}
	out := make([]int, len(c.Added))
	for k := range c.Added {
		out[k] = j.next
		j.next++
	}
	j.next++ // the compaction record's own sequence number
	j.comps = append(j.comps, c)
	return out, nil
}

func TestJournalNumbersSteps(t *testing.T) {
	j := &logJournal{next: 100}
	m := agentmem.New(agentmem.Options{Counter: words{}, Journal: j})
	info := mustAdd(t, m, &agentmem.TaskStep{Task: "t"})
	if info.Number != 100 {
		t.Fatalf("number %d, want the journal's 100", info.Number)
	}
	_ = m.AddAssistant(bg, agentmem.Message{ToolCalls: []agentmem.ToolCall{call("a", "f")}})
	if len(j.steps) != 2 || !agentmem.IsPending(j.steps[1]) {
		t.Fatal("a pending action was not journaled as it came")
	}
	if err := m.AddToolResult(bg, "a", "r", false); err != nil {
		t.Fatal(err)
	}
	// The result completes the action in place: a journal that cannot
	// amend records a compaction that replaces it.
	if len(j.comps) != 1 || fmt.Sprint(j.comps[0].Replaced) != "[1]" || agentmem.IsPending(j.comps[0].Working[1]) {
		t.Fatalf("journal compactions = %+v", j.comps)
	}
	comp, err := m.SetSummary(bg, "sum", 0)
	if err != nil {
		t.Fatal(err)
	}
	c := j.comps[1]
	if len(c.Added) != 1 || c.Working[c.Added[0]].Kind() != agentmem.KindSummary || fmt.Sprint(c.Removed) != "[101]" {
		t.Fatalf("journal compaction = %+v", c)
	}
	if got := comp.Added[0].Info().Number; got != 103 {
		t.Fatalf("summary number %d, want 103 from the journal", got)
	}
	if info := mustAdd(t, m, &agentmem.ScratchpadStep{Content: "n"}); info.Number != 105 {
		t.Fatalf("number after compaction %d, want 105", info.Number)
	}
}

func TestJournalFailureChangesNothing(t *testing.T) {
	j := &logJournal{next: 0}
	m := agentmem.New(agentmem.Options{Counter: words{}, Journal: j})
	mustAdd(t, m, &agentmem.TaskStep{Task: "t"})
	mustAdd(t, m, action(1, "o"))
	before := m.Snapshot()

	j.failOn = "append"
	if _, err := m.Add(bg, action(2, "o")); err == nil {
		t.Fatal("add succeeded with a failing journal")
	}
	if err := m.AddUser(bg, "hello"); err == nil {
		t.Fatal("AddMessage succeeded with a failing journal")
	}
	j.failOn = "compact"
	if _, err := m.SetSummary(bg, "s", 0); err == nil {
		t.Fatal("compaction succeeded with a failing journal")
	}
	if err := m.Clear(bg); err == nil {
		t.Fatal("clear succeeded with a failing journal")
	}
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(m.Snapshot())
	if string(a) != string(b) {
		t.Fatalf("a failed journal write changed the memory:\n%s\n%s", a, b)
	}
}
