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
