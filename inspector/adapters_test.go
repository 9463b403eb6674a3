package inspector_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views/recallview"
)

// The adapters put the real facts memory and recall index behind the
// facts and recall pages.
func TestAdapters(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, inspector.Config{})

	now := factsNow
	mem := facts.New(facts.NewMemStore(), facts.Options{
		Clock: func() time.Time { return now },
		Decay: facts.Decay{HalfLife: 24 * time.Hour, Floor: 0.1},
	})
	old, err := mem.Remember(ctx, facts.RememberRequest{UserID: "alice", Text: "Lives in Porto", Confidence: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Supersede(ctx, facts.SupersedeRequest{ID: old.Fact.ID, Text: "Lives in Lisbon", Confidence: 0.9}); err != nil {
		t.Fatal(err)
	}
	// Remembered twice more: seen again twice.
	for range 2 {
		if r, err := mem.Remember(ctx, facts.RememberRequest{UserID: "alice", Text: "Lives in Lisbon", Confidence: 0.9}); err != nil || r.Outcome != facts.OutcomeReinforced {
			t.Fatalf("Remember again: %v %+v", err, r)
		}
	}
	if _, err := mem.Remember(ctx, facts.RememberRequest{Tenant: "acme", UserID: "alice", Text: "ACME-CONFIDENTIAL"}); err != nil {
		t.Fatal(err)
	}
	src := inspector.FactsFrom(mem)
	views, err := src.List(ctx, "", "alice")
	if err != nil || len(views) != 2 {
		t.Fatalf("List: %v %+v", err, views)
	}
	for _, v := range views {
		later := now.Add(24 * time.Hour)
		if v.Text == "Lives in Lisbon" {
			if v.Superseded {
				t.Error("the successor is shown superseded")
			}
			if v.Reinforcements != 2 {
				t.Errorf("the fact seen twice again shows %d reinforcements", v.Reinforcements)
			}
			if got, want := v.EffectiveAt(later), 0.1+(v.Confidence-0.1)/2; fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", want) {
				t.Errorf("confidence after one half-life %v, want %v", got, want)
			}
		} else if !v.Superseded || v.SupersededBy == "" || v.ValidFrom.IsZero() || v.ValidTo.IsZero() {
			t.Errorf("the superseded fact: %+v", v)
		}
	}

	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	if _, err := (&recallview.Indexer{Index: ix, Store: f.st}).Backfill(ctx, recallAll()); err != nil {
		t.Fatal(err)
	}
	in, err := inspector.New(inspector.Config{Store: f.st, Facts: src, Recall: inspector.RecallFrom(ix), Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	body := mustGet(t, in, "/facts?user=alice", http.StatusOK)
	if !strings.Contains(body, "Lives in Lisbon") || !strings.Contains(body, "<s>Lives in Porto</s>") || !strings.Contains(body, `by <a href="#fact-1">#1 “Lives in Lisbon”</a>`) ||
		!strings.Contains(body, `<td class="time valid">never held: superseded before it began, `) || strings.Contains(body, "ACME") {
		t.Errorf("facts page of the real memory:\n%s", body)
	}
	hits, err := inspector.RecallFrom(ix).Search(ctx, "", "bcrypt password", "", 3)
	if err != nil || len(hits) == 0 {
		t.Fatalf("recall: %v %+v", err, hits)
	}
	if hits[0].SessionID == "" || hits[0].Seq == 0 || hits[0].ID != hits[0].SessionID+"#"+strconv.FormatInt(hits[0].Seq, 10) {
		t.Errorf("hit does not name its session and step: %+v", hits[0])
	}
	body = mustGet(t, in, "/recall?q=bcrypt+password&k=3", http.StatusOK)
	if !strings.Contains(body, fmt.Sprintf(`href="/sessions/%s/context?at=%d"`, hits[0].SessionID, hits[0].Seq)) {
		t.Error("the recall page does not link the best hit to what the model saw")
	}
	if _, err := inspector.RecallFrom(ix).Search(ctx, "", "", "", 0); err == nil {
		t.Error("an empty search is accepted")
	}
	// A scope narrows the search to a session's turns.
	scoped, err := inspector.RecallFrom(ix).Search(ctx, "", "bcrypt password", "session:"+hits[0].SessionID, 10)
	if err != nil || len(scoped) == 0 {
		t.Fatalf("scoped recall: %v %+v", err, scoped)
	}
	for _, h := range scoped {
		if h.SessionID != hits[0].SessionID {
			t.Errorf("scope session:%s found a turn of %s", hits[0].SessionID, h.SessionID)
		}
	}
	if _, err := inspector.RecallFrom(ix).Search(ctx, "", "bcrypt", "planet:earth", 3); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("a bad scope: %v, want ErrInvalid", err)
	}
}

// recallAll lists every session of the default tenant.
func recallAll() store.ListRequest { return store.ListRequest{} }

// TestFactHistory: the history of a fact of the real facts memory, from
// its audit log: what was done to it, by whom, when and why, with what
// it said before and after, and the supersession chain it is in.
func TestFactHistory(t *testing.T) {
	ctx := context.Background()
	now := factsNow
	mem := facts.New(facts.NewMemStore(), facts.Options{Clock: func() time.Time { return now }})
	porto, err := mem.Remember(ctx, facts.RememberRequest{UserID: "alice", Text: "Lives in Porto", Confidence: 0.9, ValidFrom: now.Add(-48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	text, conf := "Lives in Porto, Portugal", 0.7
	if _, err := mem.Edit(ctx, facts.EditRequest{ID: porto.Fact.ID, Text: &text, Confidence: &conf, By: "operator", Reason: "more precise"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	lisbon, err := mem.Supersede(ctx, facts.SupersedeRequest{ID: porto.Fact.ID, Text: "Lives in Lisbon", Confidence: 0.9, By: "agent", Reason: "moved"})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := mem.Remember(ctx, facts.RememberRequest{UserID: "alice", Text: "Has a cat <b>Tom</b>"})
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Forget(ctx, "", cat.Fact.ID, "alice", "asked to forget"); err != nil {
		t.Fatal(err)
	}
	secret, err := mem.Remember(ctx, facts.RememberRequest{Tenant: "acme", UserID: "alice", Text: "ACME-CONFIDENTIAL"})
	if err != nil {
		t.Fatal(err)
	}
	evil := `"><script>alert(1)</script><img src=x onerror=alert(2)>`
	bad, err := mem.Remember(ctx, facts.RememberRequest{UserID: "alice", Text: "Likes " + evil})
	if err != nil {
		t.Fatal(err)
	}
	evilText := "Likes " + evil + " and </pre>"
	if _, err := mem.Edit(ctx, facts.EditRequest{ID: bad.Fact.ID, Text: &evilText, By: evil, Reason: evil}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Supersede(ctx, facts.SupersedeRequest{ID: bad.Fact.ID, Text: evil, By: evil, Reason: evil}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, inspector.Config{Facts: inspector.FactsFrom(mem), Clock: func() time.Time { return now }})
	for _, target := range []string{"/facts?user=alice", "/facts/history?" + url.Values{"user": {"alice"}, "id": {bad.Fact.ID}}.Encode()} {
		body := mustGet(t, f.in, target, http.StatusOK)
		if strings.Contains(body, "<script") || strings.Contains(body, "<img") {
			t.Errorf("GET %s carries the markup unescaped", target)
		}
		checkMarkup(t, target, body)
	}

	history := func(id string) string { return "/facts/history?" + url.Values{"user": {"alice"}, "id": {id}}.Encode() }
	body := mustGet(t, f.in, "/facts?user=alice", http.StatusOK)
	for _, id := range []string{porto.Fact.ID, lisbon.Fact.ID} {
		if !strings.Contains(body, `<a class="aside history" href="`+html.EscapeString(history(id))+`">history</a>`) {
			t.Errorf("the facts page does not link to the history of %s", id)
		}
	}

	body = mustGet(t, f.in, history(porto.Fact.ID), http.StatusOK)
	changes := regexp.MustCompile(`(?s)<li class="version fact-change" data-action="(\w+)">(.*?)</li>`).FindAllStringSubmatch(body, -1)
	var actions []string
	for _, c := range changes {
		actions = append(actions, c[1])
	}
	if !slices.Equal(actions, []string{"superseded", "updated", "added"}) {
		t.Fatalf("changes of the superseded fact: %q, want newest first", actions)
	}
	for i, want := range [][]string{
		{`<span class="by">by agent</span><span class="reason">because moved</span>`,
			`<dt>superseded by</dt><dd><a class="successor" href="` + html.EscapeString(history(lisbon.Fact.ID)) + `">Lives in Lisbon</a></dd>`,
			`<dd class="valid"><span class="was">since 2026-03-18 12:00:00Z</span> → 2026-03-18 12:00:00Z – 2026-03-20 14:00:00Z</dd>`},
		{`<span class="by">by operator</span><span class="reason">because more precise</span>`,
			`<pre class="diff">Lives in Porto<ins>, Portugal</ins></pre>`, `<dd><span class="was">0.90</span> → 0.70</dd>`},
		{`<pre class="facttext">Lives in Porto</pre>`, `<dd>0.90</dd>`, `<dd class="valid">since 2026-03-18 12:00:00Z</dd>`},
	} {
		for _, s := range want {
			if !strings.Contains(changes[i][2], s) {
				t.Errorf("the %s change lacks %s:\n%s", actions[i], s, changes[i][2])
			}
		}
	}
	chain := regexp.MustCompile(`(?s)<ol class="chain" id="chain">(.*?)</ol>`).FindStringSubmatch(body)
	if chain == nil || !strings.Contains(chain[1], `<li class="this superseded"><b>Lives in Porto, Portugal</b>`) ||
		!strings.Contains(chain[1], `<a href="`+html.EscapeString(history(lisbon.Fact.ID))+`">Lives in Lisbon</a> <span class="time">since 2026-03-20 14:00:00Z</span> <span class="flag current">current</span>`) {
		t.Errorf("the supersession chain: %q", chain)
	}
	// The successor's history begins with its addition, and its chain
	// leads back.
	body = mustGet(t, f.in, history(lisbon.Fact.ID), http.StatusOK)
	if !strings.Contains(body, `data-action="added"`) || !strings.Contains(body, `<a href="`+html.EscapeString(history(porto.Fact.ID))+`">Lives in Porto, Portugal</a>`) {
		t.Error("the successor's history does not lead back to the fact it replaced")
	}
	// A forgotten fact: what was done, not what it said.
	body = mustGet(t, f.in, history(cat.Fact.ID), http.StatusOK)
	if !strings.Contains(body, `id="gone"`) || !strings.Contains(body, `data-action="forgotten"`) || !strings.Contains(body, "because asked to forget") || strings.Contains(body, "Tom") {
		t.Errorf("the history of a forgotten fact:\n%s", body)
	}

	for target, status := range map[string]int{
		history("no-such-fact"):                        http.StatusNotFound,
		history(secret.Fact.ID):                        http.StatusNotFound, // another tenant's
		"/facts/history?user=alice":                    http.StatusBadRequest,
		"/facts/history?id=" + porto.Fact.ID:           http.StatusBadRequest,
		"/facts/history?user=bob&id=" + lisbon.Fact.ID: http.StatusNotFound,
	} {
		if resp, body := get(t, f.in, target); resp.StatusCode != status || strings.Contains(body, "ACME") {
			t.Errorf("GET %s: %d, want %d", target, resp.StatusCode, status)
		}
	}
	// A source without histories says so.
	if body := mustGet(t, newFixture(t, inspector.Config{Facts: newFacts()}).in, history("f-go"), http.StatusOK); !strings.Contains(body, `id="no-history"`) {
		t.Error("a facts source without histories is not said to keep none")
	}
}
