package server

import (
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
)

// conflictScenario creates sessions whose ID the tenant already has, by
// every route that takes an ID of the client's (a session, a branch of a
// session, a branch of a missing session): each is 409 conflict on the
// field id, saying which session exists and nothing of the backend.
func conflictScenario(t *testing.T, e *env) {
	e.create("taken")
	e.create("parent")
	for _, c := range []struct{ what, path, body string }{
		{"a session", "/v1/sessions", `{"id":"taken"}`},
		{"a branch", "/v1/sessions/parent/fork", `{"id":"taken"}`},
		{"a branch of a missing session", "/v1/sessions/missing/fork", `{"id":"taken"}`},
	} {
		before := e.dump()
		ae := e.must(409, "POST", c.path, c.body).apiErr(t)
		want := `session "taken" already exists: choose another ID, or leave it out for a new one`
		if ae.Code != api.CodeConflict || ae.Field != "id" || ae.Message != want {
			t.Errorf("%s with an ID in use: %+v, want %s on id, %q", c.what, ae, api.CodeConflict, want)
		}
		for _, name := range []string{"sqlite", "postgres", "memstore", "agentmem", "store"} {
			if strings.Contains(strings.ToLower(ae.Message), name) {
				t.Errorf("%s with an ID in use: the message %q names %s", c.what, ae.Message, name)
			}
		}
		if e.dump() != before {
			t.Errorf("%s with an ID in use changed the store", c.what)
		}
	}
}

func TestConflictOnMemory(t *testing.T) {
	conflictScenario(t, newEnv(t))
}

func TestConflictOnSQLite(t *testing.T) {
	st := sqliteStore(t)
	conflictScenario(t, envOn(t, st))
}

func TestConflictOnPostgres(t *testing.T) {
	st := postgresStore(t)
	conflictScenario(t, envOn(t, st))
}
