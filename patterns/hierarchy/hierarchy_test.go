package hierarchy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/patterns/internal/compose"
	"github.com/agentmem/agentmem/patterns/internal/ptest"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

var start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func counter(t testing.TB) tokenizer.Counter {
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// open returns a hierarchy on in-memory backends with a manual clock.
func open(t *testing.T, opts Options) *Memory {
	t.Helper()
	clock := ptest.NewClock(start, time.Second)
	opts.Memory.Clock = clock.Now
	opts.Memory.Counter = counter(t)
	m, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

func note(text string) agentmem.Step { return &agentmem.ScratchpadStep{Content: text} }

func mustAdd(t *testing.T, m *Memory, s agentmem.Step, importance float64) agentmem.StepInfo {
	t.Helper()
	info, err := m.Add(context.Background(), s, importance)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func ids(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func unpinned(m *Memory) []agentmem.Step {
	steps := m.Working().Steps()
	var out []agentmem.Step
	for i, p := range agentmem.PinnedFlags(steps) {
		if !p {
			out = append(out, steps[i])
		}
	}
	return out
}

func TestCoreThreshold(t *testing.T) {
	m := open(t, Options{CoreThreshold: 0.6})
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: "You are careful."}, 1) // pinned: never a core entry
	low := mustAdd(t, m, note("the build uses make"), 0.59)
	at := mustAdd(t, m, note("the user is allergic to peanuts"), 0.6)
	high := mustAdd(t, m, note("never push to main"), 0.9)

	got := m.Items(Core)
	if want := []string{high.ID, at.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("core = %v, want %v (most important first)", ids(got), want)
	}
	if slices.Contains(ids(got), low.ID) {
		t.Fatal("an entry below the threshold is core")
	}
	if got[1].Text != "the user is allergic to peanuts" || got[1].Covers[0] != (agentmem.Range{From: at.Number, To: at.Number}) {
		t.Fatalf("core entry = %+v", got[1])
	}
	// The importance is in the log too.
	s, _ := m.Working().Step(high.Number)
	if s.Info().Metadata[MetaImportance] != "0.9" {
		t.Fatalf("step metadata = %v", s.Info().Metadata)
	}
	for _, bad := range []float64{-0.1, 1.5} {
		if _, err := m.Add(context.Background(), note("x"), bad); !errors.Is(err, agentmem.ErrInvalid) {
			t.Fatalf("importance %v: err = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestWorkingOverflowDemotesOldest(t *testing.T) {
	m := open(t, Options{WorkingMaxSteps: 4, DemoteBatch: 2})
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: "sys"}, 0)
	task := mustAdd(t, m, &agentmem.TaskStep{Task: "fix the login bug"}, 0)
	var infos []agentmem.StepInfo
	for i := range 4 {
		infos = append(infos, mustAdd(t, m, note(fmt.Sprintf("observation number %d", i)), 0))
	}
	if n := len(unpinned(m)); n != 4 || len(m.Items(Episodic)) != 0 {
		t.Fatalf("at the bound: %d unpinned, %d episodic; want 4 and 0", n, len(m.Items(Episodic)))
	}
	infos = append(infos, mustAdd(t, m, note("observation number 4"), 0)) // one over
	epi := m.Items(Episodic)
	if len(epi) != 1 {
		t.Fatalf("episodic = %+v, want one chunk", epi)
	}
	want := []agentmem.Range{{From: infos[0].Number, To: infos[1].Number}}
	if !slices.Equal(epi[0].Covers, want) || epi[0].ID != fmt.Sprintf("chunk-%d", infos[0].Number) {
		t.Fatalf("chunk = %+v, want covers %v", epi[0], want)
	}
	if epi[0].Text == "" || epi[0].Time != infos[1].Time {
		t.Fatalf("chunk text %q time %v", epi[0].Text, epi[0].Time)
	}
	var left []int
	for _, s := range m.Working().Steps() {
		left = append(left, s.Info().Number)
	}
	if wantLeft := []int{1, task.Number, infos[2].Number, infos[3].Number, infos[4].Number}; !slices.Equal(left, wantLeft) {
		t.Fatalf("working = %v, want %v (pinned kept, oldest demoted)", left, wantLeft)
	}
	// The log keeps the demoted steps: demotion is a compaction.
	resp, err := m.Working().Store().Read(context.Background(), store.ReadRequest{SessionID: m.SessionID()})
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, e := range resp.Entries {
		if e.Kind == store.StepEntry {
			steps++
		}
	}
	if steps != 7 {
		t.Fatalf("log has %d steps, want 7", steps)
	}
}

func TestWorkingTokenBound(t *testing.T) {
	m := open(t, Options{WorkingMaxSteps: -1, WorkingMaxTokens: 200, DemoteBatch: 1})
	mustAdd(t, m, &agentmem.TaskStep{Task: "summarize the logs"}, 0)
	for i := range 30 {
		mustAdd(t, m, note(fmt.Sprintf("log line %d: disk usage at %d percent on volume %d", i, 40+i, i%3)), 0)
		if tok := m.Working().Tokens(); tok > 200 {
			t.Fatalf("after add %d the working tier costs %d tokens, over 200", i, tok)
		}
	}
	if len(m.Items(Episodic)) == 0 {
		t.Fatal("nothing was demoted")
	}
}

// topics are chunks of a run about different things; the query words of
// one appear in passing in an earlier one, so the first substring hit is
// the wrong chunk.
func addTopics(t *testing.T, m *Memory) {
	t.Helper()
	mustAdd(t, m, &agentmem.TaskStep{Task: "keep the service healthy"}, 0)
	batches := [][]string{
		{"checked the dashboard, a database was mentioned in passing", "restarted the web frontend"},
		{"the database migration 42 failed: column users.email already exists", "rolled back database migration 42 and fixed the migration script"},
		{"rotated the TLS certificates", "updated the load balancer config"},
	}
	for _, b := range batches {
		for _, s := range b {
			mustAdd(t, m, note(s), 0)
		}
	}
}

func TestRecallRanksByRelevance(t *testing.T) {
	m := open(t, Options{WorkingMaxSteps: 2, DemoteBatch: 2, PromoteAfterRecalls: -1})
	addTopics(t, m)
	epi := m.Items(Episodic)
	if len(epi) != 2 {
		t.Fatalf("episodic = %+v, want 2 chunks", epi)
	}
	got, err := m.Recall(context.Background(), "why did the database migration fail?", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].ID != epi[1].ID {
		t.Fatalf("recall = %v, want %s (the migration chunk) first", ids(got), epi[1].ID)
	}
	if got[0].Recalls != 1 {
		t.Fatalf("recalls = %d, want 1", got[0].Recalls)
	}
	if got, _ := m.Recall(context.Background(), "the of and", 2); len(got) != 0 {
		t.Fatalf("a query of stop words recalled %v", ids(got))
	}
}

func TestPromotionAfterRecalls(t *testing.T) {
	m := open(t, Options{WorkingMaxSteps: 2, DemoteBatch: 2, PromoteAfterRecalls: 2})
	addTopics(t, m)
	ctx := context.Background()
	first, err := m.Recall(ctx, "database migration", 1)
	if err != nil || len(first) != 1 || first[0].Tier != Episodic {
		t.Fatalf("first recall = %+v, %v", first, err)
	}
	second, err := m.Recall(ctx, "database migration", 1)
	if err != nil || len(second) != 1 {
		t.Fatal(second, err)
	}
	if second[0].Tier != Core || second[0].Recalls != 2 || second[0].Importance != DefaultCoreThreshold {
		t.Fatalf("after 2 recalls: %+v, want promoted to core", second[0])
	}
	if !slices.Contains(ids(m.Items(Core)), first[0].ID) || slices.Contains(ids(m.Items(Episodic)), first[0].ID) {
		t.Fatalf("core %v episodic %v", ids(m.Items(Core)), ids(m.Items(Episodic)))
	}
	// A core entry is no longer recalled on demand: it is always shown.
	if again, _ := m.Recall(ctx, "database migration", 1); len(again) == 1 && again[0].ID == first[0].ID {
		t.Fatal("a promoted entry is still recalled from the episodic tier")
	}
}

func TestSetImportance(t *testing.T) {
	m := open(t, Options{WorkingMaxSteps: 2, DemoteBatch: 2, PromoteAfterRecalls: -1})
	ctx := context.Background()
	mustAdd(t, m, &agentmem.TaskStep{Task: "plan the trip"}, 0)
	key := mustAdd(t, m, note("the flight leaves at 07:40 from gate B12"), 0.9)
	mustAdd(t, m, note("booked the hotel"), 0)
	mustAdd(t, m, note("checked the weather"), 0) // demotes the first two
	if _, ok := m.Working().Step(key.Number); ok {
		t.Fatal("the step was not demoted from the working tier")
	}
	if !slices.Contains(ids(m.Items(Core)), key.ID) {
		t.Fatal("a core step left the core tier when the working tier demoted it")
	}
	// Lowering it demotes it, verbatim, to the episodic tier.
	if err := m.SetImportance(ctx, key.ID, 0.2); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids(m.Items(Core)), key.ID) {
		t.Fatal("still core after lowering")
	}
	var down *Item
	for _, it := range m.Items(Episodic) {
		if it.ID == key.ID {
			down = &it
		}
	}
	if down == nil || down.Text != "the flight leaves at 07:40 from gate B12" || down.Importance != 0.2 {
		t.Fatalf("demoted entry = %+v", down)
	}
	// Raising it again promotes it.
	if err := m.SetImportance(ctx, key.ID, 0.75); err != nil {
		t.Fatal(err)
	}
	if core := m.Items(Core); len(core) != 1 || core[0].ID != key.ID || core[0].Importance != 0.75 {
		t.Fatalf("core = %+v", core)
	}
	// A working step can be promoted by its step ID.
	w := unpinned(m)[0]
	if err := m.SetImportance(ctx, w.Info().ID, 1); err != nil {
		t.Fatal(err)
	}
	if core := m.Items(Core); len(core) != 2 || core[0].ID != w.Info().ID {
		t.Fatalf("core = %v, want %s first", ids(core), w.Info().ID)
	}
	// And a chunk by its ID.
	chunk := m.Items(Episodic)[0]
	if err := m.SetImportance(ctx, chunk.ID, 0.8); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ids(m.Items(Core)), chunk.ID) {
		t.Fatal("chunk not promoted")
	}
	if err := m.SetImportance(ctx, "nope", 0.8); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("unknown ID: %v", err)
	}
}

