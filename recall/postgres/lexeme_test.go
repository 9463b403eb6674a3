package postgres

import "testing"

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
