package agentmem_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
)

func toolMsg(callID, content string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleTool, ToolCallID: callID, Content: agentmem.Text(content)}
}

// pendingAB is a stored action with calls a and b whose result for a has
// arrived.
func pendingAB() *agentmem.ActionStep {
	return &agentmem.ActionStep{
		StepInfo:  agentmem.StepInfo{Number: 7, ID: "act"},
		ToolCalls: []agentmem.ToolCall{call("a", "f"), call("b", "g")},
		Results:   []agentmem.ToolResult{{CallID: "a", Content: "result a"}},
	}
}

func TestPendingIsDefinedByUnansweredCalls(t *testing.T) {
	p := pendingAB()
	if !p.Pending() || !agentmem.IsPending(p) || !slices.Equal(p.Unanswered(), []string{"b"}) {
		t.Fatalf("pending %v unanswered %v", p.Pending(), p.Unanswered())
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("a pending action must be a valid step: %v", err)
	}
	p.Results = append(p.Results, agentmem.ToolResult{CallID: "b", Content: "result b"})
	if p.Pending() || agentmem.IsPending(p) || p.Unanswered() != nil {
		t.Fatal("an action whose calls all have results is pending")
	}
	if agentmem.IsPending(&agentmem.TaskStep{Task: "x"}) || agentmem.IsPending(action(1, "o")) {
		t.Fatal("a task or a complete action is pending")
	}
}

func TestFoldMessagesCompletesOpenActionsItemByItem(t *testing.T) {
	open := []*agentmem.ActionStep{pendingAB()}
	before := agentmem.CloneStep(open[0])
	msgs := []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("meanwhile")},
		toolMsg("b", "result b"),
	}
	msgsBefore := make([]agentmem.Message, len(msgs))
	for i, m := range msgs {
		msgsBefore[i] = m.Clone()
	}
	n := 0
	f, err := agentmem.FoldMessages(open, msgs, agentmem.FoldOptions{KeepPending: true, NewID: func() string { n++; return "k/" + string(rune('0'+n-1)) }})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(agentmem.Step(open[0]), before) || !reflect.DeepEqual(msgs, msgsBefore) {
		t.Fatal("FoldMessages changed its arguments")
	}
	if len(f.Steps) != 1 || f.Steps[0].Kind() != agentmem.KindTask || f.Steps[0].Info().ID != "k/0" {
		t.Fatalf("steps = %+v", f.Steps)
	}
	if len(f.Updated) != 1 {
		t.Fatalf("updated = %+v", f.Updated)
	}
	u := f.Updated[0]
	if u.Pending() || u.Number != 7 || u.ID != "act" || len(u.Results) != 2 || u.Results[1].Content != "result b" {
		t.Fatalf("updated copy = %+v", u)
	}
	// The updated copy shares nothing with the original.
	u.Results[0].Content = "changed"
	if open[0].Results[0].Content != "result a" {
		t.Fatal("the updated copy shares its results with the open action")
	}
}

func TestFoldMessagesNewPendingStep(t *testing.T) {
	msgs := []agentmem.Message{
		{Role: agentmem.RoleAssistant, Content: agentmem.Text("two calls"), ToolCalls: []agentmem.ToolCall{call("a", "f"), call("b", "g")}},
		toolMsg("b", "rb"),
	}
	f, err := agentmem.FoldMessages(nil, msgs, agentmem.FoldOptions{KeepPending: true})
	if err != nil {
		t.Fatal(err)
	}
	a, ok := f.Steps[0].(*agentmem.ActionStep)
	if len(f.Steps) != 1 || !ok || !a.Pending() || !slices.Equal(a.Unanswered(), []string{"a"}) || len(f.Updated) != 0 {
		t.Fatalf("steps %+v updated %+v", f.Steps, f.Updated)
	}
	// A message after it leaves it pending with KeepPending, and answers
	// it with MissingResult without.
	msgs = append(msgs, agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("next")})
	f, err = agentmem.FoldMessages(nil, msgs, agentmem.FoldOptions{KeepPending: true})
	if err != nil || len(f.Steps) != 2 || !agentmem.IsPending(f.Steps[0]) {
		t.Fatalf("keep pending: %+v, %v", f.Steps, err)
	}
	f, err = agentmem.FoldMessages(nil, msgs, agentmem.FoldOptions{})
	if err != nil || len(f.Steps) != 2 || agentmem.IsPending(f.Steps[0]) {
		t.Fatalf("without keep pending: %+v, %v", f.Steps, err)
	}
	if r := f.Steps[0].(*agentmem.ActionStep).Results; r[0].CallID != "a" || r[0].Content != agentmem.MissingResult || !r[0].IsError || r[1].Content != "rb" {
		t.Fatalf("results = %+v", r)
	}
	// Flush answers what is left at the end, of the new steps and the
	// open actions.
	f, err = agentmem.FoldMessages([]*agentmem.ActionStep{pendingAB()}, msgs[:1], agentmem.FoldOptions{KeepPending: true, Flush: true})
	if err != nil || len(f.Steps) != 1 || len(f.Updated) != 1 || agentmem.IsPending(f.Steps[0]) || f.Updated[0].Pending() {
		t.Fatalf("flush: %+v %+v, %v", f.Steps, f.Updated, err)
	}
	if r := f.Updated[0].Results; r[1].CallID != "b" || r[1].Content != agentmem.MissingResult {
		t.Fatalf("flushed open action: %+v", r)
	}
}