func TestCoreBoundDemotesLeastImportant(t *testing.T) {
	m := open(t, Options{CoreMaxItems: 2, WorkingMaxSteps: 1, DemoteBatch: 1})
	a := mustAdd(t, m, note("alpha fact"), 0.9)
	b := mustAdd(t, m, note("bravo fact"), 0.8)
	c := mustAdd(t, m, note("charlie fact"), 0.95)
	if got, want := ids(m.Items(Core)), []string{c.ID, a.ID}; !slices.Equal(got, want) {
		t.Fatalf("core = %v, want %v", got, want)
	}
	// b had left the working tier, so it went down to the episodic tier.
	if !slices.Contains(ids(m.Items(Episodic)), b.ID) {
		t.Fatalf("episodic = %v, want %s among them", ids(m.Items(Episodic)), b.ID)
	}

	// A token bound, measured on the rendered block.
	m2 := open(t, Options{CoreMaxTokens: 40})
	for i := range 6 {
		mustAdd(t, m2, note(fmt.Sprintf("important fact number %d about the deployment", i)), 0.8)
		var ls []string
		for _, it := range m2.Items(Core) {
			ls = append(ls, it.line())
		}
		if len(ls) == 0 {
			t.Fatal("core tier emptied")
		}
		if cost := compose.Fit(m2.counter, coreHeader, ls, math.MaxInt).Tokens; cost > 40 {
			t.Fatalf("core block costs %d tokens, bound 40", cost)
		}
	}
	if n := len(m2.Items(Core)); n >= 6 {
		t.Fatalf("core kept %d entries under a 40-token bound", n)
	}
}

