package agentmem_test

// Behaviours the seeds' users rely on (issue 13), each tried as the seed
// calls it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
)

// chat builds a conversation through the message-level API: a system
// prompt, then turns of user questions and assistant answers.
func chat(t *testing.T, m *agentmem.Memory, turns int) {
	t.Helper()
	if err := m.AddMessage(bg, agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("be kind")}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= turns; i++ {
		if err := m.AddUser(bg, fmt.Sprintf("question %d", i)); err != nil {
			t.Fatal(err)
		}
		if err := m.AddAssistant(bg, agentmem.Message{Content: agentmem.Text(fmt.Sprintf("answer %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
}

func transcript(msgs []agentmem.Message) string {
	var lines []string
	for _, m := range msgs {
		lines = append(lines, string(m.Role)+": "+m.Text())
	}
	return strings.Join(lines, "\n")
}

// Issue 13 item 1: a summary of a chat sees both sides of each turn.
func TestSummaryInputHasTheAssistantSide(t *testing.T) {
	m := newMem(t)
	chat(t, m, 4)
	// The first user message is pinned; the 7 other turns but the
	// newest 2 are to be summarized.
	got := transcript(m.MessagesToSummarize(2))
	want := "assistant: answer 1\nuser: question 2\nassistant: answer 2\nuser: question 3\nassistant: answer 3"
	if got != want {
		t.Fatalf("MessagesToSummarize:\n%s\nwant:\n%s", got, want)
	}

	// The summarizer is given the same.
	var seen []agentmem.Message
	sum := agentmem.SummarizerFunc(func(_ context.Context, req agentmem.SummaryRequest) (string, error) {
		seen = req.Messages
		return "they talked", nil
	})
	if _, err := m.Summarize(bg, sum, 2); err != nil {
		t.Fatal(err)
	}
	if got := transcript(seen); got != want {
		t.Fatalf("summarizer input:\n%s\nwant:\n%s", got, want)
	}

	// An action that calls tools still leaves its raw output out in
	// summary mode (its calls and results say what it did).
	a := action(1, "file body")
	for _, msg := range a.Messages(agentmem.RenderOptions{SummaryMode: true}) {
		if strings.Contains(msg.Text(), "thinking about") {
			t.Fatalf("summary mode kept a tool-calling action's raw output: %+v", msg)
		}
	}
}

// Issue 13 item 2: AddMessage keeps name and structured_data, and
// MessageByID and Recent return a message's metadata.
func TestAddMessageKeepsNameDataAndMetadata(t *testing.T) {
	m := newMem(t)
	user := agentmem.Message{ID: "m1", Role: agentmem.RoleUser, Content: agentmem.Text("Analyze Q4"), Name: "alice",
		Data: json.RawMessage(`{"quarter":"Q4"}`), Metadata: map[string]string{"channel": "web"}}
	reply := agentmem.Message{ID: "m2", Role: agentmem.RoleAssistant, Content: agentmem.Text("Sales grew 15%."), Name: "analyst",
		Data: json.RawMessage(`{"growth":0.15}`), Metadata: map[string]string{"in_reply_to": "m1"}}
	for _, msg := range []agentmem.Message{user, reply} {
		if err := m.AddMessage(bg, msg); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []agentmem.Message{user, reply} {
		got, err := m.MessageByID(want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != want.Name || string(got.Data) != string(want.Data) || !equalMaps(got.Metadata, want.Metadata) || got.Text() != want.Text() {
			t.Fatalf("MessageByID(%s) = %+v, want %+v", want.ID, got, want)
		}
	}
	recent := m.Recent(2)
	if len(recent) != 2 || recent[1].Metadata["in_reply_to"] != "m1" || recent[0].Name != "alice" || string(recent[1].Data) != `{"growth":0.15}` {
		t.Fatalf("Recent(2) = %+v", recent)
	}
	recent[1].Metadata["in_reply_to"] = "changed"
	if again, _ := m.MessageByID("m2"); again.Metadata["in_reply_to"] != "m1" {
		t.Fatal("Recent's messages share metadata with the memory")
	}
	// The model is shown the structured data, as text (chat APIs have no
	// field for it), and the steps keep both through their JSON.
	c, err := m.Context(bg, agentmem.ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Messages[1].Text(); !strings.Contains(got, `{"growth":0.15}`) || c.Messages[1].Name != "analyst" {
		t.Fatalf("rendered reply: %+v", c.Messages[1])
	}
	for _, s := range m.Steps() {
		data, err := agentmem.MarshalStep(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := agentmem.UnmarshalStep(data)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(back.Messages(agentmem.RenderOptions{})) != fmt.Sprint(s.Messages(agentmem.RenderOptions{})) {
			t.Fatalf("step JSON %s loses something", data)
		}
	}
	bad := agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("x"), Data: json.RawMessage(`{`)}
	if err := m.AddMessage(bg, bad); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("invalid structured_data: %v", err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Issue 13 item 3: SetSummary keeps its text even when no step is older
// than keepRecent, as the seed's set_summary does.
func TestSetSummaryAlwaysKeepsItsText(t *testing.T) {
	m := seeded(t, 2) // system, task, 2 actions
	if _, err := m.SetSummary(bg, "first summary", 6); err != nil {
		t.Fatal(err)
	}
	if got := m.Summary(); got != "first summary" {
		t.Fatalf("Summary() = %q", got)
	}
	kinds := func() string {
		var ks []string
		for _, s := range m.Steps() {
			ks = append(ks, string(s.Kind()))
		}
		return strings.Join(ks, " ")
	}
	if got := kinds(); got != "system_prompt task summary action action" {
		t.Fatalf("working set: %s", got)
	}
	// Set again: the new text replaces the old summary.
	if _, err := m.SetSummary(bg, "second summary", 6); err != nil {
		t.Fatal(err)
	}
	if got := m.Summary(); got != "second summary" || kinds() != "system_prompt task summary action action" {
		t.Fatalf("Summary() = %q, working set %s", got, kinds())
	}
	c, err := m.Context(bg, agentmem.ContextOptions{})
	if err != nil || !strings.Contains(transcript(c.Messages), "second summary") || strings.Contains(transcript(c.Messages), "first summary") {
		t.Fatalf("context: %v\n%s", err, transcript(c.Messages))
	}
	// An empty memory keeps it too.
	empty := newMem(t)
	if _, err := empty.SetSummary(bg, "before anything", 0); err != nil || empty.Summary() != "before anything" {
		t.Fatalf("empty memory: %q, %v", empty.Summary(), err)
	}
}

// Issue 13 item 4: a final answer is the assistant's message once another
// turn follows it, and nothing while it ends the context.
func TestFinalAnswerShownOnceFollowed(t *testing.T) {
	m := newMem(t)
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: "sys"})
	mustAdd(t, m, &agentmem.TaskStep{Task: "what is 6*7?"})
	mustAdd(t, m, &agentmem.FinalAnswerStep{Answer: "42"})
	ctxText := func() (string, *agentmem.Context) {
		c, err := m.Context(bg, agentmem.ContextOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := agentmem.RequestTokens(words{}, c.Messages); c.Tokens != want {
			t.Fatalf("context costs %d, its messages %d", c.Tokens, want)
		}
		return transcript(c.Messages), c
	}
	if got, c := ctxText(); got != "system: sys\nuser: what is 6*7?" || len(c.Steps) != 3 {
		t.Fatalf("context ending with the answer:\n%s\nsteps %v", got, c.Steps)
	}
	if got := transcript(m.Messages(agentmem.RenderOptions{})); got != "system: sys\nuser: what is 6*7?" {
		t.Fatalf("Messages() ending with the answer:\n%s", got)
	}
	mustAdd(t, m, &agentmem.TaskStep{Task: "and times 2?"})
	want := "system: sys\nuser: what is 6*7?\nassistant: 42\nuser: and times 2?"
	if got, _ := ctxText(); got != want {
		t.Fatalf("context after the next turn:\n%s\nwant:\n%s", got, want)
	}
	if got := transcript(m.Messages(agentmem.RenderOptions{})); got != want {
		t.Fatalf("Messages() after the next turn:\n%s", got)
	}
	if m.Tokens() != agentmem.RequestTokens(words{}, m.Messages(agentmem.RenderOptions{})) {
		t.Fatalf("Tokens() %d is not the cost of Messages()", m.Tokens())
	}
	// A pending action after the answer is not shown, so the answer still
	// ends the context.
	p := newMem(t)
	mustAdd(t, p, &agentmem.TaskStep{Task: "q"})
	mustAdd(t, p, &agentmem.FinalAnswerStep{Answer: "a"})
	mustAdd(t, p, &agentmem.ActionStep{ToolCalls: []agentmem.ToolCall{{ID: "c", Name: "f"}}})
	if c, err := p.Context(bg, agentmem.ContextOptions{}); err != nil || transcript(c.Messages) != "user: q" {
		t.Fatalf("answer before a pending action: %v\n%s", err, transcript(c.Messages))
	}
}

// Issue 13 item 5: when the newest step alone is larger than what the
// budget leaves, it is shown truncated rather than dropped.
func TestNewestStepTruncatedRatherThanDropped(t *testing.T) {
	m := newMem(t)
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: "you are helpful"})
	mustAdd(t, m, &agentmem.TaskStep{Task: "summarize the log"})
	for i := range 3 {
		mustAdd(t, m, action(i, "short result"))
	}
	newest := mustAdd(t, m, action(9, strings.Repeat("line of a huge log ", 400)))
	for _, budget := range []int{60, 100, 400} {
		c, err := m.Context(bg, agentmem.ContextOptions{Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		if c.Tokens > budget {
			t.Fatalf("budget %d: context costs %d", budget, c.Tokens)
		}
		if !c.NewestTruncated || !slices.Equal(c.Truncated, []int{newest.Number}) || c.Steps[len(c.Steps)-1] != newest.Number {
			t.Fatalf("budget %d: steps %v, truncated %v, newest truncated %v", budget, c.Steps, c.Truncated, c.NewestTruncated)
		}
		last := c.Messages[len(c.Messages)-1]
		if last.Role != agentmem.RoleTool || !strings.Contains(last.Text(), "line of a huge log") || !strings.Contains(last.Text(), "[truncated") {
			t.Fatalf("budget %d: last message %+v", budget, last)
		}
		// Opting out drops it, as before.
		d, err := m.Context(bg, agentmem.ContextOptions{Budget: budget, DropOversizedNewest: true})
		if err != nil {
			t.Fatal(err)
		}
		if d.NewestTruncated || slices.Contains(d.Steps, newest.Number) || len(d.Truncated) != 0 {
			t.Fatalf("budget %d, DropOversizedNewest: steps %v truncated %v", budget, d.Steps, d.Truncated)
		}
	}
	// A newest step that fits is not reported.
	mustAdd(t, m, action(10, "small"))
	c, err := m.Context(bg, agentmem.ContextOptions{Budget: 100})
	if err != nil || c.NewestTruncated || len(c.Truncated) != 0 {
		t.Fatalf("newest fits: %v, truncated %v", err, c.Truncated)
	}
	// TrimToFit, which changes the working set, drops it.
	big := newMem(t)
	mustAdd(t, big, &agentmem.TaskStep{Task: "t"})
	mustAdd(t, big, action(1, strings.Repeat("x ", 500)))
	comp, err := big.TrimToFit(bg, agentmem.ContextOptions{Budget: 50})
	if err != nil || len(comp.Removed) != 1 {
		t.Fatalf("TrimToFit: %+v, %v", comp, err)
	}
}

// Issue 13 item 6: pinning is a choice.
func TestPinningIsAChoice(t *testing.T) {
	build := func(p *agentmem.Pinning) *agentmem.Memory {
		m := agentmem.New(agentmem.Options{Counter: words{}, Pinning: p})
		chat(t, m, 6)
		return m
	}
	shown := func(m *agentmem.Memory, budget int) string {
		c, err := m.Context(bg, agentmem.ContextOptions{Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		if c.Tokens > budget {
			t.Fatalf("over budget: %d > %d", c.Tokens, budget)
		}
		return transcript(c.Messages)
	}
	// Each message costs 4 + 2 words; 3 for the reply priming: 27 tokens
	// hold four messages.
	cases := []struct {
		name    string
		pinning *agentmem.Pinning
		want    string
	}{
		{"default: system prompt and first question", nil, "system: be kind\nuser: question 1\nuser: question 6\nassistant: answer 6"},
		{"a chat's: the system prompt only, and whole turns", &agentmem.Pinning{SystemPrompts: true}, "system: be kind\nuser: question 6\nassistant: answer 6"},
		{"nothing: preserve_system=False", &agentmem.Pinning{}, "user: question 5\nassistant: answer 5\nuser: question 6\nassistant: answer 6"},
	}
	for _, tc := range cases {
		m := build(tc.pinning)
		if got := shown(m, 27); got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, got, tc.want)
		}
	}
	// The strategies follow the memory's pinning.
	m := build(&agentmem.Pinning{})
	if _, err := m.Prune(bg, agentmem.KeepLastN(2)); err != nil {
		t.Fatal(err)
	}
	if got := transcript(m.Messages(agentmem.RenderOptions{})); got != "user: question 6\nassistant: answer 6" {
		t.Fatalf("KeepLastN(2) pinning nothing:\n%s", got)
	}
	every := build(&agentmem.Pinning{Tasks: true})
	if _, err := every.Prune(bg, agentmem.KeepLastN(0)); err != nil {
		t.Fatal(err)
	}
	if got := every.Len(); got != 6 {
		t.Fatalf("KeepLastN(0) pinning every task kept %d steps:\n%s", got, every.Visualize())
	}
	if (agentmem.Pinning{}).Flags([]agentmem.StepKind{agentmem.KindSystemPrompt, agentmem.KindTask})[0] {
		t.Fatal("the zero Pinning pins a system prompt")
	}
}

// Issue 13 item 11: the seeds' windows, and strategies that reorder.
func TestSeedWindowsAndReorderingStrategies(t *testing.T) {
	m := seeded(t, 5) // steps 0 system, 1 task, 2..6 actions
	nums := func(steps []agentmem.Step) []int {
		var out []int
		for _, s := range steps {
			out = append(out, s.Info().Number)
		}
		return out
	}
	apply := func(s agentmem.Strategy) []int {
		c, err := m.Context(bg, agentmem.ContextOptions{Strategy: s})
		if err != nil {
			t.Fatal(err)
		}
		return c.Steps
	}
	if got := apply(agentmem.Tail(2)); !slices.Equal(got, []int{5, 6}) {
		t.Fatalf("Tail(2) = %v", got)
	}
	mustAdd(t, m, &agentmem.TaskStep{Task: "a follow-up"})
	mustAdd(t, m, action(7, "later"))
	if got := apply(agentmem.KeepLastNAndTasks(1)); !slices.Equal(got, []int{0, 1, 7, 8}) {
		t.Fatalf("KeepLastNAndTasks(1) = %v", got)
	}
	// Seed 000's custom strategy returns the system prompt and tasks
	// first: accepted, and put back in order.
	custom := agentmem.StrategyFunc(func(_ context.Context, steps []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
		var systemTasks, actions []agentmem.Step
		for _, s := range steps {
			switch s.Kind() {
			case agentmem.KindSystemPrompt, agentmem.KindTask:
				systemTasks = append(systemTasks, s)
			case agentmem.KindAction:
				actions = append(actions, s)
			}
		}
		return append(systemTasks, actions[len(actions)-2:]...), nil
	})
	if got := apply(custom); !slices.Equal(got, []int{0, 1, 6, 7, 8}) {
		t.Fatalf("reordering strategy in a context: %v", got)
	}
	if _, err := m.Prune(bg, custom); err != nil {
		t.Fatal(err)
	}
	if got := nums(m.Steps()); !slices.Equal(got, []int{0, 1, 6, 7, 8}) {
		t.Fatalf("reordering strategy pruned to %v", got)
	}
	// A repeated step is refused, saying why.
	twice := agentmem.StrategyFunc(func(_ context.Context, steps []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
		return append(steps, steps[0]), nil
	})
	_, err := m.Prune(bg, twice)
	var se *agentmem.StrategyError
	if !errors.As(err, &se) || se.Step != 0 || !strings.Contains(err.Error(), "repeated") {
		t.Fatalf("repeated step: %v", err)
	}
}

// Issue 13 item 12: Options as the seed's MemoryManager(system_prompt,
// prune_strategy), with its automatic prune past 1,000 steps and its
// default strategy.
func TestOptionsSystemPromptAndDefaultStrategy(t *testing.T) {
	m := agentmem.New(agentmem.Options{Counter: words{}, SystemPrompt: "You are a helpful assistant.", Prune: agentmem.KeepLastN(50)})
	steps := m.Steps()
	if len(steps) != 1 || steps[0].(*agentmem.SystemPromptStep).Content != "You are a helpful assistant." || steps[0].Info().ID == "" || m.NextNumber() != 1 {
		t.Fatalf("New with a system prompt: %+v, next %d", steps, m.NextNumber())
	}
	mustAdd(t, m, &agentmem.TaskStep{Task: "t"})
	for i := range 60 {
		mustAdd(t, m, action(i, "r"))
	}
	if m.Len() != 62 {
		t.Fatalf("pruned before 1,000 steps: %d", m.Len())
	}
	if _, err := m.Prune(bg, nil); err != nil { // the seed's prune()
		t.Fatal(err)
	}
	if m.Len() != 52 {
		t.Fatalf("Prune(nil) with the default strategy left %d steps", m.Len())
	}
	for m.Len() < agentmem.DefaultMaxSteps {
		mustAdd(t, m, action(m.NextNumber(), "r"))
	}
	if m.Len() != agentmem.DefaultMaxSteps {
		t.Fatalf("pruned at %d steps", m.Len())
	}
	mustAdd(t, m, action(m.NextNumber(), "r")) // past 1,000: prune
	if m.Len() != 52 {
		t.Fatalf("past %d steps the working set has %d steps", agentmem.DefaultMaxSteps, m.Len())
	}
	// Without Options.Prune the default strategy is KeepRecent(50), in
	// whole turns, applied past 1,000 steps: a chat keeps its newest 25
	// turns of a question and an answer, each with its question.
	chat := agentmem.New(agentmem.Options{Counter: words{}, Pinning: &agentmem.ChatPinning})
	for i := 0; chat.NextNumber() <= agentmem.DefaultMaxSteps; i++ {
		if err := chat.AddUser(bg, fmt.Sprintf("question %d", i)); err != nil {
			t.Fatal(err)
		}
		if err := chat.AddAssistant(bg, agentmem.Message{Content: agentmem.Text(fmt.Sprintf("answer %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	kept := chat.Steps()
	if len(kept) < agentmem.DefaultKeepSteps || len(kept) > agentmem.DefaultKeepSteps+2 || kept[0].Kind() != agentmem.KindTask || kept[len(kept)-1].Info().Number != chat.NextNumber()-1 {
		t.Fatalf("the default prune kept %d steps, from %s", len(kept), kept[0].Kind())
	}
	if _, err := newMem(t).Prune(bg, nil); err != nil {
		t.Fatalf("Prune(nil) with the default strategy: %v", err)
	}
	// A Policy without limits keeps the default strategy but turns the
	// automatic prune off.
	manual := agentmem.New(agentmem.Options{Counter: words{}, Prune: agentmem.KeepLastN(1), Policy: &agentmem.Policy{}})
	for i := range agentmem.DefaultMaxSteps + 5 {
		mustAdd(t, manual, action(i, "r"))
	}
	if manual.Len() != agentmem.DefaultMaxSteps+5 {
		t.Fatalf("an empty Policy pruned: %d", manual.Len())
	}
}
