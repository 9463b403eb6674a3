package langchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/adapters/internal/servertest"
	amlc "github.com/agentmem/agentmem/adapters/langchaingo"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/client/remote"
	"github.com/agentmem/agentmem/store"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
)

// newHistory returns the history of session id on a new server.
func newHistory(t *testing.T, id string, opts ...amlc.Option) (*amlc.ChatMessageHistory, *servertest.Server) {
	t.Helper()
	srv := servertest.New(t)
	h, err := amlc.NewChatMessageHistory(srv.Client, id, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h, srv
}

func toolCall(id, typ, name, args string) llms.ToolCall {
	return llms.ToolCall{ID: id, Type: typ, FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}
}

// everyType is a conversation with a message of every langchaingo type,
// with every field each type has.
func everyType() []llms.ChatMessage {
	return []llms.ChatMessage{
		llms.SystemChatMessage{Content: "You are a weather assistant."},
		llms.HumanChatMessage{Content: "Weather in Paris and Rome?"},
		llms.AIChatMessage{Content: "Let me look.", ReasoningContent: "Two cities: two calls.", ToolCalls: []llms.ToolCall{
			toolCall("call_1", "function", "weather", `{"city":"Paris"}`),
			toolCall("call_2", "function", "weather", `{"city":"Rome"}`),
		}},
		llms.ToolChatMessage{ID: "call_1", Content: "Paris: 18C, cloudy"},
		llms.ToolChatMessage{ID: "call_2", Content: "Rome: 24C, sunny"},
		llms.AIChatMessage{Content: "Paris is 18C and cloudy; Rome 24C and sunny."},
		llms.GenericChatMessage{Content: "Be shorter.", Role: "critic", Name: "style-bot"},
		llms.AIChatMessage{FunctionCall: &llms.FunctionCall{Name: "forecast", Arguments: `{"days":3}`}},
		llms.FunctionChatMessage{Name: "forecast", Content: "sun, sun, rain"},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{toolCall("call_3", "", "clock", `{}`)}},
		llms.ToolChatMessage{ID: "call_3", Content: "12:00"},
		llms.HumanChatMessage{},
		llms.AIChatMessage{Content: "Noon."},
	}
}

