package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storetest"
)

// TestMigrationTenantKeys upgrades a schema of version 2 (session IDs
// global) holding sessions of two tenants, a branch and a feed consumer
// to version 3 (IDs per tenant) and on (4: the feed written by the
// store's statements, not triggers): every session, entry, change and
// cursor is kept, the branch still reads its parent, the same ID can then
// be created in another tenant, and a change is recorded once.
func TestMigrationTenantKeys(t *testing.T) {
	ctx := context.Background()
	url := testURL(t)
	schema := freshSchema(t, url)
	pool, err := pgdb.Open(ctx, url, schema, 2)
	if err != nil {
		t.Fatal(err)
	}
	v2 := &migrate.Set{Component: migrations.Component, Migrations: migrations.Migrations[:2]}
	if err := pgdb.Migrate(ctx, pool, schema, v2); err != nil {
		t.Fatal(err)
	}
	body := func(id string, seq int) []byte {
		return fmt.Appendf(nil, `{"type":"task","id":%q,"number":%d,"task":"t %s"}`, id, seq, id)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO sessions (id, tenant, retention, created_at, updated_at, last_seq) VALUES ('a', 'acme', 'session', now(), now(), 2)`, nil},
		{`INSERT INTO sessions (id, tenant, parent_id, fork_seq, base_id, base_seq, retention, created_at, updated_at, last_seq)
			VALUES ('b', 'acme', 'a', 1, 'a', 1, 'session', now(), now(), 2)`, nil},
		{`INSERT INTO sessions (id, tenant, retention, created_at, updated_at, last_seq) VALUES ('g', 'globex', 'session', now(), now(), 1)`, nil},
		{`INSERT INTO entries (session_id, seq, kind, step_id, body, created_at) VALUES
			('a', 1, 'step', 'a1', $1, now()), ('a', 2, 'step', 'a2', $2, now()),
			('b', 2, 'step', 'b2', $3, now()), ('g', 1, 'step', 'g1', $4, now())`,
			[]any{body("a1", 1), body("a2", 2), body("b2", 2), body("g1", 1)}},
		{`INSERT INTO feed_cursors (consumer, xid, pos) VALUES ('recall', '0', 2)`, nil},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	var feedRows int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM feed").Scan(&feedRows); err != nil {
		t.Fatal(err)
	}
	pool.Close()

	st, err := OpenDriver(ctx, url, Options{Schema: schema})
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	defer st.Close()
	var version, after int
	st.pool.QueryRow(ctx, "SELECT max(version) FROM agentmem_migrations WHERE component = 'sessions'").Scan(&version)
	st.pool.QueryRow(ctx, "SELECT count(*) FROM feed").Scan(&after)
	if version != SchemaVersion() || after != feedRows {
		t.Fatalf("after the upgrade: version %d, %d feed rows (want %d, %d)", version, after, SchemaVersion(), feedRows)
	}
	if n := queryInt(t, st, `SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal
		AND tgrelid IN ('sessions'::regclass, 'entries'::regclass)`); n != 0 {
		t.Fatalf("%d feed triggers left after the upgrade", n)
	}
	if c, err := st.LoadCursor(ctx, "recall"); err != nil || c.Pos != 2 {
		t.Fatalf("cursor: %+v, %v", c, err)
	}
	storetest.CheckTenantUpgrade(t, store.New(st))
	if n := queryInt(t, st, `SELECT count(*) FROM feed WHERE tenant = 'acme' AND session_id = 'b' AND seq = 3`); n != 1 {
		t.Fatalf("the append is in the feed %d times, want once", n)
	}
}
