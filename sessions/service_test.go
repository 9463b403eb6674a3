package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// countingStore counts the reads and gets of a store.
type countingStore struct {
	store.Driver
	reads, gets atomic.Int64
	// afterRead, when set, runs after each read, before it returns.
	afterRead func()
}

func (c *countingStore) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	c.reads.Add(1)
	resp, err := c.Driver.Read(ctx, req)
	if c.afterRead != nil {
		c.afterRead()
	}
	return resp, err
}

func (c *countingStore) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	c.gets.Add(1)
	return c.Driver.Get(ctx, tenant, id)
}

// recorder is an Observer that counts events and keeps the last size.
type recorder struct {
	mu       sync.Mutex
	events   map[string]int
	bytes    int64
	sessions int
}

func (r *recorder) CacheEvent(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.events == nil {
		r.events = map[string]int{}
	}
	r.events[e]++
}

func (r *recorder) CacheSize(b int64, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bytes, r.sessions = b, n
}

func (r *recorder) count(e string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[e]
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newService(t *testing.T, cfg Config) (*Service, *countingStore) {
	t.Helper()
	st := &countingStore{Driver: memstore.New(memstore.Options{Clock: func() time.Time { return t0 }})}
	t.Cleanup(func() { st.Close() })
	cfg.Store = store.New(st)
	if cfg.Clock == nil {
		cfg.Clock = func() time.Time { return t0 }
	}
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc, st
}

// session creates a session of a tenant with a system prompt, a task and
// n actions.
func session(t *testing.T, svc *Service, tenant, id string, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := svc.Create(ctx, store.CreateRequest{Tenant: tenant, ID: id, UserID: "u-" + id}); err != nil {
		t.Fatal(err)
	}
	steps := []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{ID: "sys"}, Content: "You are terse."},
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "task"}, Task: "Find the bug in " + id},
	}
	for i := range n {
		steps = append(steps, &agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: fmt.Sprintf("a%d", i)},
			ToolCalls: []agentmem.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: "grep", Arguments: "{}"}},
			Results:   []agentmem.ToolResult{{CallID: fmt.Sprintf("c%d", i), Content: strings.Repeat("line of output ", 20)}}})
	}
	if _, err := svc.Append(ctx, store.AppendRequest{Tenant: tenant, SessionID: id, Steps: steps}); err != nil {
		t.Fatal(err)
	}
}

// TestContextReadOlderThanMemory: a context whose read of the log is
// older than the cached memory (appends through the service landed
// after the read) uses the memory as it is, without reloading it. Many
// clients appending to one session and reading its context make this
// common; it used to reload the session every time.
func TestContextReadOlderThanMemory(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	svc, st := newService(t, Config{})
	svc.Observe(rec)
	session(t, svc, "t", "s", 3) // steps 1-5
	if _, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	task := func(id string) []agentmem.Step {
		return []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: id}, Task: "and then " + id}}
	}
	// Step 6 from another process: the memory does not know of it.
	if _, err := st.Driver.Append(ctx, store.AppendRequest{Tenant: "t", SessionID: "s", Steps: task("elsewhere")}); err != nil {
		t.Fatal(err)
	}
	// While the next context reads the log after 5, another context
	// catches the memory up to 6 and an append through the service adds
	// 7 to it: the read, through 6, is then older than the memory.
	var nested atomic.Bool
	st.afterRead = func() {
		if !nested.CompareAndSwap(false, true) {
			return // the other context's read
		}
		if _, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s"}); err != nil {
			t.Error(err)
		}
		if _, err := svc.Append(ctx, store.AppendRequest{Tenant: "t", SessionID: "s", Steps: task("here")}); err != nil {
			t.Error(err)
		}
	}
	c, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s"})
	st.afterRead = nil
	if err != nil {
		t.Fatal(err)
	}
	if c.LastSeq != 7 || fmt.Sprint(c.Steps) != "[1 2 3 4 5 6 7]" {
		t.Errorf("context through %d of steps %v, want 7 of [1 2 3 4 5 6 7]", c.LastSeq, c.Steps)
	}
	if n := rec.count("reload"); n != 0 {
		t.Errorf("%d reloads of the memory, want none", n)
	}
	if n := rec.count("append"); n != 1 {
		t.Errorf("%d appends applied to the memory, want 1 (7)", n)
	}
}