// TestEveryTypeRoundTrips adds a message of every type one at a time and
// reads back exactly what langchaingo's own in-memory history keeps, from
// the history and from another client of the server (another process).
func TestEveryTypeRoundTrips(t *testing.T) {
	ctx := context.Background()
	h, srv := newHistory(t, "every-type")
	mem := memory.NewChatMessageHistory()
	for i, m := range everyType() {
		if err := h.AddMessage(ctx, m); err != nil {
			t.Fatalf("AddMessage(%d, %#v): %v", i, m, err)
		}
		if err := mem.AddMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := mem.Messages(ctx)
	got, err := h.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertMessages(t, got, want)

	c2, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	h2, err := amlc.NewChatMessageHistory(c2, "every-type")
	if err != nil {
		t.Fatal(err)
	}
	got2, err := h2.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertMessages(t, got2, want)

	// Pointers to messages are stored as the messages they point to.
	if err := h.AddMessage(ctx, &llms.HumanChatMessage{Content: "by pointer"}); err != nil {
		t.Fatal(err)
	}
	got, _ = h.Messages(ctx)
	if last := got[len(got)-1]; last != (llms.HumanChatMessage{Content: "by pointer"}) {
		t.Errorf("a message added by pointer reads back as %#v", last)
	}
}

// TestSessionIsAgentmemShaped checks that the messages become the
// session's steps, so that the server's context has the conversation as
// a model should see it: reasoning content left out, the tool calls with
// their results.
func TestSessionIsAgentmemShaped(t *testing.T) {
	ctx := context.Background()
	h, srv := newHistory(t, "shaped")
	for _, m := range everyType()[:6] {
		if err := h.AddMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := remote.New(srv.Client).Read(ctx, store.ReadRequest{SessionID: "shaped", WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []agentmem.StepKind
	for _, s := range ws.Steps {
		kinds = append(kinds, s.Kind())
	}
	wantKinds := []agentmem.StepKind{agentmem.KindSystemPrompt, agentmem.KindTask, agentmem.KindAction, agentmem.KindAction}
	if !reflect.DeepEqual(kinds, wantKinds) {
		t.Fatalf("steps %v, want %v", kinds, wantKinds)
	}
	if a := ws.Steps[2].(*agentmem.ActionStep); len(a.Results) != 2 || a.Pending() {
		t.Errorf("the action holds results %+v", a.Results)
	}
	resp, err := srv.Client.Context(ctx, "shaped", client.ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := client.OpenAIMessages(resp)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if want := []string{"system", "user", "assistant", "tool", "tool", "assistant"}; !reflect.DeepEqual(roles, want) {
		t.Errorf("context roles %v, want %v", roles, want)
	}
	raw, _ := json.Marshal(msgs)
	if strings.Contains(string(raw), "Two cities") {
		t.Errorf("the context holds the reasoning content: %s", raw)
	}
}

// TestToolResults: results come back after the AI message that made the
// calls, in call order, whenever they were added; a call without a
// result reads back as added and stays out of the server's context.
func TestToolResults(t *testing.T) {
	ctx := context.Background()
	h, srv := newHistory(t, "tools")
	add := func(m llms.ChatMessage) {
		t.Helper()
		if err := h.AddMessage(ctx, m); err != nil {
			t.Fatalf("AddMessage(%#v): %v", m, err)
		}
	}
	ai := llms.AIChatMessage{ToolCalls: []llms.ToolCall{toolCall("a", "function", "f", "{}"), toolCall("b", "function", "g", "{}")}}
	add(llms.HumanChatMessage{Content: "go"})
	add(ai)
	add(llms.ToolChatMessage{ID: "b", Content: "B"})
	add(llms.HumanChatMessage{Content: "meanwhile"})
	add(llms.ToolChatMessage{ID: "a", Content: "A"})
	// The same result again is a retry: nothing changes.
	add(llms.ToolChatMessage{ID: "a", Content: "A"})
	pending := llms.AIChatMessage{ToolCalls: []llms.ToolCall{toolCall("c", "function", "h", "{}")}}
	add(pending)
	got, err := h.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertMessages(t, got, []llms.ChatMessage{
		llms.HumanChatMessage{Content: "go"},
		ai,
		llms.ToolChatMessage{ID: "a", Content: "A"},
		llms.ToolChatMessage{ID: "b", Content: "B"},
		llms.HumanChatMessage{Content: "meanwhile"},
		pending,
	})
	resp, err := srv.Client.Context(ctx, "tools", client.ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Pending) != 1 {
		t.Errorf("context pending %+v, want the call c", resp.Pending)
	}

	// A different result for an answered call is refused.
	err = h.AddMessage(ctx, llms.ToolChatMessage{ID: "a", Content: "other"})
	if !errors.Is(err, agentmem.ErrConflict) {
		t.Errorf("a contradicting result: %v, want ErrConflict", err)
	}
	// A result for a call no AI message made is refused.
	err = h.AddMessage(ctx, llms.ToolChatMessage{ID: "nobody", Content: "x"})
	if !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("an orphan result: %v, want ErrInvalid", err)
	}
	if got2, _ := h.Messages(ctx); !reflect.DeepEqual(got2, got) {
		t.Errorf("refused results changed the history: %#v", got2)
	}
}

// badType is a message of a type langchaingo does not define.
type badType struct{}

func (badType) GetType() llms.ChatMessageType { return "alien" }
func (badType) GetContent() string            { return "?" }

// customHuman is another implementation of a human message.
type customHuman struct{ text string }

func (c customHuman) GetType() llms.ChatMessageType { return llms.ChatMessageTypeHuman }
func (c customHuman) GetContent() string            { return c.text }

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	srv := servertest.New(t)
	if _, err := amlc.NewChatMessageHistory(srv.Client, "a\nb"); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("a bad session ID: %v, want ErrInvalid", err)
	}
	if _, err := amlc.NewChatMessageHistory(nil, "s"); err == nil {
		t.Error("no client: no error")
	}
	h, err := amlc.NewChatMessageHistory(srv.Client, "bad")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		msg  llms.ChatMessage
		want error
	}{
		"nil":                       {nil, agentmem.ErrInvalid},
		"unknown type":              {badType{}, llms.ErrUnexpectedChatMessageType},
		"tool call, no func":        {llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "x", Type: "function"}}}, agentmem.ErrInvalid},
		"tool call, no id":          {llms.AIChatMessage{ToolCalls: []llms.ToolCall{toolCall("", "function", "f", "{}")}}, agentmem.ErrInvalid},
		"tool result, no id":        {llms.ToolChatMessage{Content: "x"}, agentmem.ErrInvalid},
		"function call, bad UTF-8":  {llms.AIChatMessage{FunctionCall: &llms.FunctionCall{Name: "\x8d"}}, agentmem.ErrInvalid},
		"tool call type, bad UTF-8": {llms.AIChatMessage{ToolCalls: []llms.ToolCall{toolCall("x", "\x8d", "f", "{}")}}, agentmem.ErrInvalid},
		"generic role, bad UTF-8":   {llms.GenericChatMessage{Role: "\x8d"}, agentmem.ErrInvalid},
		"tool result, no session":   {llms.ToolChatMessage{ID: "x", Content: "x"}, agentmem.ErrNotFound},
	} {
		if err := h.AddMessage(ctx, tc.msg); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	// Nothing was stored, not even the session.
	if _, err := remote.New(srv.Client).Get(ctx, "", "bad"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("refused messages created the session: %v", err)
	}
	// Another implementation of a known type is stored by its type.
	if err := h.AddMessage(ctx, customHuman{"hello"}); err != nil {
		t.Fatal(err)
	}
	got, _ := h.Messages(ctx)
	assertMessages(t, got, []llms.ChatMessage{llms.HumanChatMessage{Content: "hello"}})
	// SetMessages refuses a list with a bad message, and keeps the old.
	err = h.SetMessages(ctx, []llms.ChatMessage{llms.HumanChatMessage{Content: "x"}, llms.ToolChatMessage{ID: "nobody", Content: "y"}})
	if !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("SetMessages with an orphan tool result: %v, want ErrInvalid", err)
	}
	if err := h.SetMessages(ctx, []llms.ChatMessage{badType{}}); !errors.Is(err, llms.ErrUnexpectedChatMessageType) {
		t.Errorf("SetMessages with an unknown type: %v", err)
	}
	got, _ = h.Messages(ctx)
	assertMessages(t, got, []llms.ChatMessage{llms.HumanChatMessage{Content: "hello"}})
}