func TestFoldMessagesRetriesConflictsAndUnknownCalls(t *testing.T) {
	open := []*agentmem.ActionStep{pendingAB()}
	// The same result again is a retry: nothing changes.
	f, err := agentmem.FoldMessages(open, []agentmem.Message{toolMsg("a", "result a")}, agentmem.FoldOptions{KeepPending: true})
	if err != nil || len(f.Steps) != 0 || len(f.Updated) != 0 || !slices.Equal(f.Repeated, []int{0}) {
		t.Fatalf("retry: %+v, %v", f, err)
	}
	// An error flag that differs makes it another result.
	isErr := toolMsg("a", "result a")
	isErr.Metadata = map[string]string{agentmem.MetaIsError: "true"}
	for _, m := range []agentmem.Message{toolMsg("a", "other"), isErr} {
		_, err = agentmem.FoldMessages(open, []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text("u")}, m}, agentmem.FoldOptions{KeepPending: true})
		var ce *agentmem.ResultConflictError
		if !errors.As(err, &ce) || !errors.Is(err, agentmem.ErrConflict) || ce.Field != "messages[1]" || ce.CallID != "a" {
			t.Fatalf("another result for an answered call: %v", err)
		}
	}
	// A call nobody made.
	_, err = agentmem.FoldMessages(open, []agentmem.Message{toolMsg("b", "rb"), toolMsg("zz", "x")}, agentmem.FoldOptions{KeepPending: true})
	var ie *agentmem.InvalidError
	if !errors.As(err, &ie) || ie.Field != "messages[1].tool_call_id" || !strings.Contains(ie.Reason, `"zz"`) {
		t.Fatalf("unknown call: %v", err)
	}
	// An invalid message is named.
	_, err = agentmem.FoldMessages(nil, []agentmem.Message{{Role: "wizard"}}, agentmem.FoldOptions{})
	if !errors.As(err, &ie) || !strings.HasPrefix(ie.Field, "messages[0]") {
		t.Fatalf("invalid message: %v", err)
	}
	// A result answers the newest action with the call unanswered: here
	// the new one, not the open one that already has it.
	f, err = agentmem.FoldMessages(open, []agentmem.Message{
		{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{call("a", "f")}},
		toolMsg("a", "again"),
	}, agentmem.FoldOptions{KeepPending: true})
	if err != nil || len(f.Updated) != 0 || len(f.Steps) != 1 || agentmem.IsPending(f.Steps[0]) {
		t.Fatalf("newest action: %+v, %v", f, err)
	}
}

func TestAddMessageRetriedToolResult(t *testing.T) {
	m := newMem(t)
	_ = m.AddAssistant(bg, agentmem.Message{ToolCalls: []agentmem.ToolCall{call("a", "f"), call("b", "g")}})
	if err := m.AddToolResult(bg, "a", "ra", false); err != nil {
		t.Fatal(err)
	}
	if err := m.AddToolResult(bg, "a", "ra", false); err != nil {
		t.Fatalf("the same result again: %v", err)
	}
	err := m.AddToolResult(bg, "a", "other", false)
	var ce *agentmem.ResultConflictError
	if !errors.As(err, &ce) || ce.Field != "" || ce.CallID != "a" {
		t.Fatalf("another result: %v", err)
	}
	if p := m.Pending(); p == nil || len(p.Results) != 1 || p.Results[0].Content != "ra" || m.Len() != 1 {
		t.Fatalf("pending %+v, len %d", p, m.Len())
	}
}

