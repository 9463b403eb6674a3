package inspector_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	if !strings.Contains(body, "Lives in Lisbon") || !strings.Contains(body, "<s>Lives in Porto</s>") || !strings.Contains(body, `class="muted valid">held `) || strings.Contains(body, "ACME") {
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
