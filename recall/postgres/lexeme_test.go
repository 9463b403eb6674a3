package postgres

import (
	"math"
	"strconv"
	"strings"
	"testing"
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
	if got, want := tsvector([]string{"b", "a'", "b"}), `'a''':1 'b':1,2`; got != want {
		t.Errorf("tsvector = %s, want %s", got, want)
	}
}

// A term frequency above 256, tsvector's limit of positions, is capped
// there; lexemes are sorted and each appears once.
func TestTsvectorCapsPositions(t *testing.T) {
	terms := []string{"z"}
	for range 300 {
		terms = append(terms, "a")
	}
	got := tsvector(terms)
	want := "'a':1"
	for p := 2; p <= 256; p++ {
		want += "," + strconv.Itoa(p)
	}
	want += " 'z':1"
	if got != want {
		t.Errorf("tsvector = %.80s..., want %.80s...", got, want)
	}
	if got := tsvector(nil); got != "" {
		t.Errorf("tsvector(nil) = %q, want empty", got)
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
