package recallview

import (
	"strings"
	"testing"
)

// A tool call's line is strings.TrimSpace(name + " " + args), however
// the space is spread over the two.
func TestAddCall(t *testing.T) {
	pieces := []string{"", " ", "\t\n", "\u00a0", "\u2003x", "grep", " grep ", "a b", "x\u3000", "\xff", " \xff ", "{\"q\":1}\n"}
	for _, name := range pieces {
		for _, args := range pieces {
			want := strings.TrimSpace(name + " " + args)
			got := ""
			if lines := addCall(nil, name, args); len(lines) == 1 {
				got = joinLines(lines)
			} else if len(lines) > 1 {
				t.Fatalf("addCall(%q, %q): %d lines", name, args, len(lines))
			}
			if got != want {
				t.Errorf("addCall(%q, %q) = %q, want %q", name, args, got, want)
			}
		}
	}
}