func TestNewChecksConfig(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("no store: %v", err)
	}
	if _, err := New(Config{Store: memstore.New(memstore.Options{}), MaxContextTokens: -1}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("negative maximum: %v", err)
	}
	svc, _ := newService(t, Config{})
	if st := svc.CacheStats(); st.Max != DefaultCacheBytes || svc.MaxContextTokens() != DefaultMaxContextTokens {
		t.Errorf("defaults: %+v, max context %d", st, svc.MaxContextTokens())
	}
	none, _ := newService(t, Config{CacheBytes: -1})
	if none.CacheStats().Max != 0 {
		t.Errorf("no cache: %+v", none.CacheStats())
	}
}

// TestContextPerTenant: the same ID in two tenants is two sessions with
// two cached memories; a context request never crosses them.
func TestContextPerTenant(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, Config{})
	session(t, svc, "acme", "s", 2)
	session(t, svc, "globex", "s", 5)
	for _, tc := range []struct {
		tenant string
		steps  int
	}{{"acme", 4}, {"globex", 7}, {"acme", 4}} {
		c, err := svc.Context(ctx, ContextRequest{Tenant: tc.tenant, SessionID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Steps) != tc.steps || c.UserID != "u-s" || c.LastSeq != int64(tc.steps) {
			t.Errorf("%s: %d steps, user %q, last %d", tc.tenant, len(c.Steps), c.UserID, c.LastSeq)
		}
	}
	if !svc.Cached("acme", "s") || !svc.Cached("globex", "s") || svc.Cached("", "s") {
		t.Error("the cache does not hold the two sessions apart")
	}
	if _, err := svc.Context(ctx, ContextRequest{Tenant: "", SessionID: "s"}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("the default tenant's s: %v", err)
	}
	if err := svc.Delete(ctx, "acme", "s"); err != nil {
		t.Fatal(err)
	}
	if svc.Cached("acme", "s") || !svc.Cached("globex", "s") {
		t.Error("Delete did not drop exactly the deleted session's memory")
	}
	if err := svc.CheckCache(); err != nil {
		t.Error(err)
	}
}

func TestContextBudget(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, Config{MaxContextTokens: 5000})
	session(t, svc, "", "s", 80)
	for _, b := range []int{-1, 5001} {
		var inv *agentmem.InvalidError
		if _, err := svc.Context(ctx, ContextRequest{SessionID: "s", Budget: b}); !errors.As(err, &inv) || inv.Field != "budget" {
			t.Errorf("budget %d: %v", b, err)
		}
	}
	// No budget: fitted to the maximum.
	c, err := svc.Context(ctx, ContextRequest{SessionID: "s"})
	if err != nil || c.Fit != 5000 || c.Tokens > 5000 || c.DroppedSteps == 0 {
		t.Fatalf("no budget: fit %d, %d tokens, %d dropped, %v", c.Fit, c.Tokens, c.DroppedSteps, err)
	}
	// The reserve comes off the budget.
	c, err = svc.Context(ctx, ContextRequest{SessionID: "s", Budget: 1000, Reserve: 300})
	if err != nil || c.Fit != 700 || c.Tokens > 700 {
		t.Fatalf("reserve: fit %d, %d tokens, %v", c.Fit, c.Tokens, err)
	}
	var be *agentmem.BudgetError
	if _, err := svc.Context(ctx, ContextRequest{SessionID: "s", Budget: 5}); !errors.As(err, &be) {
		t.Errorf("a budget below the pinned steps: %v", err)
	}
	if _, err := svc.Context(ctx, ContextRequest{SessionID: "s", Format: "xml"}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("an unknown format: %v", err)
	}
}

