package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyCommandsCreateNoStore: commands that only read fail clearly
// on a store that does not exist, and leave no file (or data directory)
// behind.
func TestReadOnlyCommandsCreateNoStore(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.db")
	home := filepath.Join(dir, "home")
	for _, args := range [][]string{
		{"inspect", "s1", "--store", "sqlite://" + missing},
		{"export", "--all", "--store", "sqlite://" + missing},
		{"recall", "search", "anything", "--store", "sqlite://" + missing},
		{"feed", "cursor", "recall", "--store", "sqlite://" + missing},
		{"inspect", "s1"}, // the default store, which does not exist yet
	} {
		code, stdout, stderr := runCLI(t, map[string]string{"HOME": home}, "", args...)
		if code != 1 || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q; want exit 1 and nothing", args, code, stdout)
		}
		if !strings.Contains(stderr, "no store at ") || !strings.Contains(stderr, "creates none") {
			t.Errorf("%v: stderr %q does not say there is no store", args, stderr)
		}
	}
	for _, p := range []string{missing, home} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists after read-only commands (%v)", p, err)
		}
	}
}
