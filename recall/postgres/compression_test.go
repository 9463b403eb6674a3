package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/recall"
)

// TestLargeDocumentCompression checks that a large document's text and
// terms are stored compressed with lz4 where the server has it
// (migration 0002), and that the document is found and read back whole.
func TestLargeDocumentCompression(t *testing.T) { largeDocumentCompression(t, testenv.PostgresURL(t)) }

// TestLargeDocumentCompressionCitus is TestLargeDocumentCompression on a
// Citus cluster, where the documents are stored in the workers' shards.
func TestLargeDocumentCompressionCitus(t *testing.T) {
	largeDocumentCompression(t, testenv.CitusURL(t))
}

func largeDocumentCompression(t *testing.T, url string) {
	b, err := Open(context.Background(), url, Options{Schema: testenv.FreshSchema(t, url), PGVector: PGVectorOff})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	var words []string
	for i := range 2000 { // distinct terms: a tsvector past 2 kB
		words = append(words, "term"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26%26)))
	}
	text := strings.Join(words, " ")
	ix := recall.New(b, recall.Options{})
	if err := ix.Upsert(ctx, recall.Doc{ID: "d1", Text: text}); err != nil {
		t.Fatal(err)
	}
	want := testenv.LargeValueCompression(t, url)
	var textMethod, termsMethod *string
	if err := b.pool.QueryRow(ctx, "SELECT pg_column_compression(text), pg_column_compression(terms) FROM recall_docs WHERE tenant = '' AND id = 'd1'").Scan(&textMethod, &termsMethod); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]*string{"text": textMethod, "terms": termsMethod} {
		if got == nil {
			t.Errorf("the %s column is stored uncompressed, want %s", name, want)
		} else if *got != want {
			t.Errorf("the %s column's compression is %s, want %s", name, *got, want)
		}
	}
	hits, err := ix.Search(ctx, recall.Query{Text: words[1234], K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Doc.Text != text {
		t.Fatalf("search for %q: %d hits, want d1 with its %d bytes of text", words[1234], len(hits), len(text))
	}
}

// TestGINPendingLists checks that the GIN indexes keep short pending lists
// (migration 0003), on PostgreSQL and, in every shard, on Citus.
func TestGINPendingLists(t *testing.T) { ginPendingLists(t, testenv.PostgresURL(t), false) }

// TestGINPendingListsCitus is TestGINPendingLists on a Citus cluster.
func TestGINPendingListsCitus(t *testing.T) { ginPendingLists(t, testenv.CitusURL(t), true) }

func ginPendingLists(t *testing.T, url string, citus bool) {
	schema := testenv.FreshSchema(t, url)
	b, err := Open(context.Background(), url, Options{Schema: schema, PGVector: PGVectorOff})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	q := `SELECT c.relname || ' ' || coalesce(c.reloptions::text, '{}') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = '` + schema + `' AND (c.relname LIKE 'recall_docs_terms%' OR c.relname LIKE 'recall_docs_metadata%') ORDER BY 1`
	// On Citus, the shards' indexes, on the workers.
	query, args := q, []any(nil)
	if citus {
		query, args = `SELECT result FROM run_command_on_workers($1)`, []any{`SELECT string_agg(x, '|') FROM (` + q + `) AS s (x)`}
	}
	rows, err := b.pool.Query(ctx, query, args...)
	if err != nil {
		t.Fatal(err)
	}
	var indexes []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		if r != "" {
			indexes = append(indexes, strings.Split(r, "|")...)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(indexes) < 2 {
		t.Fatalf("found %d GIN indexes of recall_docs (%v), want the terms' and the metadata's", len(indexes), indexes)
	}
	for _, ix := range indexes {
		if !strings.Contains(ix, "gin_pending_list_limit=256") {
			t.Errorf("index %s: want gin_pending_list_limit=256", ix)
		}
	}
}
