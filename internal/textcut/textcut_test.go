package textcut

import (
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"}, // é is 2 bytes at 1..2
		{"héllo", 3, "hé"},
		{"日本語", 4, "日"},
		{"日本語", 2, ""},
		{"a😀b", 4, "a"},
		{"a😀b", 5, "a😀"},
		{"abc", 0, ""},
		{"abc", -1, ""},
	} {
		if got := Prefix(c.s, c.n); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func FuzzPrefix(f *testing.F) {
	f.Add("héllo wörld 日本語 😀", 7)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if !utf8.ValidString(s) || n < 0 {
			return
		}
		p := Prefix(s, n)
		if len(p) > n || !utf8.ValidString(p) || s[:len(p)] != p {
			t.Fatalf("Prefix(%q, %d) = %q", s, n, p)
		}
		if len(p) < len(s) && len(p)+utf8.UTFMax <= n {
			t.Fatalf("Prefix(%q, %d) = %q cut more than a character short", s, n, p)
		}
	})
}
