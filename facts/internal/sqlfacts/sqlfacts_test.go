package sqlfacts_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/postgres"
	"github.com/agentmem/agentmem/facts/sqlite"
	"github.com/agentmem/agentmem/internal/testenv"
)

// stores opens a store of each backend for t.
var stores = map[string]func(t *testing.T) facts.Store{
	"sqlite": func(t *testing.T) facts.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agentmem.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	},
	"postgres": func(t *testing.T) facts.Store {
		url := testenv.PostgresURL(t)
		// One connection: a transaction left open by the panic would
		// keep it, and the next Update would wait for it for ever.
		st, err := postgres.Open(context.Background(), url, postgres.Options{Schema: testenv.FreshSchema(t, url), MaxConns: 1})
		if err != nil {
			t.Fatal(err)
		}
		return st
	},
}

// TestUpdatePanic checks that a panic of Update's fn reaches the caller
// (on SQLite fn runs in the group writer's goroutine, which must survive
// it) and that the store goes on working: the transaction fn panicked in
// was rolled back and its connection freed.
func TestUpdatePanic(t *testing.T) {
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			defer st.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			now := time.Now().UTC().Truncate(time.Microsecond)
			put := func(id string) facts.Changes {
				return facts.Changes{Put: []facts.Fact{{ID: id, UserID: "u", Text: "Likes tea.", Confidence: 1, CreatedAt: now, ReinforcedAt: now, ValidFrom: now}}}
			}
			got := func() (p any) {
				defer func() { p = recover() }()
				st.Update(ctx, "", "u", func([]facts.Fact) (facts.Changes, error) { panic("boom") })
				return nil
			}()
			if got != "boom" {
				t.Fatalf("recovered %v, want fn's panic", got)
			}
			if err := st.Update(ctx, "", "u", func([]facts.Fact) (facts.Changes, error) { return put("f1"), nil }); err != nil {
				t.Fatalf("update after the panic: %v", err)
			}
			fs, err := st.Facts(ctx, "", "u")
			if err != nil || len(fs) != 1 || fs[0].ID != "f1" {
				t.Fatalf("facts: %+v, %v", fs, err)
			}
		})
	}
}
