package inspector_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// factsNow is the "now" of the facts fixtures.
var factsNow = time.Date(2026, 3, 20, 12, 0, 0, 0, time.UTC)

// testFactsSource is the facts source of the inspector's tests only: fixed
// facts with exponential decay towards a floor, so the page tests control
// every curve exactly (TestAdapters covers the real facts memory).
type testFactsSource map[string][]inspector.FactView // tenant + "/" + user -> facts

func (s testFactsSource) List(_ context.Context, tenant, user string) ([]inspector.FactView, error) {
	return s[tenant+"/"+user], nil
}

// decaying returns a fact whose confidence halves towards floor every
// halfLife after its last reinforcement (or creation).
func decaying(text string, base, floor float64, halfLife time.Duration, created, reinforced time.Time) inspector.FactView {
	from := created
	if !reinforced.IsZero() {
		from = reinforced
	}
	return inspector.FactView{
		ID: "f-" + strings.Fields(text)[0], Text: text, Confidence: base, CreatedAt: created, ReinforcedAt: reinforced,
		EffectiveAt: func(t time.Time) float64 {
			start, b := from, base
			if t.Before(from) { // before the reinforcement: the decay from creation
				start, b = created, base*0.8
			}
			age := max(0, t.Sub(start).Hours())
			return floor + (b-floor)*math.Exp2(-age/halfLife.Hours())
		},
	}
}

// aliceFacts are the facts of alice in the default tenant.
func aliceFacts() []inspector.FactView {
	day := 24 * time.Hour
	// The old preference was superseded by the new one, which began to
	// hold when it was recorded.
	langs := decaying("Prefers Go and Rust for backend services", 0.85, 0.1, 5*day, factsNow.Add(-6*day), factsNow.Add(-1*day))
	langs.ID, langs.Reinforcements, langs.ValidFrom = "f-go-rust", 1, langs.CreatedAt
	old := decaying("Prefers Go for backend services", 0.8, 0.1, 5*day, factsNow.Add(-20*day), time.Time{})
	old.ID, old.Superseded, old.SupersededBy, old.SupersededAt = "f-go", true, langs.ID, langs.CreatedAt
	old.ValidFrom, old.ValidTo = old.CreatedAt, langs.ValidFrom
	auth := decaying("Works on the shop's auth module", 0.9, 0.2, 10*day, factsNow.Add(-12*day), factsNow.Add(-2*day))
	auth.Reinforcements = 7 // its validity unknown
	pg := decaying("Uses PostgreSQL 17 in production", 0.95, 0.3, 30*day, factsNow.Add(-25*day), time.Time{})
	pg.ValidFrom = pg.CreatedAt.Add(-90 * day) // true before it was recorded
	oncall := decaying("Is on call the week of March 23", 0.7, 0, 2*day, factsNow.Add(-3*day), time.Time{})
	oncall.ValidFrom, oncall.ValidTo = time.Date(2026, 3, 23, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)
	return []inspector.FactView{auth, pg, oncall, old, langs}
}

// historyFacts is a testFactsSource that keeps the histories of some
// facts, as a FactHistorySource.
type historyFacts struct {
	testFactsSource
	changes map[string][]inspector.FactChangeView // tenant + "/" + user + "/" + id -> changes
}

func (s historyFacts) Changes(_ context.Context, tenant, user, id string) ([]inspector.FactChangeView, error) {
	c, ok := s.changes[tenant+"/"+user+"/"+id]
	if !ok {
		return nil, fmt.Errorf("no fact %q: %w", id, agentmem.ErrNotFound)
	}
	return c, nil
}