func TestContextBudget(t *testing.T) {
	m := open(t, Options{WorkingMaxSteps: 4, DemoteBatch: 2, PromoteAfterRecalls: -1})
	ctx := context.Background()
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: "You are an on-call engineer."}, 0)
	mustAdd(t, m, &agentmem.TaskStep{Task: "keep the service healthy"}, 0)
	mustAdd(t, m, note("the primary database is db-7 in eu-west"), 0.95)
	for i := range 12 {
		mustAdd(t, m, note(fmt.Sprintf("step %d: checked replication lag on replica %d, it was %d seconds", i, i%3, i*7)), 0)
	}
	mustAdd(t, m, note("the database migration 42 failed on the users table"), 0)
	for i := range 5 {
		mustAdd(t, m, note(fmt.Sprintf("later step %d: watched the queue depth", i)), 0)
	}
	c := counter(t)
	full, err := m.Context(ctx, "database migration users table", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Core) != 1 || len(full.Episodic) == 0 {
		t.Fatalf("unbounded: core %v episodic %v", ids(full.Core), ids(full.Episodic))
	}
	if full.Messages[0].Role != agentmem.RoleSystem || full.Messages[0].Text() != "You are an on-call engineer." {
		t.Fatalf("first message = %+v", full.Messages[0])
	}
	if full.Messages[1].Role != agentmem.RoleSystem || full.Messages[2].Role != agentmem.RoleSystem {
		t.Fatalf("blocks not after the system prompt: %v, %v", full.Messages[1].Role, full.Messages[2].Role)
	}
	pinned := 0
	for budget := 40; budget <= full.Tokens+20; budget += 7 {
		got, err := m.Context(ctx, "database migration users table", budget)
		if errors.Is(err, agentmem.ErrBudgetTooSmall) {
			if pinned != 0 {
				t.Fatalf("budget %d too small after a smaller one fit", budget)
			}
			continue
		}
		if err != nil {
			t.Fatal(budget, err)
		}
		if pinned == 0 {
			pinned = budget
		}
		if got.Tokens > budget {
			t.Fatalf("budget %d: %d tokens", budget, got.Tokens)
		}
		if exact := agentmem.RequestTokens(c, got.Messages); exact != got.Tokens {
			t.Fatalf("budget %d: reported %d tokens, messages cost %d", budget, got.Tokens, exact)
		}
		if got.CoreTokens+got.EpisodicTokens+got.Working.Tokens != got.Tokens {
			t.Fatalf("budget %d: parts %d+%d+%d != %d", budget, got.CoreTokens, got.EpisodicTokens, got.Working.Tokens, got.Tokens)
		}
		if got.EpisodicTokens > int(DefaultEpisodicShare*float64(budget)) {
			t.Fatalf("budget %d: episodic block %d over its share", budget, got.EpisodicTokens)
		}
		if len(got.Core)+len(got.CoreLeftOut) != 1 {
			t.Fatalf("budget %d: core %v left out %v", budget, ids(got.Core), ids(got.CoreLeftOut))
		}
	}
	if pinned == 0 {
		t.Fatal("no budget fit")
	}
	if _, err := m.Context(ctx, "x", 10); !errors.As(err, new(*agentmem.BudgetError)) {
		t.Fatalf("tiny budget: %v", err)
	}
}

