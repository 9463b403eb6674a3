package episodic

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/patterns/internal/ptest"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

var start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func open(t *testing.T, opts Options) *Memory {
	t.Helper()
	if opts.Memory.Clock == nil {
		opts.Memory.Clock = ptest.NewClock(start, time.Minute).Now
	}
	m, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

func mustStart(t *testing.T, m *Memory, title string) *Episode {
	t.Helper()
	ep, err := m.Start(context.Background(), map[string]string{"title": title})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func say(t *testing.T, m *Memory, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if _, err := m.Add(context.Background(), &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(s)}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStartEndAndSummaries(t *testing.T) {
	m := open(t, Options{UserID: "ana", Agent: "assistant"})
	ctx := context.Background()
	if _, err := m.Add(ctx, &agentmem.TaskStep{Task: "x"}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Add with no episode: %v", err)
	}
	if _, err := m.End(ctx); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("End with no episode: %v", err)
	}
	if _, err := m.Start(ctx, map[string]string{"agentmem.pattern": "x"}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("reserved key: %v", err)
	}
	first := mustStart(t, m, "trip planning")
	if first.Metadata["title"] != "trip planning" || !first.Ended.IsZero() || first.UserID != "ana" {
		t.Fatalf("started = %+v", first)
	}
	say(t, m, "I want to visit Kyoto in April.", "Book a ryokan near Gion.")
	second := mustStart(t, m, "tax return") // ends the first
	say(t, m, "Which receipts do I need for the home office deduction?")

	got, err := m.Get(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Ended.IsZero() || !got.Ended.After(got.Started) {
		t.Fatalf("first episode not ended: %+v", got)
	}
	if !strings.Contains(got.Summary, "Kyoto") || !strings.Contains(got.Summary, "ryokan") {
		t.Fatalf("summary %q does not say what happened", got.Summary)
	}
	if len(got.Covers) != 1 || got.Covers[0] != (agentmem.Range{From: 1, To: 2}) {
		t.Fatalf("covers = %v", got.Covers)
	}
	list, err := m.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != second.ID || list[1].ID != first.ID || !list[0].Ended.IsZero() {
		t.Fatalf("list = %+v", list)
	}
	if m.Current() == nil || m.Current().Session().ID != second.ID || m.Current().Len() != 1 {
		t.Fatal("the current episode is not the second")
	}
	ended, err := m.End(ctx)
	if err != nil || ended.ID != second.ID || !strings.Contains(ended.Summary, "receipts") || m.Current() != nil {
		t.Fatalf("End = %+v, %v", ended, err)
	}
}

func TestConfiguredSummarizer(t *testing.T) {
	var got agentmem.SummaryRequest
	sum := agentmem.SummarizerFunc(func(_ context.Context, req agentmem.SummaryRequest) (string, error) {
		got = req
		return fmt.Sprintf("%d steps about travel", len(req.Steps)), nil
	})
	m := open(t, Options{Summarizer: sum, SummaryTokens: 50})
	mustStart(t, m, "t")
	say(t, m, "a", "b", "c")
	ep, err := m.End(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ep.Summary != "3 steps about travel" || len(got.Steps) != 3 || got.MaxTokens != 50 {
		t.Fatalf("summary %q, request %d steps, max %d", ep.Summary, len(got.Steps), got.MaxTokens)
	}
	failing := agentmem.SummarizerFunc(func(context.Context, agentmem.SummaryRequest) (string, error) {
		return "", errors.New("model down")
	})
	m2 := open(t, Options{Summarizer: failing})
	mustStart(t, m2, "t")
	say(t, m2, "a")
	if _, err := m2.End(context.Background()); err == nil || m2.Current() == nil {
		t.Fatalf("a failed summary ended the episode: %v", err)
	}
}

func TestRecallRanksEpisodes(t *testing.T) {
	m := open(t, Options{UserID: "ana"})
	ctx := context.Background()
	a := mustStart(t, m, "weekly sync")
	say(t, m, "The dashboard loaded slowly; someone mentioned the database.", "We agreed to move standup to 10:00.")
	b := mustStart(t, m, "incident review")
	say(t, m, "The database migration locked the orders table for twenty minutes.",
		"Next time run database migrations with lock timeouts and in batches.")
	c := mustStart(t, m, "offsite")
	say(t, m, "The offsite is in Lisbon in June.")

	hits, err := m.Recall(ctx, "what went wrong with the database migration?", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Episode.ID != b.ID || hits[1].Episode.ID != a.ID {
		t.Fatalf("recall order = %v, want %s then %s", hitIDs(hits), b.ID, a.ID)
	}
	if !strings.Contains(hits[0].Matches[0], "migration") || hits[0].Episode.Summary == "" {
		t.Fatalf("hit = %+v", hits[0])
	}
	// The current episode is recalled too, and metadata counts.
	hits, _ = m.Recall(ctx, "Lisbon", 1)
	if len(hits) != 1 || hits[0].Episode.ID != c.ID || !hits[0].Episode.Ended.IsZero() {
		t.Fatalf("current episode recall = %v", hitIDs(hits))
	}
	hits, _ = m.Recall(ctx, "weekly sync", 1)
	if len(hits) != 1 || hits[0].Episode.ID != a.ID {
		t.Fatalf("title recall = %v", hitIDs(hits))
	}
	if hits, _ := m.Recall(ctx, "the of and", 3); len(hits) != 0 {
		t.Fatalf("stop words recalled %v", hitIDs(hits))
	}
}

func hitIDs(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Episode.ID)
	}
	return out
}

func TestScopes(t *testing.T) {
	st := memstore.New(memstore.Options{})
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	defer ix.Close()
	ana := open(t, Options{Tenant: "acme", UserID: "ana", Store: st, Index: ix})
	ben := open(t, Options{Tenant: "acme", UserID: "ben", Store: st, Index: ix})
	other := open(t, Options{Tenant: "globex", UserID: "ana", Store: st, Index: ix})
	ea := mustStart(t, ana, "ana's garden")
	say(t, ana, "The tomatoes need watering every morning.")
	mustStart(t, ben, "ben's garden")
	say(t, ben, "The tomatoes are blighted.")
	mustStart(t, other, "other tenant")
	say(t, other, "Tomatoes again.")
	ctx := context.Background()
	for name, m := range map[string]*Memory{"ana": ana, "ben": ben, "other": other} {
		hits, err := m.Recall(ctx, "tomatoes", 5)
		if err != nil || len(hits) != 1 {
			t.Fatalf("%s recalls %v, %v; want only its own", name, hitIDs(hits), err)
		}
		if list, _ := m.List(ctx); len(list) != 1 {
			t.Fatalf("%s lists %d episodes", name, len(list))
		}
	}
	if _, err := ben.Get(ctx, ea.ID); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("ben reads ana's episode: %v", err)
	}
}

func TestPersistenceSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmem.db")
	clock := ptest.NewClock(start, time.Minute)
	ctx := context.Background()
	db := ptest.OpenSQLite(t, path, clock.Now)
	opts := Options{Tenant: "acme", UserID: "ana", Store: db.Store, Index: db.Index, Memory: agentmem.Options{Clock: clock.Now}}
	m := open(t, opts)
	first := mustStart(t, m, "bike repair")
	say(t, m, "The rear derailleur hanger is bent.")
	second := mustStart(t, m, "recipes")
	say(t, m, "Grandma's lasagne uses nutmeg in the bechamel.")
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db.Close(t)

	db = ptest.OpenSQLite(t, path, clock.Now)
	defer db.Close(t)
	opts.Store, opts.Index = db.Store, db.Index
	m = open(t, opts)
	if m.Current() == nil || m.Current().Session().ID != second.ID || m.Current().Len() != 1 {
		t.Fatal("the current episode was not resumed")
	}
	say(t, m, "Bake it at 180 degrees.")
	hits, err := m.Recall(ctx, "derailleur", 1)
	if err != nil || len(hits) != 1 || hits[0].Episode.ID != first.ID || !strings.Contains(hits[0].Episode.Summary, "derailleur") {
		t.Fatalf("recall after reopen = %+v, %v", hits, err)
	}
	hits, _ = m.Recall(ctx, "how hot to bake the lasagne", 2)
	if len(hits) == 0 || hits[0].Episode.ID != second.ID {
		t.Fatalf("recall of the resumed episode = %v", hitIDs(hits))
	}
	if n, err := m.Reindex(ctx); err != nil || n != 2 {
		t.Fatalf("Reindex = %d, %v", n, err)
	}
	s, _ := db.Store.Get(ctx, "acme", first.ID)
	if s.Retention != store.Persistent {
		t.Fatalf("episode retention = %s", s.Retention)
	}
}

func TestConcurrentUse(t *testing.T) {
	m := open(t, Options{})
	ctx := context.Background()
	mustStart(t, m, "start")
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 15 {
				var err error
				switch {
				case g == 0 && i%5 == 4:
					_, err = m.Start(ctx, map[string]string{"title": fmt.Sprintf("part %d", i)})
				case g%2 == 0:
					_, err = m.Add(ctx, &agentmem.ScratchpadStep{Content: fmt.Sprintf("worker %d note %d about topic %d", g, i, i%3)})
				default:
					_, err = m.Recall(ctx, fmt.Sprintf("topic %d", i%3), 2)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	list, err := m.List(ctx)
	if err != nil || len(list) != 4 {
		t.Fatalf("%d episodes, %v", len(list), err)
	}
	for _, ep := range list[1:] {
		if ep.Ended.IsZero() {
			t.Fatalf("an older episode is still open: %+v", ep)
		}
	}
}