// newHistoryFacts is newFacts with the history of alice's superseded
// fact: added, edited, superseded.
func newHistoryFacts() historyFacts {
	day := 24 * time.Hour
	var old, langs inspector.FactView
	for _, f := range aliceFacts() {
		switch f.ID {
		case "f-go":
			old = f
		case "f-go-rust":
			langs = f
		}
	}
	added := &inspector.FactStateView{Text: "Prefers Go", Confidence: 0.6, ValidFrom: old.ValidFrom}
	edited := &inspector.FactStateView{Text: old.Text, Confidence: old.Confidence, ValidFrom: old.ValidFrom}
	closed := *edited
	closed.ValidTo = old.ValidTo
	return historyFacts{testFactsSource: newFacts(), changes: map[string][]inspector.FactChangeView{
		"/alice/f-go": {
			{Action: "added", By: "extractor", At: old.CreatedAt, After: added},
			{Action: "updated", By: "alice", Reason: "more precise", At: old.CreatedAt.Add(day), Before: added, After: edited},
			{Action: "superseded", By: "coder", Reason: "the user now writes Rust too", At: old.SupersededAt, Successor: langs.ID, Before: edited, After: &closed},
		},
		"/alice/f-go-rust": {{Action: "added", By: "coder", At: langs.CreatedAt, After: &inspector.FactStateView{Text: langs.Text, Confidence: langs.Confidence, ValidFrom: langs.ValidFrom}}},
	}}
}

func newFacts() testFactsSource {
	return testFactsSource{
		"/alice":     aliceFacts(),
		"acme/alice": {decaying("ACME-CONFIDENTIAL fact", 0.9, 0, 24*time.Hour, factsNow.Add(-time.Hour), time.Time{})},
	}
}

// testRecallSource is the recall source of the inspector's tests only,
// so the page tests control the ranking exactly (TestAdapters covers the
// real recall index): every step of some sessions of the
// store, split into lower-case words and scored by the number of query
// words it contains, searched within the tenant of its session.
type testRecallSource struct{ docs []recallDoc }

type recallDoc struct {
	tenant string
	agent  string
	hit    inspector.HitView
	terms  map[string]bool
}

func (r testRecallSource) Search(_ context.Context, tenant, query, scope string, k int) ([]inspector.HitView, error) {
	var out []inspector.HitView
	kind, id, _ := strings.Cut(scope, ":")
	for _, d := range r.docs {
		if d.tenant != tenant {
			continue
		}
		if (kind == "session" && d.hit.SessionID != id) || (kind == "user" && d.hit.UserID != id) || (kind == "agent" && d.agent != id) {
			continue
		}
		h := d.hit
		for _, term := range words(query) {
			if d.terms[term] {
				h.Score++
			}
		}
		if h.Score > 0 {
			out = append(out, h)
		}
	}
	slices.SortStableFunc(out, func(a, b inspector.HitView) int { return cmp.Compare(b.Score, a.Score) })
	return out[:min(k, len(out))], nil
}