// TestContextCatchesUp: a context reflects every append acknowledged
// before it, made through the service or straight to the store (another
// process); an append is applied to the cached memory, a compaction
// rebuilds it; nothing new costs one Get.
func TestContextCatchesUp(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	svc, st := newService(t, Config{})
	svc.Observe(rec)
	session(t, svc, "t", "s", 3)
	if _, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	reads, gets := st.reads.Load(), st.gets.Load()
	for range 3 {
		if _, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	if r, g := st.reads.Load()-reads, st.gets.Load()-gets; r != 0 || g != 3 {
		t.Errorf("3 cached contexts: %d reads, %d gets", r, g)
	}
	step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "later"}, Task: "and then this"}
	if _, err := st.Driver.Append(ctx, store.AppendRequest{Tenant: "t", SessionID: "s", Steps: []agentmem.Step{step}}); err != nil {
		t.Fatal(err)
	}
	c, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s"})
	if err != nil || c.LastSeq != 6 || len(c.Steps) != 6 {
		t.Fatalf("after an append elsewhere: %+v %v", c, err)
	}
	if rec.count("catchup") != 1 || rec.count("reload") != 0 || rec.count("miss") != 1 {
		t.Errorf("events %v: want one miss and one catch-up", rec.events)
	}
	if _, err := svc.Compact(ctx, CompactRequest{Tenant: "t", SessionID: "s", Plan: Plan{Strategy: api.StrategyKeepLastN, N: 1}}); err != nil {
		t.Fatal(err)
	}
	c, err = svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s"})
	if err != nil || fmt.Sprint(c.Steps) != "[1 2 6]" || rec.count("reload") != 1 {
		t.Fatalf("after a compaction: %v, %d reloads, %v", c.Steps, rec.count("reload"), err)
	}
	stats := svc.CacheStats()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.bytes != stats.Bytes || rec.sessions != 1 {
		t.Errorf("observer told %d bytes in %d sessions; the cache holds %+v", rec.bytes, rec.sessions, stats)
	}
}

