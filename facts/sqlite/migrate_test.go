package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/sqlite"
)

// TestMigrateValidity: facts recorded before validity existed hold from
// when they were recorded, and a superseded one until it was superseded;
// audit entries written before extracted turns were recorded name no
// turn, and an extraction of a turn then is recorded.
func TestMigrateValidity(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentmem.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	// Take the database back to schema version 1, with two facts, one
	// superseded by the other.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
	t1 := t0.Add(time.Hour)
	for _, q := range []string{
		`DELETE FROM agentmem_migrations WHERE component = 'facts' AND version IN (2, 3)`,
		`DROP INDEX facts_audit_extracted`,
		`ALTER TABLE facts_audit DROP COLUMN source_session`,
		`ALTER TABLE facts_audit DROP COLUMN source_step`,
		`DROP INDEX facts_audit_by_fact`,
		`ALTER TABLE facts DROP COLUMN valid_from`,
		`ALTER TABLE facts DROP COLUMN valid_to`,
		`ALTER TABLE facts_audit DROP COLUMN before_state`,
		`ALTER TABLE facts_audit DROP COLUMN after_state`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, f := range []struct {
		id, text, by string
		created      time.Time
		supAt        any
	}{{"old", "Lives in Berlin.", "new", t0, t1.UnixMicro()}, {"new", "Lives in Paris.", "", t1, nil}} {
		if _, err := db.Exec(`INSERT INTO facts (tenant, id, user_id, text, confidence, created_at, reinforced_at, reinforcements,
			source_session, source_step, source_agent, superseded_by, superseded_at) VALUES ('', ?, 'u', ?, 0.8, ?, ?, 0, '', 0, '', ?, ?)`,
			f.id, f.text, f.created.UnixMicro(), f.created.UnixMicro(), f.by, f.supAt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO facts_audit (tenant, user_id, fact_id, action, by_whom, reason, successor, digest, at)
		VALUES ('', 'u', 'old', 'added', '', '', '', '', ?)`, t0.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	st, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old, err := st.Get(ctx, "", "old")
	if err != nil || !old.ValidFrom.Equal(t0) || !old.ValidTo.Equal(t1) {
		t.Fatalf("superseded fact after the migration = %+v, %v; want valid [%v, %v)", old, err, t0, t1)
	}
	cur, err := st.Get(ctx, "", "new")
	if err != nil || !cur.ValidFrom.Equal(t1) || !cur.ValidTo.IsZero() {
		t.Fatalf("valid fact after the migration = %+v, %v; want valid from %v, open", cur, err, t1)
	}
	a, err := st.Audit(ctx, "", "u")
	if err != nil || len(a) != 1 || a[0].Before != nil || a[0].After != nil || a[0].SessionID != "" || a[0].StepSeq != 0 {
		t.Fatalf("audit after the migration = %+v, %v", a, err)
	}
	m := facts.New(st, facts.Options{Clock: func() time.Time { return t1.Add(time.Minute) }})
	if fs, err := m.List(ctx, "", "u", false); err != nil || len(fs) != 1 || fs[0].ID != "new" {
		t.Fatalf("facts holding now = %+v, %v", fs, err)
	}
	turn := facts.Turn{UserID: "u", Messages: []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text("Hi.")}},
		Source: facts.Source{SessionID: "s1", StepSeq: 2}, Once: true}
	none := facts.ExtractorFunc(func(context.Context, facts.ExtractRequest) ([]facts.Decision, error) { return nil, nil })
	if x, err := m.Extract(ctx, none, turn); err != nil || x.Replayed {
		t.Fatalf("Extract after the migration = %+v, %v", x, err)
	}
	if x, err := m.Extract(ctx, none, turn); err != nil || !x.Replayed {
		t.Fatalf("Extract of the same turn again = %+v, %v; want a replay", x, err)
	}
}
