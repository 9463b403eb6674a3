package autocompact_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/summarize"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/agentmem/agentmem/views"
	"github.com/agentmem/agentmem/views/autocompact"
)

// t0 is the time of the services' clocks.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// countingSummarizer is the extractive summarizer, counting its calls; it
// can be made to wait at its next call until released.
type countingSummarizer struct {
	calls atomic.Int32
	mu    sync.Mutex
	hold  chan struct{} // closed to let a held call go on
	held  chan struct{} // closed once a call is held
}

func (c *countingSummarizer) Summarize(ctx context.Context, req agentmem.SummaryRequest) (string, error) {
	c.calls.Add(1)
	c.mu.Lock()
	hold, held := c.hold, c.held
	c.mu.Unlock()
	if hold != nil {
		close(held)
		select {
		case <-hold:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	// Bounded by the service's own tokenizer, as the service's extractive
	// summarizer is, so that no summary is asked to be condensed.
	counter, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		return "", err
	}
	return summarize.Extractive{Counter: counter}.Summarize(ctx, req)
}

// feedService returns a service over a memstore, which has a change feed.
func feedService(t *testing.T, cfg sessions.Config) (*sessions.Service, *store.Store) {
	t.Helper()
	st := memstore.New(memstore.Options{Clock: func() time.Time { return t0 }})
	t.Cleanup(func() { st.Close() })
	cfg.Store, cfg.Clock = st, func() time.Time { return t0 }
	svc, err := sessions.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc, st
}

// autoSession creates a chat session with automatic compaction.
func autoSession(t *testing.T, svc *sessions.Service, id string, ac store.AutoCompact) {
	t.Helper()
	pin := agentmem.ChatPinning
	if _, err := svc.Create(context.Background(), store.CreateRequest{ID: id, Pinning: &pin, AutoCompact: &ac}); err != nil {
		t.Fatal(err)
	}
}

// chatTurn appends turn i of a chat: a question, a tool call with a long
// result, an answer.
func chatTurn(t *testing.T, svc *sessions.Service, id string, i int) {
	t.Helper()
	callID := fmt.Sprintf("call_%d", i)
	msgs := []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text(fmt.Sprintf("Q%d: what does file %d say?", i, i))},
		{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: callID, Name: "read_file", Arguments: "{}"}}},
		{Role: agentmem.RoleTool, ToolCallID: callID, Content: agentmem.Text(strings.Repeat(fmt.Sprintf("line of file %d. ", i), 30+i%5*20))},
		{Role: agentmem.RoleAssistant, Content: agentmem.Text(fmt.Sprintf("A%d: it says line %d.", i, i))},
	}
	if _, err := svc.AppendMessages(context.Background(), sessions.MessagesRequest{SessionID: id, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
}

// workingSet reads a session's working set and what it costs.
func workingSet(t *testing.T, svc *sessions.Service, id string) ([]agentmem.Step, int) {
	t.Helper()
	c, err := svc.Context(context.Background(), sessions.ContextRequest{SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := svc.Store().Read(context.Background(), store.ReadRequest{SessionID: id, WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	return ws.Steps, c.Tokens
}

// TestAutoCompaction: a chat of 200 steps appended through the service,
// its compactor following the log: the summarizer runs at most once per
// (trigger − target) tokens of growth, plus one; once the compactor has
// caught up after an append the working set is at most the trigger; and
// every step appended is in the working set or covered by its summary.
func TestAutoCompaction(t *testing.T) {
	sum := &countingSummarizer{}
	svc, _ := feedService(t, sessions.Config{Summarizer: sum})
	c, stop := autocompact.Start(svc, nil, views.Options{})
	defer stop()
	ctx := context.Background()
	ac := store.AutoCompact{MaxTokens: 4000, TargetTokens: 2000, KeepRecent: 4, Summarizer: store.SummarizerLLM}
	autoSession(t, svc, "chat", ac)
	if _, err := svc.AppendMessages(ctx, sessions.MessagesRequest{SessionID: "chat", Messages: []agentmem.Message{{Role: agentmem.RoleSystem, Content: agentmem.Text("You read files.")}}}); err != nil {
		t.Fatal(err)
	}
	growth, prev := 0, 0
	_, prev = workingSet(t, svc, "chat")
	for i := range 50 { // 4 steps a turn
		chatTurn(t, svc, "chat", i)
		_, before := workingSet(t, svc, "chat")
		growth += before - prev
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		var after int
		_, after = workingSet(t, svc, "chat")
		if after > ac.MaxTokens {
			t.Fatalf("turn %d: the working set costs %d tokens once compacted, over the trigger %d", i, after, ac.MaxTokens)
		}
		prev = after
	}
	limit := growth/(ac.MaxTokens-ac.TargetTokens) + 1
	if n := int(sum.calls.Load()); n == 0 || n > limit {
		t.Fatalf("the summarizer ran %d times for %d tokens of growth; at most %d", n, growth, limit)
	}
	steps, _ := workingSet(t, svc, "chat")
	log, err := svc.Read(ctx, store.ReadRequest{SessionID: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	covered := map[int]bool{}
	for _, s := range steps {
		for _, r := range agentmem.CoveredBy(s) {
			for n := r.From; n <= r.To; n++ {
				covered[n] = true
			}
		}
	}
	for _, e := range log.Entries {
		if e.Kind == store.StepEntry && e.Step.Kind() != agentmem.KindSummary && !covered[int(e.Seq)] {
			t.Fatalf("step %d is neither in the working set nor covered by its summary", e.Seq)
		}
	}
	if st := c.Status(); st.Errors != 0 {
		t.Fatalf("compactor errors: %+v", st)
	}
	t.Logf("%d tokens of growth, %d summaries (at most %d)", growth, sum.calls.Load(), limit)
}

// TestAutoCompactionResumes: a compactor stopped while its summarizer
// runs (as a process killed then) writes nothing; the next one to follow
// the log, in another service over the store, compacts the session.
func TestAutoCompactionResumes(t *testing.T) {
	sum := &countingSummarizer{hold: make(chan struct{}), held: make(chan struct{})}
	svc, st := feedService(t, sessions.Config{Summarizer: sum})
	ctx := context.Background()
	ac := store.AutoCompact{MaxTokens: 1500, TargetTokens: 800, Summarizer: store.SummarizerLLM}
	autoSession(t, svc, "chat", ac)
	for i := range 6 {
		chatTurn(t, svc, "chat", i)
	}
	_, before := workingSet(t, svc, "chat")
	if before <= ac.MaxTokens {
		t.Fatalf("the session costs %d tokens: the test needs it over %d", before, ac.MaxTokens)
	}
	_, stop := autocompact.Start(svc, nil, views.Options{})
	<-sum.held // the summarizer is running
	stop()
	if _, now := workingSet(t, svc, "chat"); now != before {
		t.Fatalf("a compaction stopped in its summarizer changed the session: %d -> %d tokens", before, now)
	}
	// Another process's service over the same store.
	sum.mu.Lock()
	sum.hold = nil
	sum.mu.Unlock()
	other, err := sessions.New(sessions.Config{Store: st, Summarizer: sum, Clock: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	c, stop2 := autocompact.Start(other, nil, views.Options{})
	defer stop2()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, now := workingSet(t, other, "chat"); now > ac.MaxTokens {
		t.Fatalf("after the restart the session costs %d tokens, over %d", now, ac.MaxTokens)
	}
}

// TestAutoCompactionSkipsOthers: sessions without automatic compaction
// are never compacted, and a deleted one is passed over.
func TestAutoCompactionSkipsOthers(t *testing.T) {
	sum := &countingSummarizer{}
	svc, _ := feedService(t, sessions.Config{Summarizer: sum})
	ctx := context.Background()
	if _, err := svc.Create(ctx, store.CreateRequest{ID: "plain"}); err != nil {
		t.Fatal(err)
	}
	autoSession(t, svc, "gone", store.AutoCompact{MaxTokens: 500})
	for i := range 6 {
		chatTurn(t, svc, "plain", i)
		chatTurn(t, svc, "gone", i)
	}
	if err := svc.Delete(ctx, "", "gone"); err != nil {
		t.Fatal(err)
	}
	c, stop := autocompact.Start(svc, nil, views.Options{})
	defer stop()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := sum.calls.Load(); n != 0 {
		t.Fatalf("the summarizer ran %d times", n)
	}
	if _, err := svc.Get(ctx, "", "gone"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatal(err)
	}
	if st := c.Status(); st.Errors != 0 || st.LastError != "" {
		t.Fatalf("compactor errors: %+v", st)
	}
}
