package postgres

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/sqlite"
	"github.com/agentmem/agentmem/tokenizer"
)

// TestTransferSQLitePostgresSQLite moves a session, with its compaction
// and a truncated copy, from SQLite to PostgreSQL and back through JSONL:
// every hop exports the very same bytes, and the working set is the same.
func TestTransferSQLitePostgresSQLite(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	dir := t.TempDir()
	src, err := sqlite.Open(ctx, filepath.Join(dir, "src.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	opts := agentmem.Options{Counter: tokenizer.NewHeuristic()}
	mem, err := store.CreateMemory(ctx, src, store.CreateRequest{ID: "moving", UserID: "alice", Agent: "coder", Metadata: map[string]string{"k": "v"}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	mem.Add(ctx, &agentmem.SystemPromptStep{Content: "sys"})
	mem.Add(ctx, &agentmem.TaskStep{Task: "move me, naïvely 🚚"})
	for i := range 12 {
		id := fmt.Sprintf("c%d", i)
		if _, err := mem.Add(ctx, &agentmem.ActionStep{ModelOutput: "step", ToolCalls: []agentmem.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"a.go"}`}},
			Results: []agentmem.ToolResult{{CallID: id, Content: fmt.Sprintf("result %d %s", i, bytes.Repeat([]byte("x"), 300))}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mem.Prune(ctx, agentmem.PruneOldObservations(4, 50)); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.SetSummary(ctx, "did eight things", 6); err != nil {
		t.Fatal(err)
	}
	want := mem.Memory.Snapshot()

	export := func(st *store.Store) []byte {
		t.Helper()
		var buf bytes.Buffer
		if err := store.Export(ctx, st, "", "moving", &buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	first := export(src)

	pg, err := OpenDriver(ctx, url, Options{Schema: freshSchema(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if _, err := store.Import(ctx, store.New(pg), bytes.NewReader(first), store.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	second := export(store.New(pg))
	if !bytes.Equal(first, second) {
		t.Fatalf("SQLite and PostgreSQL exports differ:\n%s\n---\n%s", first, second)
	}

	back, err := sqlite.Open(ctx, filepath.Join(dir, "back.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if _, err := store.Import(ctx, back, bytes.NewReader(second), store.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if third := export(back); !bytes.Equal(first, third) {
		t.Fatalf("the session came back from PostgreSQL changed")
	}
	// The working set loads the same from every hop. (NextNumber may be
	// higher after a reload, the compaction record having used a sequence
	// number; a journaled memory takes its numbers from the store anyway.)
	want.NextNumber = 0
	for name, st := range map[string]*store.Store{"postgres": store.New(pg), "sqlite again": back} {
		b, err := store.OpenMemory(ctx, st, "moving", opts)
		if err != nil {
			t.Fatal(err)
		}
		got := b.Memory.Snapshot()
		got.NextNumber = 0
		if got, w := mustSnapshot(t, got), mustSnapshot(t, want); got != w {
			t.Fatalf("%s: working set differs:\n%s\n%s", name, got, w)
		}
	}
}

func mustSnapshot(t *testing.T, s *agentmem.Snapshot) string {
	t.Helper()
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
