package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// No --help text names a path of the machine it was built or run on: the
// repository's directory and its parent (where the project's own data and
// tools live), the working directory, the home directory, the temporary
// directory. A reader elsewhere has none of them.
func TestHelpNamesNoMachinePath(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Dir(filepath.Dir(wd)) // cmd/agentmem -> the repository
	home, _ := os.UserHomeDir()
	forbidden := []string{repo, wd, "../shared", "gen_trace.py"}
	if parent := filepath.Dir(repo); parent != "/" && parent != os.TempDir() && parent != "/tmp" {
		forbidden = append(forbidden, parent+"/")
	}
	if home != "" && home != "/" {
		forbidden = append(forbidden, home)
	}
	if tmp := os.TempDir(); tmp != "/tmp" { // /tmp in an example is anyone's
		forbidden = append(forbidden, tmp)
	}
	a := &app{lookupEnv: func(string) (string, bool) { return "", false }}
	root := newRoot(a, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		var out bytes.Buffer
		c.SetOut(&out)
		if err := c.Help(); err != nil {
			t.Fatalf("%s: %v", c.CommandPath(), err)
		}
		n++
		for _, f := range forbidden {
			if strings.Contains(out.String(), f) {
				t.Errorf("%s --help names %q:\n%s", c.CommandPath(), f, out.String())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if n < 20 {
		t.Fatalf("only %d commands walked", n)
	}
}