// words splits text into lower-case words.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// newRecall indexes every step of the sessions of st.
func newRecall(t testing.TB, st *store.Store, ids ...string) testRecallSource {
	t.Helper()
	var src testRecallSource
	for _, key := range ids {
		// "tenant/id" names a session of a tenant, "id" one of the
		// default tenant (IDs cannot contain a slash).
		tenant, id, ok := strings.Cut(key, "/")
		if !ok {
			tenant, id = "", key
		}
		resp, err := st.Read(context.Background(), store.ReadRequest{Tenant: tenant, SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.Entries {
			if e.Step == nil {
				continue
			}
			var text strings.Builder
			for _, m := range e.Step.Messages(agentmem.RenderOptions{}) {
				text.WriteString(m.Text() + "\n")
			}
			d := recallDoc{tenant: resp.Session.Tenant, agent: resp.Session.Agent, terms: map[string]bool{}, hit: inspector.HitView{
				ID: id + "#" + strconv.FormatInt(e.Seq, 10), Text: text.String(),
				SessionID: id, Seq: e.Seq, UserID: resp.Session.UserID, Time: e.Time,
			}}
			for _, term := range words(text.String()) {
				d.terms[term] = true
			}
			src.docs = append(src.docs, d)
		}
	}
	return src
}

// fixture is a memstore with the seeded sessions and an inspector over it.
type fixture struct {
	st *store.Store
	in *inspector.Inspector
}

func newFixture(t testing.TB, cfg inspector.Config) *fixture {
	t.Helper()
	clk := tickClock(t0)
	st := memstore.New(memstore.Options{Clock: clk})
	t.Cleanup(func() { st.Close() })
	seedLogin(t, st, "", "fix-login", clk)
	seedOthers(t, st, clk)
	cfg.Store = st
	if cfg.Clock == nil {
		cfg.Clock = func() time.Time { return factsNow }
	}
	in, err := inspector.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, in: in}
}

// get serves a GET and returns the response and its body.
func get(t testing.TB, h http.Handler, target string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// mustGet is get that fails the test unless the status is want.
func mustGet(t testing.TB, h http.Handler, target string, want int) string {
	t.Helper()
	resp, body := get(t, h, target)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d; body:\n%s", target, resp.StatusCode, want, body)
	}
	return body
}

// libContext is what the library itself renders for the call that
// produced step at of session id (at 0: the next call), found without the
// inspector: a branch of the session at the step before, opened as a
// bound memory (the store's own working-set read) and rendered by
// Memory.Context. The branch is deleted afterwards.
func libContext(t testing.TB, st *store.Store, id string, at int64, opts agentmem.ContextOptions) (*agentmem.Context, []agentmem.Step) {
	t.Helper()
	ctx := context.Background()
	parent, err := st.Get(ctx, "", id)
	if err != nil {
		t.Fatal(err)
	}
	fork := parent.LastSeq
	if at > 0 {
		fork = at - 1
	}
	probe := "probe-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := st.Create(ctx, store.CreateRequest{ID: probe, Tenant: parent.Tenant, ParentID: id, ForkSeq: fork}); err != nil {
		t.Fatal(err)
	}
	defer st.Delete(ctx, "", probe)
	m, err := store.OpenMemory(ctx, st, probe, agentmem.Options{Format: opts.Format, Counter: opts.Counter})
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Context(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, m.Steps()
}

// expectedStatuses derives, from the library's context and working set
// for a call, the status the inspector should give each step of the log
// before it: shown steps are shown (truncated when the context reports
// it, or when the working set holds a shortened copy, not the step as
// logged and completed by the amendments before the call), working-set steps
// left out are pruned, and steps outside the working set are summarized
// when a summary of the working set covers them, pruned otherwise.
func expectedStatuses(t testing.TB, st *store.Store, id string, at int64, c *agentmem.Context, ws []agentmem.Step) map[int64]string {
	t.Helper()
	resp, err := st.Read(context.Background(), store.ReadRequest{SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	inWS := map[int]agentmem.Step{}
	for _, s := range ws {
		inWS[s.Info().Number] = s
	}
	// A step completed by an amendment (a tool result sent later) is
	// compared with its completed copy: only a shorter one is truncated.
	upTo := at - 1
	if at == 0 {
		upTo = 0
	}
	done := completed(resp.Entries, upTo)
	out := map[int64]string{}
	for _, e := range resp.Entries {
		if e.Step == nil || (at > 0 && e.Seq >= at) {
			continue
		}
		n := int(e.Seq)
		s, in := inWS[n]
		switch {
		case slices.Contains(c.Truncated, n):
			out[e.Seq] = inspector.StatusTruncated
		case slices.Contains(c.Steps, n) && !reflect.DeepEqual(s, done[e.Seq]):
			out[e.Seq] = inspector.StatusTruncated
		case slices.Contains(c.Steps, n):
			out[e.Seq] = inspector.StatusShown
		case in:
			out[e.Seq] = inspector.StatusPruned
		default:
			out[e.Seq] = inspector.StatusPruned
			for _, w := range ws {
				if sum, ok := w.(*agentmem.SummaryStep); ok && sum.CoversNumber(n) {
					out[e.Seq] = inspector.StatusSummarized
				}
			}
		}
	}
	return out
}
