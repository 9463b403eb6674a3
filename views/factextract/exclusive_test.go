package factextract_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/sqlite"
	"github.com/agentmem/agentmem/views"
	"github.com/agentmem/agentmem/views/factextract"
)

// TestOneExtractorPerStore: two servers' learners over one SQLite file
// (two stores, as two processes open it) extract each turn once: one
// holds the lease and extracts, the other waits, and takes over from the
// cursor saved when the first stops.
func TestOneExtractorPerStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentmem.db")
	var mu sync.Mutex
	extracted := map[string]int{} // the user's text of each turn -> extractions
	ex := facts.ExtractorFunc(func(_ context.Context, req facts.ExtractRequest) ([]facts.Decision, error) {
		var user []string
		for _, m := range req.Messages {
			if m.Role == agentmem.RoleUser {
				user = append(user, m.Text())
			}
		}
		mu.Lock()
		extracted[strings.Join(user, " / ")]++
		mu.Unlock()
		return nil, nil
	})
	mem := facts.New(facts.NewMemStore(), facts.Options{})
	type server struct {
		svc *sessions.Service
		l   *factextract.Learner
		// stop stops the learner (it releases the lease).
		stop func()
	}
	start := func() *server {
		st, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		svc, err := sessions.New(sessions.Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		l, stop, err := factextract.Start(svc, nil, factextract.Config{Facts: mem, Extractor: ex,
			Follow: views.Options{Settle: -1, LeasePoll: 5 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		return &server{svc: svc, l: l, stop: stop}
	}
	turn := func(s *server, user, answer string) {
		t.Helper()
		if _, err := s.svc.AppendMessages(ctx, sessions.MessagesRequest{SessionID: "s1", Messages: []agentmem.Message{
			{Role: agentmem.RoleUser, Content: agentmem.Text(user)},
			{Role: agentmem.RoleAssistant, Content: agentmem.Text(answer)},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	one := start()
	if _, err := one.svc.Create(ctx, store.CreateRequest{ID: "s1", UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	waitSync(t, one.l) // one holds the lease
	two := start()
	turn(one, "I live in Berlin.", "Nice.")
	turn(two, "I like tea.", "Noted.")
	waitSync(t, one.l)
	if l := two.l.Status().Lease; l == nil || l.Held {
		t.Fatalf("the second learner's lease status %+v: want it waiting", l)
	}
	one.stop()
	turn(two, "I work at night.", "Sleep well.")
	waitSync(t, two.l) // two takes over
	mu.Lock()
	defer mu.Unlock()
	for _, text := range []string{"I live in Berlin.", "I like tea.", "I work at night."} {
		if extracted[text] != 1 {
			t.Errorf("turn %q extracted %d times, want once (all: %v)", text, extracted[text], extracted)
		}
	}
}