// TestClearAndSetMessages: both change the working set, not the log or
// the session.
func TestClearAndSetMessages(t *testing.T) {
	ctx := context.Background()
	h, srv := newHistory(t, "clear", amlc.WithSession(store.CreateRequest{UserID: "ann", Agent: "weather", Metadata: map[string]string{"app": "demo"}}))
	// Clearing a session that does not exist does not create it.
	if err := h.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.New(srv.Client).Get(ctx, "", "clear"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Clear created the session: %v", err)
	}
	if got, err := h.Messages(ctx); err != nil || len(got) != 0 || got == nil {
		t.Fatalf("Messages of a missing session: %#v, %v", got, err)
	}
	for _, m := range everyType() {
		if err := h.AddMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := remote.New(srv.Client).Get(ctx, "", "clear")
	if err != nil || sess.UserID != "ann" || sess.Agent != "weather" || sess.Metadata["app"] != "demo" {
		t.Fatalf("the session created: %+v, %v", sess, err)
	}
	// A chat's pinning, unless WithSession gives another.
	if sess.Pinning == nil || *sess.Pinning != agentmem.ChatPinning {
		t.Fatalf("the session created pins %+v, want a chat's", sess.Pinning)
	}
	h3, err := amlc.NewChatMessageHistory(srv.Client, "run", amlc.WithSession(store.CreateRequest{Pinning: &agentmem.DefaultPinning}))
	if err != nil {
		t.Fatal(err)
	}
	if err := h3.AddUserMessage(ctx, "Plan the trip."); err != nil {
		t.Fatal(err)
	}
	if sess, err := remote.New(srv.Client).Get(ctx, "", "run"); err != nil || *sess.Pinning != agentmem.DefaultPinning {
		t.Fatalf("a session created WithSession's pinning: %+v, %v", sess, err)
	}
	if err := h.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Messages(ctx); err != nil || len(got) != 0 {
		t.Fatalf("after Clear: %#v, %v", got, err)
	}
	if err := h.Clear(ctx); err != nil {
		t.Fatalf("Clear of an empty history: %v", err)
	}
	log, err := remote.New(srv.Client).Read(ctx, store.ReadRequest{SessionID: "clear"})
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, e := range log.Entries {
		if e.Step != nil {
			steps++
		}
	}
	if steps != 10 {
		t.Errorf("the log holds %d steps after Clear, want the 10 added", steps)
	}

	// SetMessages replaces the working set.
	set := everyType()[1:6]
	if err := h.SetMessages(ctx, set); err != nil {
		t.Fatal(err)
	}
	got, _ := h.Messages(ctx)
	assertMessages(t, got, set)
	if err := h.SetMessages(ctx, everyType()); err != nil {
		t.Fatal(err)
	}
	got, _ = h.Messages(ctx)
	assertMessages(t, got, everyType())
	if err := h.SetMessages(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Messages(ctx); len(got) != 0 {
		t.Errorf("SetMessages(nil) left %#v", got)
	}

	// SetMessages creates a missing session, with its attributes.
	h2, err := amlc.NewChatMessageHistory(srv.Client, "set-new", amlc.WithSession(store.CreateRequest{UserID: "bob"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.SetMessages(ctx, set); err != nil {
		t.Fatal(err)
	}
	if s, err := remote.New(srv.Client).Get(ctx, "", "set-new"); err != nil || s.UserID != "bob" {
		t.Errorf("SetMessages created %+v, %v", s, err)
	}
	got, _ = h2.Messages(ctx)
	assertMessages(t, got, set)
}

// TestConcurrentSetMessages: writers that replace the working set at once
// each succeed (the loser of a race reads again), and the working set is
// one of theirs, whole.
func TestConcurrentSetMessages(t *testing.T) {
	ctx := context.Background()
	h, srv := newHistory(t, "race")
	const writers = 4
	lists := make([][]llms.ChatMessage, writers)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		lists[w] = []llms.ChatMessage{
			llms.HumanChatMessage{Content: fmt.Sprintf("writer %d", w)},
			llms.AIChatMessage{Content: fmt.Sprintf("reply %d", w)},
		}
		hw, err := amlc.NewChatMessageHistory(srv.Client, "race")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if err := hw.SetMessages(ctx, lists[w]); err != nil {
					errs <- err
					return
				}
				if err := hw.AddMessage(ctx, llms.HumanChatMessage{Content: "extra"}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a writer failed: %v", err)
	}
	got, err := h.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 {
		t.Fatalf("working set %#v", got)
	}
	found := false
	for _, l := range lists {
		found = found || reflect.DeepEqual(got[:2], l)
	}
	if !found {
		t.Errorf("the working set starts with %#v: no writer's list", got[:2])
	}
	for _, m := range got[2:] {
		if m != (llms.HumanChatMessage{Content: "extra"}) {
			t.Errorf("after the list: %#v", m)
		}
	}
}

func assertMessages(t *testing.T, got, want []llms.ChatMessage) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	if len(got) != len(want) {
		t.Errorf("%d messages, want %d", len(got), len(want))
	}
	for i := range max(len(got), len(want)) {
		var g, w llms.ChatMessage
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if !reflect.DeepEqual(g, w) {
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			t.Errorf("message %d: got %T %s, want %T %s", i, g, gj, w, wj)
		}
	}
}

// TestEmptyMessages: messages with nothing in them (an empty tool result,
// empty arguments, no content) round-trip too.
func TestEmptyMessages(t *testing.T) {
	ctx := context.Background()
	h, _ := newHistory(t, "empty")
	msgs := []llms.ChatMessage{
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{toolCall("c", "function", "f", "")}},
		llms.ToolChatMessage{ID: "c"},
		llms.AIChatMessage{},
		llms.SystemChatMessage{},
		llms.GenericChatMessage{},
		llms.FunctionChatMessage{},
	}
	for _, m := range msgs {
		if err := h.AddMessage(ctx, m); err != nil {
			t.Fatalf("AddMessage(%#v): %v", m, err)
		}
	}
	got, err := h.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertMessages(t, got, msgs)
}

// TestStepsOfOtherWriters: steps the history did not write (an agent on
// the HTTP API, say) read back as the chat messages they render as.
func TestStepsOfOtherWriters(t *testing.T) {
	ctx := context.Background()
	h, srv := newHistory(t, "others")
	if _, err := remote.New(srv.Client).Create(ctx, store.CreateRequest{ID: "others"}); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.NewDriver(srv.Client).AppendSteps(ctx, "others", []agentmem.Step{
		&agentmem.SystemPromptStep{Content: "Be brief."},
		&agentmem.TaskStep{Task: "Count the files.", Images: []agentmem.Image{{URL: "https://example.com/a.png"}}},
		&agentmem.ActionStep{Thought: "I will list them.", ToolCalls: []agentmem.ToolCall{{ID: "ls", Name: "shell", Arguments: `{"cmd":"ls"}`}},
			Results: []agentmem.ToolResult{{CallID: "ls", Content: "a b c"}}, Observation: "3 files"},
		&agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleAgentCall, Name: "planner", Content: agentmem.Text("Summarize.")}},
	}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	// Then a message of the history's own.
	if err := h.AddAIMessage(ctx, "Three files."); err != nil {
		t.Fatal(err)
	}
	got, err := h.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertMessages(t, got, []llms.ChatMessage{
		llms.SystemChatMessage{Content: "Be brief."},
		llms.HumanChatMessage{Content: "Count the files."},
		llms.AIChatMessage{Content: "I will list them.", ToolCalls: []llms.ToolCall{toolCall("ls", "function", "shell", `{"cmd":"ls"}`)}},
		llms.ToolChatMessage{ID: "ls", Content: "a b c"},
		llms.HumanChatMessage{Content: "Observation:\n3 files"},
		llms.GenericChatMessage{Role: "agent_call", Name: "planner", Content: "Summarize."},
		llms.AIChatMessage{Content: "Three files."},
	})
}