func TestContextDoesNotRepeatCoreShownInWorking(t *testing.T) {
	m := open(t, Options{})
	key := mustAdd(t, m, note("the API key lives in vault path kv/prod/api"), 0.9)
	got, err := m.Context(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Core) != 0 || got.CoreTokens != 0 || !slices.Contains(got.Working.Steps, key.Number) {
		t.Fatalf("core %v (%d tokens), working steps %v", ids(got.Core), got.CoreTokens, got.Working.Steps)
	}
	// With a budget that leaves the step out of the window, the core
	// block shows it.
	for range 30 {
		mustAdd(t, m, note("routine check, nothing to report today at all"), 0)
	}
	got, err = m.Context(context.Background(), "", 120)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got.Working.Steps, key.Number) || len(got.Core) != 1 {
		t.Fatalf("core %v, working steps %v", ids(got.Core), got.Working.Steps)
	}
}

func TestPersistenceSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmem.db")
	clock := ptest.NewClock(start, time.Second)
	ctx := context.Background()
	opts := func(db *ptest.SQLite, id string) Options {
		return Options{Tenant: "acme", SessionID: id, Store: db.Store, Index: db.Index,
			WorkingMaxSteps: 2, DemoteBatch: 2, PromoteAfterRecalls: 2,
			Memory: agentmem.Options{Clock: clock.Now, Counter: counter(t)}}
	}
	db := ptest.OpenSQLite(t, path, clock.Now)
	m, err := Open(ctx, opts(db, ""))
	if err != nil {
		t.Fatal(err)
	}
	addTopics(t, m)
	if _, err := m.Recall(ctx, "database migration", 1); err != nil {
		t.Fatal(err)
	}
	key := mustAdd(t, m, note("the on-call phone is +44 20 7946 0000"), 0.9)
	wantCore, wantEpi := m.Items(Core), m.Items(Episodic)
	wantWorking := m.Working().Steps()
	id := m.SessionID()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db.Close(t)

	db = ptest.OpenSQLite(t, path, clock.Now)
	defer db.Close(t)
	m, err = Open(ctx, opts(db, id))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if got := m.Items(Core); fmt.Sprint(got) != fmt.Sprint(wantCore) || !slices.Contains(ids(got), key.ID) {
		t.Fatalf("core after reopen = %+v\nwant %+v", got, wantCore)
	}
	if got := m.Items(Episodic); fmt.Sprint(got) != fmt.Sprint(wantEpi) {
		t.Fatalf("episodic after reopen = %+v\nwant %+v", got, wantEpi)
	}
	var got, want []string
	for _, s := range m.Working().Steps() {
		got = append(got, s.Info().ID)
	}
	for _, s := range wantWorking {
		want = append(want, s.Info().ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("working after reopen = %v, want %v", got, want)
	}
	// The recall count survived: one more recall promotes the chunk.
	r, err := m.Recall(ctx, "database migration", 1)
	if err != nil || len(r) != 1 || r[0].Tier != Core {
		t.Fatalf("recall after reopen = %+v, %v", r, err)
	}
}

