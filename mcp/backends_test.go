package mcp_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/postgres"
	"github.com/agentmem/agentmem/store/sqlite"
)

// The tools only adapt the store, so they must behave the same on every
// backend: the same scenario runs on SQLite and PostgreSQL (memstore is
// what the other tests use).

func TestToolsOnSQLite(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	toolScenario(t, st)
}

func TestToolsOnPostgres(t *testing.T) {
	url := testenv.PostgresURL(t)
	st, err := postgres.Open(context.Background(), url, postgres.Options{Schema: testenv.FreshSchema(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	toolScenario(t, st)
}

func toolScenario(t *testing.T, st *store.Store) {
	acme := newEnvOn(t, st, "acme")
	other := newEnvOn(t, st, "globex")
	call(t, acme.cs, mcp.ToolCreateSession, map[string]any{"id": "s1", "user_id": "alice"}, nil)
	var app, retry mcp.AppendOutput
	args := map[string]any{"session_id": "s1", "messages": turn, "idempotency_key": "k1"}
	call(t, acme.cs, mcp.ToolAppend, args, &app)
	call(t, acme.cs, mcp.ToolAppend, args, &retry)
	if !slices.Equal(app.Seqs, []int64{1, 2, 3, 4}) || !slices.Equal(retry.Seqs, app.Seqs) || retry.LastSeq != 4 {
		t.Fatalf("append %+v, retried %+v", app, retry)
	}
	var c mcp.ContextOutput
	call(t, acme.cs, mcp.ToolGetContext, map[string]any{"session_id": "s1", "budget": 8000}, &c)
	if !slices.Equal(c.Steps, []int{1, 2, 3, 4}) || c.LastSeq != 4 || c.Tokens > 8000 {
		t.Errorf("context %+v", c)
	}
	var l mcp.ListSessionsOutput
	call(t, acme.cs, mcp.ToolListSessions, map[string]any{"user_id": "alice"}, &l)
	if len(l.Sessions) != 1 || l.Sessions[0].LastSeq != 4 {
		t.Errorf("list %+v", l)
	}
	callErr(t, other.cs, mcp.ToolGetContext, map[string]any{"session_id": "s1"}, "does not exist")
	callErr(t, other.cs, mcp.ToolAppend, map[string]any{"session_id": "s1", "messages": turn}, "does not exist")
	call(t, other.cs, mcp.ToolListSessions, map[string]any{}, &l)
	if len(l.Sessions) != 0 {
		t.Errorf("globex lists %+v", l)
	}
	// An ID in use: the message says so in the same words on every
	// backend, without naming it.
	msg := callErr(t, acme.cs, mcp.ToolCreateSession, map[string]any{"id": "s1"}, `session "s1" already exists`)
	for _, name := range []string{"sqlite", "postgres", "memstore"} {
		if strings.Contains(strings.ToLower(msg), name) {
			t.Errorf("create_session of an ID in use: the error %q names %s", msg, name)
		}
	}
}
