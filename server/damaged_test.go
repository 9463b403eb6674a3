package server

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/facts"
	factssqlite "github.com/agentmem/agentmem/facts/sqlite"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/recall"
	recallsqlite "github.com/agentmem/agentmem/recall/sqlite"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/postgres"
	"github.com/agentmem/agentmem/store/sqlite"
)

// A session whose stored metadata does not decode (changed by hand, or by
// a faulty disk) is one damaged record, not a broken store: the server
// stays ready, lists the tenant's other sessions with the damaged one
// named in "damaged", logs and counts it, answers a read of it by ID with
// a 500 whose message names it and says it is damaged, and deletes it.

func TestDamagedSessionSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentmem.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkDamagedSession(t, st, func(query string) {
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(query); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDamagedSessionPostgres(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	st, err := postgres.OpenDriver(ctx, url, postgres.Options{Schema: testenv.FreshSchema(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkDamagedSession(t, store.New(st), func(query string) {
		if _, err := st.Pool().Exec(ctx, query); err != nil {
			t.Fatal(err)
		}
	})
}

// checkDamagedSession runs the damaged session's checks on a server over
// st; exec runs SQL behind the store's back.
func checkDamagedSession(t *testing.T, st *store.Store, exec func(query string)) {
	e := onStore(t, st)
	e.create("s1")
	e.create("s2")
	e.create("s3")
	e.create("s4")
	exec(`UPDATE sessions SET metadata = '{"m":' WHERE id = 's2'`)
	exec(`UPDATE sessions SET settings = '{"pinning":' WHERE id = 's4'`)

	e.must(200, "GET", "/readyz", nil)
	var list api.ListSessionsResponse
	e.must(200, "GET", "/v1/sessions", nil).json(t, &list)
	var ids []string
	for _, s := range list.Sessions {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "s3,s1" {
		t.Errorf("listed %v, want s3 and s1", ids)
	}
	if len(list.Damaged) != 2 || list.Damaged[0].ID != "s4" || !strings.Contains(list.Damaged[0].Error, "settings") ||
		list.Damaged[1].ID != "s2" || !strings.Contains(list.Damaged[1].Error, "metadata") {
		t.Errorf("damaged %+v, want s4 and s2 and why", list.Damaged)
	}
	// Paged one at a time, the damaged one takes its place.
	var pages []string
	for token := ""; ; {
		var page api.ListSessionsResponse
		e.must(200, "GET", "/v1/sessions?page_size=1&page_token="+token, nil).json(t, &page)
		for _, s := range page.Sessions {
			pages = append(pages, s.ID)
		}
		for _, d := range page.Damaged {
			pages = append(pages, "!"+d.ID)
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if strings.Join(pages, ",") != "!s4,s3,!s2,s1" {
		t.Errorf("pages %v", pages)
	}
	if n := e.metric(`agentmem_damaged_records_total{kind="session"}`); n < 1 {
		t.Errorf("agentmem_damaged_records_total = %v", n)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "damaged record") || !strings.Contains(logs, "id=s2") {
		t.Errorf("the damaged record is not logged:\n%s", logs)
	}

	r := e.do("GET", "/v1/sessions/s2", nil)
	checkStatus(t, "read of the damaged session", r, 500, api.CodeInternal)
	if msg := r.apiErr(t).Message; !strings.Contains(msg, `"s2"`) || !strings.Contains(msg, "damaged") {
		t.Errorf("the damaged session's error says %q", msg)
	}
	checkStatus(t, "read of the session with damaged settings", e.do("GET", "/v1/sessions/s4/context", nil), 500, api.CodeInternal)
	e.must(200, "GET", "/v1/sessions/s1", nil)
	e.must(204, "DELETE", "/v1/sessions/s4", nil)
	e.must(204, "DELETE", "/v1/sessions/s2", nil)
	e.must(404, "GET", "/v1/sessions/s2", nil)
	var after api.ListSessionsResponse
	e.must(200, "GET", "/v1/sessions", nil).json(t, &after)
	if len(after.Sessions) != 2 || len(after.Damaged) != 0 {
		t.Errorf("after the damaged session's deletion: %+v", after)
	}
}

// TestDamagedDocumentAndFact: a recall document or a fact whose stored
// form does not decode leaves the search and the user's fact list
// working: they answer the rest and name the damaged one in "damaged";
// a read of it by ID is a 500 naming it.
func TestDamagedDocumentAndFact(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentmem.db")
	rb, err := recallsqlite.Open(ctx, path, recallsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := factssqlite.Open(ctx, path, factssqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix := recall.New(rb, recall.Options{})
	defer ix.Close()
	mem := facts.New(fs, facts.Options{})
	defer fs.Close()
	e := newEnv(t, func(c *Config) { c.Recall, c.Facts = ix, mem })
	e.must(200, "POST", "/v1/recall", `{"documents":[{"id":"n1","text":"the parser fails on tabs"},{"id":"n2","text":"the parser fails on spaces"},{"id":"n3","text":"the parser fails on newlines"}]}`)
	var ids []string
	for _, text := range []string{"Uses Go.", "Likes tea.", "Lives in Oslo."} {
		var rem api.RememberResponse
		e.must(201, "POST", "/v1/users/u1/facts", map[string]any{"text": text}).json(t, &rem)
		ids = append(ids, rem.Fact.ID)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`UPDATE recall_docs SET metadata = '{"m":' WHERE id = 'n2'`, `UPDATE facts SET metadata = '{"m":' WHERE id = '` + ids[1] + `'`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}

	var res api.RecallSearchResponse
	e.must(200, "GET", "/v1/recall/search?q=parser+fails&k=10&before=1&after=1", nil).json(t, &res)
	if len(res.Hits) != 2 || len(res.Damaged) != 1 || res.Damaged[0].ID != "n2" || !strings.Contains(res.Damaged[0].Error, "metadata") {
		t.Errorf("search: %d hits, damaged %+v; want 2 hits and n2", len(res.Hits), res.Damaged)
	}
	r := e.do("GET", "/v1/recall/n2", nil)
	checkStatus(t, "read of the damaged document", r, 500, api.CodeInternal)
	if msg := r.apiErr(t).Message; !strings.Contains(msg, `"n2"`) || !strings.Contains(msg, "damaged") {
		t.Errorf("the damaged document's error says %q", msg)
	}
	e.must(200, "GET", "/v1/recall/n1", nil)

	var list api.FactsResponse
	e.must(200, "GET", "/v1/users/u1/facts", nil).json(t, &list)
	if len(list.Facts) != 2 || len(list.Damaged) != 1 || list.Damaged[0].ID != ids[1] {
		t.Errorf("facts: %d, damaged %+v; want 2 and %s", len(list.Facts), list.Damaged, ids[1])
	}
	var found api.FactsResponse
	e.must(200, "GET", "/v1/users/u1/facts?q=tea+Oslo", nil).json(t, &found)
	if len(found.Damaged) != 1 || found.Damaged[0].ID != ids[1] {
		t.Errorf("facts search: damaged %+v", found.Damaged)
	}
	checkStatus(t, "read of the damaged fact", e.do("GET", "/v1/users/u1/facts/"+ids[1], nil), 500, api.CodeInternal)
	e.must(201, "POST", "/v1/users/u1/facts", `{"text":"Works on Fridays."}`)
	if n := e.metric(`agentmem_damaged_records_total{kind="document"}`); n < 1 {
		t.Errorf("damaged documents counted: %v", n)
	}
	if n := e.metric(`agentmem_damaged_records_total{kind="fact"}`); n < 1 {
		t.Errorf("damaged facts counted: %v", n)
	}
}