// pendingMemory holds a system prompt, a task, a big action, a pending
// action, another big action and a user message, as a store's working
// set would (a pending action in the working set itself).
func pendingMemory(t *testing.T) *agentmem.Memory {
	t.Helper()
	m := newMem(t)
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: "sys"})
	mustAdd(t, m, &agentmem.TaskStep{Task: "task"})
	mustAdd(t, m, action(1, strings.Repeat("word ", 50)))
	mustAdd(t, m, pendingAB())
	mustAdd(t, m, action(2, strings.Repeat("word ", 50)))
	mustAdd(t, m, &agentmem.TaskStep{Task: "and then"})
	return m
}

func TestContextLeavesPendingActionsOut(t *testing.T) {
	m := pendingMemory(t)
	check := func(c *agentmem.Context) {
		t.Helper()
		for _, n := range c.Steps {
			if n == 3 {
				t.Fatalf("the pending step was shown: %v", c.Steps)
			}
		}
		for _, msg := range c.Messages {
			for _, tc := range msg.ToolCalls {
				if tc.ID == "a" || tc.ID == "b" {
					t.Fatalf("a pending call was rendered: %+v", msg)
				}
			}
			if msg.ToolCallID == "a" {
				t.Fatalf("a pending action's result was rendered: %+v", msg)
			}
		}
		if !reflect.DeepEqual(c.Pending, []agentmem.PendingAction{{Step: 3, ToolCallIDs: []string{"b"}}}) {
			t.Fatalf("pending = %+v", c.Pending)
		}
	}
	c, err := m.Context(bg, agentmem.ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(c)
	if !slices.Equal(c.Steps, []int{0, 1, 2, 4, 5}) || c.DroppedSteps != 0 || len(c.Dropped) != 0 {
		t.Fatalf("unbudgeted: steps %v dropped %v", c.Steps, c.Dropped)
	}
	// A budget that keeps only the newest message (each big action costs over 50): the pending action
	// between the two big actions splits the dropped steps into two runs
	// and is not one of them.
	full := c.Tokens
	c, err = m.Context(bg, agentmem.ContextOptions{Budget: full - 100})
	if err != nil {
		t.Fatal(err)
	}
	check(c)
	want := []agentmem.DroppedRun{{First: 2, Last: 2, Count: 1}, {First: 4, Last: 4, Count: 1}}
	if !slices.Equal(c.Steps, []int{0, 1, 5}) || !reflect.DeepEqual(c.Dropped, want) || c.DroppedSteps != 2 {
		t.Fatalf("budgeted: steps %v dropped %+v (%d)", c.Steps, c.Dropped, c.DroppedSteps)
	}
	// With a strategy, on a restored copy, and in the other renderings.
	c, err = m.Context(bg, agentmem.ContextOptions{Strategy: keepLast(10)})
	if err != nil {
		t.Fatal(err)
	}
	check(c)
	r := agentmem.New(agentmem.Options{Counter: words{}})
	if err := r.Restore(m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if c, err = r.Context(bg, agentmem.ContextOptions{}); err != nil {
		t.Fatal(err)
	}
	check(c)
	for _, msg := range append(m.Messages(agentmem.RenderOptions{}), m.Recent(100)...) {
		if len(msg.ToolCalls) > 0 && msg.ToolCalls[0].ID == "a" {
			t.Fatal("Messages or Recent rendered the pending action")
		}
	}
	if m.Tokens() != full {
		t.Fatalf("Tokens = %d, the context costs %d", m.Tokens(), full)
	}
	// TrimToFit keeps it: it costs nothing until it is complete.
	comp, err := m.TrimToFit(bg, agentmem.ContextOptions{Budget: full - 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Step(3); !ok || len(comp.Removed) != 2 {
		t.Fatalf("TrimToFit removed %d steps; pending step kept: %v", len(comp.Removed), ok)
	}
}

func TestPopMessageOfEachKind(t *testing.T) {
	withResults := pendingAB()
	withResults.Results = append(withResults.Results, agentmem.ToolResult{CallID: "b", Content: "result b", IsError: true})
	cases := []struct {
		name     string
		step     agentmem.Step
		role     agentmem.Role
		text     string
		restLeft int // results left in the rest; -1: the step goes whole
	}{
		{"last tool result", withResults, agentmem.RoleTool, "result b", 1},
		{"the only result", pendingAB(), agentmem.RoleTool, "result a", 0},
		{"assistant without results", &agentmem.ActionStep{ModelOutput: "calling", ToolCalls: []agentmem.ToolCall{call("a", "f")}, Observation: "stdout"}, agentmem.RoleAssistant, "calling", -1},
		{"plain assistant", &agentmem.ActionStep{ModelOutput: "hello"}, agentmem.RoleAssistant, "hello", -1},
		{"system prompt", &agentmem.SystemPromptStep{Content: "sys"}, agentmem.RoleSystem, "sys", -1},
		{"task", &agentmem.TaskStep{Task: "do it"}, agentmem.RoleUser, "do it", -1},
		{"planning", &agentmem.PlanningStep{Plan: "1. look"}, agentmem.RoleAssistant, "1. look", -1},
		{"scratchpad", &agentmem.ScratchpadStep{Content: "note"}, agentmem.RoleAssistant, "note", -1},
		{"final answer", &agentmem.FinalAnswerStep{Answer: "42"}, agentmem.RoleAssistant, "42", -1},
		{"summary", &agentmem.SummaryStep{Summary: "before", Covers: []agentmem.Range{{From: 1, To: 2}}}, agentmem.RoleUser, "Summary of 2 earlier steps (1–2):\nbefore", -1},
		{"agent response", &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleAgentResponse, Content: agentmem.Text("done")}}, agentmem.RoleAgentResponse, "done", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := agentmem.MarshalStep(tc.step)
			msg, rest := agentmem.PopMessage(tc.step)
			if msg.Role != tc.role || msg.Text() != tc.text {
				t.Fatalf("popped %s %q, want %s %q", msg.Role, msg.Text(), tc.role, tc.text)
			}
			if after, _ := agentmem.MarshalStep(tc.step); string(after) != string(before) {
				t.Fatal("PopMessage changed the step")
			}
			if tc.restLeft < 0 {
				if rest != nil {
					t.Fatalf("rest = %+v, want the whole step popped", rest)
				}
				return
			}
			a, ok := rest.(*agentmem.ActionStep)
			if !ok || len(a.Results) != tc.restLeft || !a.Pending() || a.Number != 7 || a.ID != "act" {
				t.Fatalf("rest = %+v", rest)
			}
		})
	}
	msg, _ := agentmem.PopMessage(withResults)
	if msg.ToolCallID != "b" || msg.Metadata[agentmem.MetaIsError] != "true" {
		t.Fatalf("the popped tool message = %+v", msg)
	}
	// A message comes back with the name, data and metadata it was added
	// with (issue 13 item 2).
	steps, err := agentmem.StepsFromMessages([]agentmem.Message{{Role: agentmem.RoleUser, Name: "ann", Content: agentmem.Text("hi"),
		Data: json.RawMessage(`{"a":1}`), Metadata: map[string]string{"in_reply_to": "m0"}}})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ = agentmem.PopMessage(steps[0])
	if msg.Name != "ann" || string(msg.Data) != `{"a":1}` || msg.Metadata["in_reply_to"] != "m0" {
		t.Fatalf("popped user message = %+v", msg)
	}
}

// TestResultMetadata: a tool message's metadata (but its error flag)
// stays with its result through a fold, the step's JSON, a clone and a
// pop, which gives it back with the message.
func TestResultMetadata(t *testing.T) {
	call := agentmem.Message{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: "a", Name: "f"}, {ID: "b", Name: "g"}}}
	res := agentmem.Message{Role: agentmem.RoleTool, ToolCallID: "a", Content: agentmem.Text("ra"),
		Metadata: map[string]string{"origin": `{"x":1}`, agentmem.MetaIsError: "true"}}
	f, err := agentmem.FoldMessages(nil, []agentmem.Message{call, res, {Role: agentmem.RoleTool, ToolCallID: "b", Content: agentmem.Text("rb")}}, agentmem.FoldOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := f.Steps[0].(*agentmem.ActionStep)
	if r := a.Results[0]; !r.IsError || len(r.Metadata) != 1 || r.Metadata["origin"] != `{"x":1}` || a.Results[1].Metadata != nil {
		t.Fatalf("results: %+v", a.Results)
	}
	data, err := agentmem.MarshalStep(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := agentmem.UnmarshalStep(data)
	if err != nil || !reflect.DeepEqual(back, agentmem.Step(a)) {
		t.Fatalf("round trip of %s: %+v, %v", data, back, err)
	}
	c := agentmem.CloneStep(a).(*agentmem.ActionStep)
	c.Results[0].Metadata["origin"] = "changed"
	if a.Results[0].Metadata["origin"] != `{"x":1}` {
		t.Fatal("a clone shares its results' metadata")
	}
	msg, rest, ok := a.PopResult("a")
	if !ok || msg.ToolCallID != "a" || msg.Metadata["origin"] != `{"x":1}` || msg.Metadata[agentmem.MetaIsError] != "true" ||
		len(rest.Results) != 1 || rest.Results[0].CallID != "b" || !rest.Pending() || len(a.Results) != 2 {
		t.Fatalf("PopResult: %+v, %+v, %v", msg, rest, ok)
	}
	if _, _, ok := rest.PopResult("a"); ok {
		t.Fatal("PopResult of a call without a result")
	}
	// A result's metadata must be valid text.
	bad := agentmem.CloneStep(a).(*agentmem.ActionStep)
	bad.Results[0].Metadata = map[string]string{"k": "\xff"}
	if err := bad.Validate(); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("invalid metadata: %v", err)
	}
}

