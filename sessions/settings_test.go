package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
)

// chat creates a session with req and appends a system prompt and n
// turns of a chat (a question, a long answer) to it.
func chat(t *testing.T, svc *Service, req store.CreateRequest, n int) *store.Session {
	t.Helper()
	ctx := context.Background()
	sess, err := svc.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []agentmem.Message{{Role: agentmem.RoleSystem, Content: agentmem.Text("You are terse.")}}
	for i := range n {
		msgs = append(msgs,
			agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(fmt.Sprintf("Q%d: what is the weather in city %d?", i, i))},
			agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text(fmt.Sprintf("A%d: ", i) + strings.Repeat("mild and dry ", 30))})
	}
	if _, err := svc.AppendMessages(ctx, MessagesRequest{Tenant: req.Tenant, SessionID: sess.ID, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	return sess
}

// shows reports whether a context shows the first question, Q0.
func shows(c *agentmem.Context) bool {
	for _, m := range c.Messages {
		if strings.HasPrefix(m.Text(), "Q0:") {
			return true
		}
	}
	return false
}

// TestSessionPinning: a session's contexts (from the cache, and as of a
// point of its log) and its compactions pin what the session says; a
// session created without a pinning stores the default, which pins the
// first question.
func TestSessionPinning(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, Config{})
	def := chat(t, svc, store.CreateRequest{Tenant: "t", ID: "default"}, 8)
	if def.Pinning == nil || *def.Pinning != agentmem.DefaultPinning {
		t.Fatalf("a session created without a pinning has %+v, want the default stored", def.Pinning)
	}
	sys := chat(t, svc, store.CreateRequest{Tenant: "t", ID: "sys", Pinning: &agentmem.Pinning{SystemPrompts: true}}, 8)
	if got, _ := svc.Get(ctx, "t", "sys"); *got.Pinning != *sys.Pinning || *sys.Pinning != (agentmem.Pinning{SystemPrompts: true}) {
		t.Fatalf("Get: pinning %+v", got.Pinning)
	}
	for id, want := range map[string]bool{"default": true, "sys": false} {
		c, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: id, Budget: 400})
		if err != nil {
			t.Fatal(err)
		}
		if shows(c.Context) != want {
			t.Errorf("%s: the context of budget 400 shows Q0: %v, want %v", id, shows(c.Context), want)
		}
		lc, err := svc.ContextAt(ctx, ContextRequest{Tenant: "t", SessionID: id, Budget: 400}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if shows(lc.Context) != want || lc.Session.ID != id {
			t.Errorf("%s: ContextAt shows Q0: %v, want %v", id, shows(lc.Context), want)
		}
		if _, err := svc.Compact(ctx, CompactRequest{Tenant: "t", SessionID: id, Plan: Plan{Strategy: api.StrategyKeepLastN, N: 2}}); err != nil {
			t.Fatal(err)
		}
		c, err = svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		if shows(c.Context) != want || len(c.Steps) != map[bool]int{true: 4, false: 3}[want] {
			t.Errorf("%s: after keep_last_n 2 the context shows Q0: %v (want %v), %d steps", id, shows(c.Context), want, len(c.Steps))
		}
	}
}