// TestCacheLoadsAreLimited checks that session loads wait for a free load
// slot: with every slot taken, a context request that must load its
// session does not read the store, and gives up when its caller does.
func TestCacheLoadsAreLimited(t *testing.T) {
	svc, st := newService(t, Config{})
	session(t, svc, "", "s", 3)
	c := svc.cache
	for range cap(c.loads) {
		c.loads <- struct{}{}
	}
	reads := st.reads.Load()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := svc.Context(ctx, ContextRequest{SessionID: "s"})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("a load with every slot taken: %v, want context.Canceled after the caller left", err)
	}
	if n := st.reads.Load() - reads; n != 0 {
		t.Errorf("a load with every slot taken read the store %d times", n)
	}
	for range cap(c.loads) {
		<-c.loads
	}
	if _, err := svc.Context(context.Background(), ContextRequest{SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if len(c.loads) != 0 || cap(c.loads) < 2 {
		t.Errorf("after a load, %d of %d slots are taken", len(c.loads), cap(c.loads))
	}
}

func TestListOneTenant(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, Config{})
	for i := range 5 {
		for _, tenant := range []string{"", "acme"} {
			if _, err := svc.Create(ctx, store.CreateRequest{Tenant: tenant, ID: fmt.Sprintf("s%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tenant := range []string{"", "acme"} {
		var got []string
		req := store.ListRequest{PageSize: 2, Tenant: tenant}
		for {
			page, err := svc.List(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page.Sessions {
				if s.Tenant != tenant {
					t.Fatalf("%q lists %s/%s", tenant, s.Tenant, s.ID)
				}
				got = append(got, s.ID)
			}
			if req.PageToken = page.NextPageToken; req.PageToken == "" {
				break
			}
		}
		if slices.Sort(got); fmt.Sprint(got) != "[s0 s1 s2 s3 s4]" {
			t.Errorf("tenant %q lists %v", tenant, got)
		}
	}
}

func TestFork(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, Config{})
	session(t, svc, "acme", "p", 2)
	b, err := svc.Fork(ctx, ForkRequest{Tenant: "acme", SessionID: "p", AtSeq: 3, ID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Tenant != "acme" || b.UserID != "u-p" || b.ParentID != "p" || b.ForkSeq != 3 || b.LastSeq != 3 {
		t.Errorf("branch %+v", b)
	}
	var inv *agentmem.InvalidError
	if _, err := svc.Fork(ctx, ForkRequest{Tenant: "acme", SessionID: "p", AtSeq: 9}); !errors.As(err, &inv) || inv.Field != "at_seq" {
		t.Errorf("at_seq past the log: %v", err)
	}
	if _, err := svc.Fork(ctx, ForkRequest{Tenant: "globex", SessionID: "p"}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("another tenant's parent: %v", err)
	}
	// A persistent parent's branch with a TTL is a session one.
	if _, err := svc.Create(ctx, store.CreateRequest{Tenant: "acme", ID: "keep", Retention: store.Persistent}); err != nil {
		t.Fatal(err)
	}
	kb, err := svc.Fork(ctx, ForkRequest{Tenant: "acme", SessionID: "keep", TTL: time.Hour})
	if err != nil || kb.Retention != store.SessionRetention || kb.ExpiresAt.IsZero() {
		t.Errorf("a persistent parent's branch with a TTL: %+v %v", kb, err)
	}
}

// failingSummarizer fails every summary.
type failingSummarizer struct{}

func (failingSummarizer) Summarize(context.Context, agentmem.SummaryRequest) (string, error) {
	return "", errors.New("the model is down")
}

func TestCompact(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, Config{Summarizer: failingSummarizer{}})
	session(t, svc, "", "s", 6)
	res, err := svc.Compact(ctx, CompactRequest{Tenant: "", SessionID: "s", Plan: Plan{Strategy: api.StrategyPruneOldObservations, KeepLastN: 2, MaxLength: 20}})
	if err != nil || len(res.Replaced) != 4 || res.LastSeq != 9 {
		t.Fatalf("prune_old_observations: %+v %v", res, err)
	}
	res, err = svc.Compact(ctx, CompactRequest{Tenant: "", SessionID: "s", Plan: Plan{Strategy: api.StrategySummarize, KeepRecent: 2}})
	if err != nil || len(res.Added) != 1 || res.Added[0].Kind() != agentmem.KindSummary {
		t.Fatalf("extractive summary: %+v %v", res, err)
	}
	var se *SummarizerError
	if _, err := svc.Compact(ctx, CompactRequest{Tenant: "", SessionID: "s", Plan: Plan{Strategy: api.StrategySummarize, Summarizer: api.SummarizerLLM}}); !errors.As(err, &se) || se.Summarizer != api.SummarizerLLM {
		t.Errorf("a failing summarizer: %v", err)
	}
	for _, p := range []Plan{{Strategy: "shuffle"}, {Strategy: api.StrategySummarize, Summarizer: "oracle"}} {
		if _, err := svc.Compact(ctx, CompactRequest{SessionID: "s", Plan: p}); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("%+v: %v", p, err)
		}
	}
	if _, err := svc.Compact(ctx, CompactRequest{Tenant: "other", SessionID: "s", Plan: Plan{Strategy: api.StrategyKeepLastN, N: 1}}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("another tenant's session: %v", err)
	}
	noLLM, _ := newService(t, Config{})
	session(t, noLLM, "", "s", 1)
	if _, err := noLLM.Compact(ctx, CompactRequest{SessionID: "s", Plan: Plan{Strategy: api.StrategySummarize, Summarizer: api.SummarizerLLM}}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("llm without a summarizer: %v", err)
	}
}

// TestContextAtMatchesContext: ContextAt of the present renders what
// Context (from the cache) renders, and ContextAt of a past point what the
// working set was then.
func TestContextAtMatchesContext(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, Config{})
	session(t, svc, "t", "s", 8)
	if _, err := svc.Compact(ctx, CompactRequest{Tenant: "t", SessionID: "s", Plan: Plan{Strategy: api.StrategyKeepLastN, N: 2}}); err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{0, 400, 2000} {
		now, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s", Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		lc, err := svc.ContextAt(ctx, ContextRequest{Tenant: "t", SessionID: "s", Budget: budget}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(lc.Context.Steps) != fmt.Sprint(now.Steps) || lc.Context.Tokens != now.Tokens || lc.Produced != nil {
			t.Errorf("budget %d: ContextAt shows %v (%d tokens), Context %v (%d)", budget, lc.Context.Steps, lc.Context.Tokens, now.Steps, now.Tokens)
		}
	}
	// Before the compaction (entry 11), every step was in.
	lc, err := svc.ContextAt(ctx, ContextRequest{Tenant: "t", SessionID: "s"}, 11)
	if err != nil {
		t.Fatal(err)
	}
	if len(lc.Context.Steps) != 10 || lc.Produced == nil || lc.Produced.Kind != store.CompactionEntry || len(lc.Entries) != 10 {
		t.Errorf("as of the compaction: %v, produced %+v, %d entries", lc.Context.Steps, lc.Produced, len(lc.Entries))
	}
	var be *agentmem.BudgetError
	lc, err = svc.ContextAt(ctx, ContextRequest{Tenant: "t", SessionID: "s", Budget: 3}, 0)
	if !errors.As(err, &be) || lc == nil || lc.Context != nil || len(lc.WorkingSet) == 0 {
		t.Errorf("a budget below the pinned steps: %v, %+v", err, lc)
	}
}

// TestCacheAppliesAmendments: a tool result sent after its call, and a
// pop of it, are amendments in the log; the cached memory applies them in
// place (no reload), and its contexts are those of a memory loaded anew.
func TestCacheAppliesAmendments(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	svc, st := newService(t, Config{})
	svc.Observe(rec)
	session(t, svc, "t", "s", 3)
	msgs := func(ms ...agentmem.Message) {
		t.Helper()
		if _, err := svc.AppendMessages(ctx, MessagesRequest{Tenant: "t", SessionID: "s", Messages: ms}); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(svc *Service) *Context {
		t.Helper()
		c, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s", Budget: 4000})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	same := func(what string) {
		t.Helper()
		fresh, err := New(Config{Store: store.New(st.Driver), Clock: func() time.Time { return t0 }})
		if err != nil {
			t.Fatal(err)
		}
		got, want := ask(svc), ask(fresh)
		if fmt.Sprint(got.Messages) != fmt.Sprint(want.Messages) || got.Tokens != want.Tokens || len(got.Pending) != len(want.Pending) || got.LastSeq != want.LastSeq {
			t.Errorf("%s: the cached context differs from a fresh load:\n%v (%d tokens, %d pending)\n%v (%d, %d)", what, got.Messages, got.Tokens, len(got.Pending), want.Messages, want.Tokens, len(want.Pending))
		}
		if err := svc.CheckCache(); err != nil {
			t.Error(err)
		}
	}
	msgs(agentmem.Message{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: "x1", Name: "read", Arguments: "{}"}, {ID: "x2", Name: "grep", Arguments: "{}"}}})
	if c := ask(svc); len(c.Pending) != 1 {
		t.Fatalf("pending: %+v", c.Pending)
	}
	reloads := rec.count("reload")
	msgs(agentmem.Message{Role: agentmem.RoleTool, ToolCallID: "x1", Content: agentmem.Text("the file's first result")})
	same("one result of two")
	msgs(agentmem.Message{Role: agentmem.RoleTool, ToolCallID: "x2", Content: agentmem.Text("the second result")})
	same("both results")
	if c := ask(svc); len(c.Pending) != 0 || !strings.Contains(fmt.Sprint(c.Messages), "the second result") {
		t.Fatalf("after both results: pending %v, %v", c.Pending, c.Messages)
	}
	if _, err := svc.Pop(ctx, PopRequest{Tenant: "t", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	same("a result popped")
	if rec.count("reload") != reloads {
		t.Errorf("amendments reloaded the memory %d times", rec.count("reload")-reloads)
	}
}

// TestHistoryEnds: the ends of a working set (HistoryRequest.Head and
// Tail) are its first and last steps, with the number of steps between
// them; ends that meet, or none asked for, give the whole working set. A
// step appended elsewhere is caught up with.
func TestHistoryEnds(t *testing.T) {
	ctx := context.Background()
	svc, st := newService(t, Config{})
	session(t, svc, "t", "s", 10) // 12 steps
	whole, err := svc.History(ctx, HistoryRequest{Tenant: "t", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	numbers := func(steps []agentmem.Step) string {
		var out []int
		for _, s := range steps {
			out = append(out, s.Info().Number)
		}
		return fmt.Sprint(out)
	}
	for _, c := range []struct {
		head, tail, omitted int
	}{{2, 3, 7}, {0, 1, 11}, {5, 0, 7}, {6, 6, 0}, {20, 1, 0}, {0, 0, 0}, {-1, -1, 0}} {
		h, err := svc.History(ctx, HistoryRequest{Tenant: "t", SessionID: "s", Head: c.head, Tail: c.tail})
		if err != nil {
			t.Fatal(err)
		}
		want := whole.Steps
		if c.omitted > 0 {
			head, tail := max(c.head, 0), max(c.tail, 0)
			want = append(clipSteps(whole.Steps[:head]), whole.Steps[len(whole.Steps)-tail:]...)
		}
		if h.Omitted != c.omitted || numbers(h.Steps) != numbers(want) || h.Head != len(h.Steps)-max(c.tail, 0) && c.omitted > 0 || h.LastSeq != whole.LastSeq || h.UserID != "u-s" {
			t.Errorf("ends %d, %d: %s (head %d), %d omitted, seq %d; want %s, %d omitted", c.head, c.tail, numbers(h.Steps), h.Head, h.Omitted, h.LastSeq, numbers(want), c.omitted)
		}
	}
	step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "later"}, Task: "and then this"}
	if _, err := st.Driver.Append(ctx, store.AppendRequest{Tenant: "t", SessionID: "s", Steps: []agentmem.Step{step}}); err != nil {
		t.Fatal(err)
	}
	h, err := svc.History(ctx, HistoryRequest{Tenant: "t", SessionID: "s", Head: 1, Tail: 1})
	if err != nil || h.Omitted != 11 || numbers(h.Steps) != "[1 13]" || h.LastSeq != whole.LastSeq+1 {
		t.Fatalf("after an append elsewhere: %s, %d omitted, seq %d, %v", numbers(h.Steps), h.Omitted, h.LastSeq, err)
	}
}

func clipSteps(s []agentmem.Step) []agentmem.Step { return append([]agentmem.Step(nil), s...) }

// TestAppendedMatchesLog appends steps of every kind through the service,
// as a server decodes them from a request, with a cached memory of the
// session: the steps join the cached memory as they are written, and
// the context is then the one the log gives (read after the cache is
// dropped), in every format.
func TestAppendedMatchesLog(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	svc, st := newService(t, Config{})
	svc.Observe(rec)
	session(t, svc, "t", "s", 2)
	if _, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	bodies := []string{
		`{"type":"task","id":"t2","task":"Now check the logs","time":"2026-03-01T14:00:00+02:00","metadata":{"source":"user"}}`,
		`{"type":"planning","id":"p1","plan":"1. grep\n2. read"}`,
		`{"type":"action","id":"a9","thought":"look","model_output":"calling grep","tool_calls":[{"id":"c9","type":"function","function":{"name":"grep","arguments":"{\"q\":\"err\"}"}}],` +
			`"results":[{"call_id":"c9","content":"main.go:12: err"}],"observation":"one match"}`,
		`{"type":"action","id":"a10","error":"the tool timed out"}`,
		`{"type":"message","id":"m1","message":{"role":"user","content":[{"type":"text","text":"and the tests?"}],"name":"ann"}}`,
		`{"type":"scratchpad","id":"n1","content":"remember: main.go"}`,
		`{"type":"final_answer","id":"f1","answer":"Fixed on line 12.","time":"2026-03-01T12:05:00Z"}`,
	}
	for i, b := range bodies {
		s, err := agentmem.UnmarshalStep([]byte(b))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if _, err := svc.Append(ctx, store.AppendRequest{Tenant: "t", SessionID: "s", Steps: []agentmem.Step{s}}); err != nil {
			t.Fatal(err)
		}
	}
	if rec.count("append") != len(bodies) {
		t.Errorf("%d appends reached the cache, want %d", rec.count("append"), len(bodies))
	}
	formats := []string{"openai", "anthropic", "observation"}
	cached := map[string]*Context{}
	reads := st.reads.Load()
	for _, f := range formats {
		c, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s", Format: f})
		if err != nil {
			t.Fatal(err)
		}
		cached[f] = c
	}
	if r := st.reads.Load() - reads; r != 0 {
		t.Errorf("%d reads of the log for contexts of a session appended through the service", r)
	}
	svc.DropCache()
	for _, f := range formats {
		c, err := svc.Context(ctx, ContextRequest{Tenant: "t", SessionID: "s", Format: f})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(cached[f])
		want, _ := json.Marshal(c)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the context of the cached memory\n%s\nis not the log's\n%s", f, got, want)
		}
	}
}

// TestCachedWorkingSetIsTheLogs: what the cache holds after catching up
// with steps and amendments appended by another writer, and after the
// service's own appends, is the working set a read of the log gives,
// step by step as encoded (numbers, IDs and times as the log has them: a
// step the log holds without a time has none in the cache either), with
// the same modified copies, and none of it reloaded the session.
func TestCachedWorkingSetIsTheLogs(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	svc, st := newService(t, Config{})
	svc.Observe(rec)
	session(t, svc, "t", "s", 2)
	key := store.Key{Tenant: "t", ID: "s"}
	same := func(what string) {
		t.Helper()
		got, err := workingSets{svc}.WorkingSet(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		want, err := st.Read(ctx, store.ReadRequest{Tenant: "t", SessionID: "s", WorkingSet: true})
		if err != nil {
			t.Fatal(err)
		}
		encode := func(steps []agentmem.Step) string {
			var b strings.Builder
			for _, s := range steps {
				data, err := store.EncodeStep(s)
				if err != nil {
					t.Fatal(err)
				}
				b.Write(data)
				b.WriteByte('\n')
			}
			return b.String()
		}
		if g, w := encode(got.Steps), encode(want.Steps); g != w || fmt.Sprint(got.Replaced) != fmt.Sprint(want.Replaced) || got.Session.LastSeq != want.Session.LastSeq {
			t.Fatalf("%s: the cache holds\n%s(copies %v, seq %d)\nthe log\n%s(copies %v, seq %d)", what, g, got.Replaced, got.Session.LastSeq, w, want.Replaced, want.Session.LastSeq)
		}
	}
	same("loaded")
	loads := rec.count("miss") + rec.count("reload")
	foreign := func(req store.AppendRequest) *store.AppendResponse {
		t.Helper()
		req.Tenant, req.SessionID = "t", "s"
		resp, err := st.Append(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	call := agentmem.ToolCall{ID: "late", Name: "read", Arguments: "{}"}
	resp := foreign(store.AppendRequest{Steps: []agentmem.Step{
		&agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: "pending"}, ToolCalls: []agentmem.ToolCall{call}},
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "timeless"}, Task: "a step without a time"},
	}})
	same("steps appended elsewhere")
	done := &agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: "pending", Number: int(resp.Seqs[0])}, ToolCalls: []agentmem.ToolCall{call},
		Results: []agentmem.ToolResult{{CallID: "late", Content: "the result"}}}
	foreign(store.AppendRequest{Compaction: &store.CompactionRecord{Amend: true, Replaced: []agentmem.Step{done}}})
	same("an amendment appended elsewhere")
	if _, err := svc.AppendMessages(ctx, MessagesRequest{Tenant: "t", SessionID: "s", Messages: []agentmem.Message{
		{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: "mine", Name: "grep", Arguments: "{}"}}},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AppendMessages(ctx, MessagesRequest{Tenant: "t", SessionID: "s", Messages: []agentmem.Message{
		{Role: agentmem.RoleTool, ToolCallID: "mine", Content: agentmem.Text("my result")},
	}}); err != nil {
		t.Fatal(err)
	}
	same("the service's appends")
	if n := rec.count("miss") + rec.count("reload") - loads; n != 0 {
		t.Fatalf("catching up loaded the session %d times", n)
	}
	if rec.count("append") == 0 || rec.count("catchup") == 0 {
		t.Fatalf("events %v: want appends put as written and a catch-up", rec.events)
	}
}
