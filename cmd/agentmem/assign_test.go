package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/sqlite"
)

// Sessions created before the first key have no tenant; keys
// assign-sessions moves them into one.
func TestKeysAssignSessions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "agentmem.db")
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []store.CreateRequest{{ID: "demo", UserID: "alice"}, {ID: "run-1"}, {ID: "theirs", Tenant: "globex"}} {
		if _, err := st.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Append(ctx, store.AppendRequest{Tenant: req.Tenant, SessionID: req.ID, Steps: []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: req.ID + "-t"}, Task: "task of " + req.ID}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENTMEM_STORE": "sqlite://" + db}
	backup := filepath.Join(dir, "backup.jsonl")

	code, _, stderr := runCLI(t, env, "", "keys", "assign-sessions", "--backup", backup)
	if code != 2 || !strings.Contains(stderr, "--tenant is required") {
		t.Fatalf("without --tenant: exit %d, %q", code, stderr)
	}
	code, stdout, stderr := runCLI(t, env, "", "keys", "assign-sessions", "--tenant", "acme", "--backup", backup)
	if code != 0 || !strings.Contains(stdout, "demo: moved into tenant acme") || !strings.Contains(stdout, "run-1: moved into tenant acme") ||
		strings.Contains(stdout, "theirs") || !strings.Contains(stderr, "2 of 2 sessions moved") {
		t.Fatalf("assign-sessions: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	data, err := os.ReadFile(backup)
	if err != nil || strings.Count(string(data), `"agentmem_export":1`) != 2 || !strings.Contains(string(data), "task of demo") {
		t.Fatalf("backup: %v\n%s", err, data)
	}

	st, err = sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, tenant := range map[string]string{"demo": "acme", "run-1": "acme", "theirs": "globex"} {
		s, err := st.Get(ctx, tenant, id)
		if err != nil || s.Tenant != tenant || s.LastSeq != 1 {
			t.Fatalf("%s after the move: %+v, %v; want tenant %s, its step", id, s, err, tenant)
		}
	}
	if s, _ := st.Get(ctx, "acme", "demo"); s.UserID != "alice" {
		t.Fatalf("demo lost its user: %+v", s)
	}

	// Nothing left to move; a named missing session fails; an existing
	// backup file is never overwritten.
	code, stdout, _ = runCLI(t, env, "", "keys", "assign-sessions", "--tenant", "acme", "--backup", filepath.Join(dir, "b2.jsonl"))
	if code != 0 || !strings.Contains(stdout, "nothing to move") {
		t.Fatalf("second run: exit %d %q", code, stdout)
	}
	code, stdout, _ = runCLI(t, env, "", "keys", "assign-sessions", "--tenant", "acme", "--backup", filepath.Join(dir, "b3.jsonl"), "nope")
	if code != 1 || !strings.Contains(stdout, "nope: failed: no such session") {
		t.Fatalf("a missing session: exit %d %q", code, stdout)
	}
	code, _, stderr = runCLI(t, env, "", "keys", "assign-sessions", "--tenant", "globex", "--backup", backup, "demo")
	if code != 1 || !strings.Contains(stderr, "backup") {
		t.Fatalf("over an existing backup: exit %d %q", code, stderr)
	}
	if s, _ := st.Get(ctx, "acme", "demo"); s.Tenant != "acme" {
		t.Fatalf("demo moved although its backup could not be written: %+v", s)
	}
}

// A damaged session without a tenant is not left behind unsaid: the
// others move, it is named as failed, and the exit code is 1.
func TestKeysAssignSessionsDamaged(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "agentmem.db")
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"good", "bad"} {
		if _, err := st.Create(ctx, store.CreateRequest{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE sessions SET metadata = '{"m":' WHERE id = 'bad'`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	env := map[string]string{"AGENTMEM_STORE": "sqlite://" + db}
	code, stdout, stderr := runCLI(t, env, "", "keys", "assign-sessions", "--tenant", "acme", "--backup", filepath.Join(t.TempDir(), "b.jsonl"))
	if code != 1 || !strings.Contains(stdout, "good: moved into tenant acme") || !strings.Contains(stdout, "bad: failed:") || !strings.Contains(stdout, "damaged") {
		t.Fatalf("assign-sessions: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

// TestAssignSessionsDefaultBackup: without --backup the backup goes to the
// data directory's backups/, not the current directory.
func TestAssignSessionsDefaultBackup(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "a.db")
	st, err := store.Open(context.Background(), "sqlite://"+db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(context.Background(), store.CreateRequest{ID: "demo"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	data := filepath.Join(dir, "xdg")
	env := map[string]string{"AGENTMEM_STORE": "sqlite://" + db, "XDG_DATA_HOME": data}
	code, _, stderr := runCLI(t, env, "", "keys", "assign-sessions", "--tenant", "acme")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(data, "agentmem", "backups", "agentmem-assign-*.jsonl"))
	if len(files) != 1 || !strings.Contains(stderr, files[0]) {
		t.Fatalf("backups %v; stderr %q should name the one backup", files, stderr)
	}
	if cwd, _ := filepath.Glob("agentmem-assign-*.jsonl"); len(cwd) != 0 {
		t.Errorf("a backup was written into the current directory: %v", cwd)
	}
}