// TestForkSettings: a branch takes its parent's settings unless the fork
// gives its own.
func TestForkSettings(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, Config{})
	auto := &store.AutoCompact{MaxTokens: 8000}
	chat(t, svc, store.CreateRequest{ID: "p", Pinning: &agentmem.ChatPinning, AutoCompact: auto}, 1)
	b, err := svc.Fork(ctx, ForkRequest{SessionID: "p", ID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	want := store.AutoCompact{MaxTokens: 8000, TargetTokens: 4000, KeepRecent: agentmem.DefaultKeepRecent, Summarizer: store.SummarizerExtractive}
	if b.Pinning == nil || *b.Pinning != agentmem.ChatPinning || b.AutoCompact == nil || *b.AutoCompact != want {
		t.Fatalf("a fork without settings: %+v, %+v", b.Pinning, b.AutoCompact)
	}
	own := &agentmem.Pinning{Tasks: true}
	b, err = svc.Fork(ctx, ForkRequest{SessionID: "p", ID: "b2", Pinning: own, AutoCompact: &store.AutoCompact{MaxTokens: 100, TargetTokens: 10}})
	if err != nil {
		t.Fatal(err)
	}
	want = store.AutoCompact{MaxTokens: 100, TargetTokens: 10, KeepRecent: agentmem.DefaultKeepRecent, Summarizer: store.SummarizerExtractive}
	if *b.Pinning != *own || *b.AutoCompact != want {
		t.Fatalf("a fork with its own settings: %+v, %+v", b.Pinning, b.AutoCompact)
	}
	var inv *agentmem.InvalidError
	if _, err := svc.Fork(ctx, ForkRequest{SessionID: "p", ID: "b3", AutoCompact: &store.AutoCompact{MaxTokens: 100, TargetTokens: 100}}); !errors.As(err, &inv) || inv.Field != "auto_compact.target_tokens" {
		t.Fatalf("a fork with bad settings: %v", err)
	}
}

// TestAutoCompactDefaults: a session's automatic compaction is stored
// with its defaults filled in (the LLM summarizer when the service has
// one), and the LLM summarizer is refused by a service without one.
func TestAutoCompactDefaults(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, Config{})
	s, err := svc.Create(ctx, store.CreateRequest{ID: "a", AutoCompact: &store.AutoCompact{MaxTokens: 1001}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.AutoCompact{MaxTokens: 1001, TargetTokens: 500, KeepRecent: agentmem.DefaultKeepRecent, Summarizer: store.SummarizerExtractive}); *s.AutoCompact != want {
		t.Fatalf("stored %+v, want %+v", *s.AutoCompact, want)
	}
	var inv *agentmem.InvalidError
	_, err = svc.Create(ctx, store.CreateRequest{ID: "b", AutoCompact: &store.AutoCompact{MaxTokens: 1000, Summarizer: store.SummarizerLLM}})
	if !errors.As(err, &inv) || inv.Field != "auto_compact.summarizer" {
		t.Fatalf("the LLM summarizer on a service without one: %v", err)
	}
	withLLM, _ := newService(t, Config{Summarizer: agentmem.SummarizerFunc(func(context.Context, agentmem.SummaryRequest) (string, error) { return "", nil })})
	s, err = withLLM.Create(ctx, store.CreateRequest{ID: "c", AutoCompact: &store.AutoCompact{MaxTokens: 1000, KeepRecent: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.AutoCompact{MaxTokens: 1000, TargetTokens: 500, KeepRecent: 2, Summarizer: store.SummarizerLLM}); *s.AutoCompact != want {
		t.Fatalf("stored %+v, want %+v", *s.AutoCompact, want)
	}
}

// TestCacheNeverPrunes: the cached memory of a session mirrors its log,
// however long the working set grows: a memory's automatic pruning (past
// agentmem.DefaultMaxSteps steps with a default strategy) never runs in
// it, through appends seen by the service or read from the log.
func TestCacheNeverPrunes(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, Config{})
	if _, err := svc.Create(ctx, store.CreateRequest{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	n := agentmem.DefaultMaxSteps + 50
	add := func(from, to int) {
		t.Helper()
		var steps []agentmem.Step
		for i := from; i < to; i++ {
			steps = append(steps, &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: fmt.Sprint(i)}, Task: fmt.Sprint("q", i)})
		}
		if _, err := svc.Append(ctx, store.AppendRequest{SessionID: "long", Steps: steps}); err != nil {
			t.Fatal(err)
		}
	}
	add(0, n-10)
	if h, err := svc.History(ctx, HistoryRequest{Tenant: "", SessionID: "long"}); err != nil || len(h.Steps) != n-10 {
		t.Fatalf("a load: %d steps, %v", len(h.Steps), err)
	}
	add(n-10, n) // through the service: added to the cached memory
	h, err := svc.History(ctx, HistoryRequest{Tenant: "", SessionID: "long"})
	if err != nil || len(h.Steps) != n || h.LastSeq != int64(n) {
		t.Fatalf("after appends: %d steps up to %d, %v; want %d", len(h.Steps), h.LastSeq, err, n)
	}
}