// TestFoldMessagesRefusesACallIDPendingTwice: a call made while a call of
// an earlier message of the same fold with that ID awaits its result
// would leave one of them pending for good (a result answers one), so it
// is refused, naming the call, as Message.Validate refuses the same ID
// twice in one message. An ID made again once its call has its result is
// another call.
func TestFoldMessagesRefusesACallIDPendingTwice(t *testing.T) {
	assistant := func(calls ...agentmem.ToolCall) agentmem.Message {
		return agentmem.Message{Role: agentmem.RoleAssistant, ToolCalls: calls}
	}
	for _, opts := range []agentmem.FoldOptions{{KeepPending: true}, {KeepPending: true, Flush: true}} {
		for _, msgs := range [][]agentmem.Message{
			{assistant(call("c1", "f")), assistant(call("c1", "g"))},
			{assistant(call("c0", "f"), call("c1", "f")), {Role: agentmem.RoleUser, Content: agentmem.Text("and?")}, toolMsg("c0", "r0"), assistant(call("c2", "g"), call("c1", "g"))},
		} {
			last := len(msgs) - 1
			_, err := agentmem.FoldMessages(nil, msgs, opts)
			var ie *agentmem.InvalidError
			if !errors.As(err, &ie) || ie.Field != "messages["+string(rune('0'+last))+"].tool_calls["+string(rune('0'+len(msgs[last].ToolCalls)-1))+"].id" ||
				!strings.Contains(ie.Reason, `"c1" is also the ID of a call of messages[0] that has no result yet`) {
				t.Errorf("%+v: %v", opts, err)
			}
		}
	}
	// Again once answered: two calls, each with its result.
	f, err := agentmem.FoldMessages(nil, []agentmem.Message{assistant(call("c1", "f")), toolMsg("c1", "r1"), assistant(call("c1", "g")), toolMsg("c1", "r2")}, agentmem.FoldOptions{KeepPending: true})
	if err != nil || len(f.Steps) != 2 || agentmem.IsPending(f.Steps[0]) || agentmem.IsPending(f.Steps[1]) {
		t.Fatalf("a call ID used again after its result: %+v, %v", f, err)
	}
	// Without KeepPending, the next message answers the call first.
	if _, err := agentmem.FoldMessages(nil, []agentmem.Message{assistant(call("c1", "f")), assistant(call("c1", "g"))}, agentmem.FoldOptions{}); err != nil {
		t.Fatalf("a call ID used again after its call was answered as missing: %v", err)
	}
}
