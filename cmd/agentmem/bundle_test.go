package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
)

// seedMemories adds to the store at url what a bundle carries beside
// sessions: alice's facts (one superseded), her block and s1's (each
// edited), and a recall document put through the API.
func seedMemories(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	fst, err := facts.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer fst.Close()
	fm := facts.New(fst, facts.Options{})
	r, err := fm.Remember(ctx, facts.RememberRequest{UserID: "alice", Text: "Lives in Berlin."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fm.Supersede(ctx, facts.SupersedeRequest{ID: r.Fact.ID, Text: "Lives in Paris."}); err != nil {
		t.Fatal(err)
	}
	bst, err := blocks.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer bst.Close()
	bm := blocks.New(bst, blocks.Options{})
	for _, k := range []blocks.Key{{Owner: blocks.User("alice"), Label: "persona"}, {Owner: blocks.Session("s1"), Label: "task"}} {
		if _, err := bm.Set(ctx, blocks.SetRequest{Key: k, Value: "v1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := bm.Append(ctx, k, "v2", blocks.Edit{By: "agent"}); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := recall.Open(ctx, url, recall.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Upsert(ctx, recall.Doc{ID: "note-1", Text: "Alice prefers the blue dashboard", Metadata: map[string]string{recall.MetaUser: "alice"}}); err != nil {
		t.Fatal(err)
	}
}

// A bundle carries facts with their history, blocks with their versions
// and the documents put into recall, beside the sessions, through export
// and import; --tenant moves all of it.
func TestExportImportMemories(t *testing.T) {
	srcURL := newStoreURL(t, "src.db")
	seedSessions(t, srcURL)
	seedMemories(t, srcURL)
	file := filepath.Join(t.TempDir(), "backup.jsonl")
	code, _, stderr := runCLI(t, map[string]string{"AGENTMEM_STORE": srcURL}, "", "export", "--all", "-o", file)
	if code != 0 || !strings.Contains(stderr, "sessions=3 users=1 blocks=2 documents=1") {
		t.Fatalf("export: exit %d, %s", code, stderr)
	}
	for _, tc := range []struct {
		args   []string
		tenant string // of alice's records
	}{{nil, ""}, {[]string{"--tenant", "globex"}, "globex"}} {
		dstURL := newStoreURL(t, "dst.db")
		code, stdout, stderr := runCLI(t, nil, "", append([]string{"import", "--store", dstURL, file}, tc.args...)...)
		if code != 0 || !strings.Contains(stdout, "3 sessions imported (15 entries), 2 blocks, facts of 1 user, 1 document, 0 failed, 0 skipped") ||
			!strings.Contains(stdout, "imported  facts of user alice") || !strings.Contains(stdout, "imported  block task of session s1") {
			t.Fatalf("import %v: exit %d: %s %s", tc.args, code, stdout, stderr)
		}
		ctx := context.Background()
		fst, err := facts.Open(ctx, dstURL)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := fst.Facts(ctx, tc.tenant, "alice")
		fst.Close()
		if err != nil || len(fs) != 2 || fs[0].SupersededBy != fs[1].ID || fs[0].ValidTo.IsZero() {
			t.Fatalf("%v: alice's facts %+v, %v; want the superseded one and its successor", tc.args, fs, err)
		}
		bst, err := blocks.Open(ctx, dstURL)
		if err != nil {
			t.Fatal(err)
		}
		b, err := bst.Get(ctx, blocks.Key{Tenant: tc.tenant, Owner: blocks.User("alice"), Label: "persona"})
		h, _ := bst.History(ctx, b.Key)
		bst.Close()
		if err != nil || b.Version != 2 || len(h) != 2 {
			t.Fatalf("%v: alice's block %+v (%d changes), %v", tc.args, b, len(h), err)
		}
		// Both the document put through the API and the imported
		// sessions (indexed by the import) are found.
		search := []string{"recall", "search", "--store", dstURL, "--k", "1"}
		if tc.tenant != "" {
			search = append(search, "--tenant", tc.tenant)
		}
		code, stdout, _ = runCLI(t, nil, "", append(search, "blue dashboard")...)
		if code != 0 || !strings.Contains(stdout, `"id":"note-1"`) {
			t.Errorf("%v: search of the document: exit %d: %s", tc.args, code, stdout)
		}
		code, stdout, _ = runCLI(t, nil, "", append(search, "What is 2+2")...)
		if code != 0 || !strings.Contains(stdout, `"session_id":"s2"`) {
			t.Errorf("%v: search of a session: exit %d: %s", tc.args, code, stdout)
		}
	}
}

// A bundle cut short, or changed, imports nothing; one of a newer
// version is refused.
func TestImportRefusesBundle(t *testing.T) {
	srcURL := newStoreURL(t, "src.db")
	seedSessions(t, srcURL)
	seedMemories(t, srcURL)
	code, data, _ := runCLI(t, nil, "", "export", "--all", "--store", srcURL)
	if code != 0 {
		t.Fatal("export failed")
	}
	lines := strings.SplitAfter(data, "\n")
	for _, tc := range []struct {
		name, in, stderr string
	}{
		{"cut short", strings.Join(lines[:len(lines)-2], ""), "the bundle ends without its end line: it is cut short: nothing was imported"},
		{"changed", strings.Replace(data, `"value":"v1\nv2"`, `"value":"v1\nv3"`, 1), "history[1].after: is not the block's value"},
		{"newer", strings.Replace(data, `{"agentmem_export":2,`, `{"agentmem_export":3,`, 1), "version 3, newer than this build reads"},
	} {
		dstURL := newStoreURL(t, "dst.db")
		code, stdout, stderr := runCLI(t, nil, tc.in, "import", "--store", dstURL, "-")
		if code != 1 || !strings.Contains(stderr, tc.stderr) || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.name, code, stdout, stderr, tc.stderr)
		}
		if ids := sessionIDs(t, openTestStore(t, dstURL)); len(ids) != 0 {
			t.Errorf("%s: sessions imported: %v", tc.name, ids)
		}
	}
	// A file in place of standard input is read twice from it.
	file := filepath.Join(t.TempDir(), "b.jsonl")
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	dstURL := newStoreURL(t, "dst.db")
	if code, stdout, stderr := runCLI(t, nil, "", "import", "--store", dstURL, "--json", file); code != 0 || len(parseReport(t, stdout)) != 3+2+1+1 {
		t.Fatalf("import of the file: exit %d: %s %s", code, stdout, stderr)
	}
	if ids := sessionIDs(t, openTestStore(t, dstURL)); !reflect.DeepEqual(ids, []string{"s1", "s2", "s3"}) {
		t.Fatalf("sessions: %v", ids)
	}
}