func TestConcurrentUse(t *testing.T) {
	m := open(t, Options{WorkingMaxSteps: 6, DemoteBatch: 3, CoreMaxItems: 5})
	ctx := context.Background()
	mustAdd(t, m, &agentmem.TaskStep{Task: "crawl the site"}, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				imp := float64((g+i)%10) / 10
				if _, err := m.Add(ctx, note(fmt.Sprintf("worker %d fetched page %d about topic %d", g, i, i%4)), imp); err != nil {
					errs <- err
					return
				}
				if c, err := m.Context(ctx, fmt.Sprintf("topic %d", i%4), 400); err != nil || c.Tokens > 400 {
					errs <- fmt.Errorf("context: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := len(unpinned(m)); n > 6 {
		t.Fatalf("%d unpinned working steps, bound 6", n)
	}
	if n := len(m.Items(Core)); n > 5 {
		t.Fatalf("%d core entries, bound 5", n)
	}
	// Every added step is in the log and either still working or covered
	// by an episodic chunk.
	covered := map[int]bool{}
	for _, it := range m.Items(Episodic) {
		for _, r := range it.Covers {
			for n := r.From; n <= r.To; n++ {
				covered[n] = true
			}
		}
	}
	for _, s := range m.Working().Steps() {
		covered[s.Info().Number] = true
	}
	resp, err := m.Working().Store().Read(ctx, store.ReadRequest{SessionID: m.SessionID()})
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, e := range resp.Entries {
		if e.Kind != store.StepEntry {
			continue
		}
		steps++
		if !covered[int(e.Seq)] {
			t.Fatalf("step %d is in no tier", e.Seq)
		}
	}
	if steps != 81 {
		t.Fatalf("log has %d steps, want 81", steps)
	}
}
