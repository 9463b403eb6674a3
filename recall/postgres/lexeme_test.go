package postgres

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/recall"
)

// Lexemes go into tsvector and tsquery literals verbatim, with quotes and
// backslashes doubled, and the same text always gives the same literal.
func TestQuoteLexeme(t *testing.T) {
	for in, want := range map[string]string{
		"plain":     `'plain'`,
		"it's":      `'it''s'`,
		`a\b`:       `'a\\b'`,
		`'\'`:       `'''\\'''`,
		"":          `''`,
		"naïve-ütf": `'naïve-ütf'`,
	} {
		if got := quoteLexeme(in); got != want {
			t.Errorf("quoteLexeme(%q) = %s, want %s", in, got, want)
		}
	}
}

// lexemeSummary is a tsvector as "lexeme:tf ...", to compare in tests.
func lexemeSummary(v pgtype.TSVector) string {
	var b strings.Builder
	for i, l := range v.Lexemes {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(l.Word + ":" + strconv.Itoa(len(l.Positions)))
		for j, p := range l.Positions {
			if p.Position != uint16(j+1) || (p.Weight != 0 && p.Weight != pgtype.TSVectorWeightD) {
				b.WriteString("!bad-position")
			}
		}
	}
	return b.String()
}

// A tsvector holds each distinct term once, in PostgreSQL's order
// (bytewise: a prefix first), verbatim, with positions 1..tf.
func TestTsvectorLexemes(t *testing.T) {
	got := tsvector([]string{"b", "a'", "b", "ab", "a", "ü", `a\`})
	if want := `a:1 a':1 a\:1 ab:1 b:2 ü:1`; lexemeSummary(got) != want || !got.Valid {
		t.Errorf("tsvector = %s (valid %v), want %s", lexemeSummary(got), got.Valid, want)
	}
}

// A term frequency above 256, tsvector's limit of positions, is capped
// there; lexemes are sorted and each appears once.
func TestTsvectorCapsPositions(t *testing.T) {
	terms := []string{"z"}
	for range 300 {
		terms = append(terms, "a")
	}
	if got, want := lexemeSummary(tsvector(terms)), "a:256 z:1"; got != want {
		t.Errorf("tsvector = %s, want %s", got, want)
	}
	if got := tsvector(nil); len(got.Lexemes) != 0 || !got.Valid {
		t.Errorf("tsvector(nil) = %+v, want an empty tsvector", got)
	}
}

// An embedding's real[] literal reads back, as float32s, as the same
// bits, extremes included.
func TestRealArray(t *testing.T) {
	v := []float32{0, 1, -0.5, 0.1, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1.0000001, 3.4e-39}
	lit := realArray(v)
	if !strings.HasPrefix(lit, "{") || !strings.HasSuffix(lit, "}") {
		t.Fatalf("realArray = %s, want {...}", lit)
	}
	parts := strings.Split(strings.Trim(lit, "{}"), ",")
	if len(parts) != len(v) {
		t.Fatalf("realArray = %s: %d elements, want %d", lit, len(parts), len(v))
	}
	for i, p := range parts {
		f, err := strconv.ParseFloat(p, 32)
		if err != nil || math.Float32bits(float32(f)) != math.Float32bits(v[i]) {
			t.Errorf("element %d: %q reads back as %v (%v), want %v", i, p, float32(f), err, v[i])
		}
	}
	if got := realArray(nil); got != "{}" {
		t.Errorf("realArray(nil) = %s, want {}", got)
	}
}

// The terms a document is indexed with reach the server as written
// (they go in tsvector's binary form): non-ASCII lexemes verbatim, the
// term frequency as positions 1..tf, capped at 256.
func TestStoredTerms(t *testing.T) {
	url := testenv.PostgresURL(t)
	b, err := Open(context.Background(), url, Options{Schema: testenv.FreshSchema(t, url), PGVector: PGVectorOff})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	text := "Grüße naïve 東京 " + strings.Repeat("loop ", 300) + "zeta"
	ix := recall.New(b, recall.Options{})
	if err := ix.Upsert(ctx, recall.Doc{ID: "d1", Text: text}); err != nil {
		t.Fatal(err)
	}
	var stored pgtype.TSVector
	var n int
	if err := b.pool.QueryRow(ctx, "SELECT terms, len FROM recall_docs WHERE tenant = '' AND id = 'd1'").Scan(&stored, &n); err != nil {
		t.Fatal(err)
	}
	terms := recall.Tokenize(text)
	if got, want := lexemeSummary(stored), lexemeSummary(tsvector(terms)); got != want {
		t.Errorf("stored terms %s, want %s", got, want)
	}
	if !strings.Contains(lexemeSummary(stored), ":256") || n != len(terms) {
		t.Errorf("stored terms %s, len %d: want a lexeme with 256 positions and len %d", lexemeSummary(stored), n, len(terms))
	}
	hits, err := ix.Search(ctx, recall.Query{Text: "東京 grüße", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Doc.ID != "d1" {
		t.Fatalf("search: %d hits, want d1", len(hits))
	}
}
