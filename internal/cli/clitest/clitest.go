// Package clitest runs agentmem's commands in tests: a command line
// in-process, and checks every command's --help.
package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Execute is a command's entry point as its tests call it. It runs the
// command line args with the given input, outputs and environment, and
// returns the exit code.
type Execute func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int

// Run runs the command line args in-process with execute, the
// environment env (and no other variable) and stdin as standard input.
func Run(t testing.TB, execute Execute, env map[string]string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	code = execute(context.Background(), args, strings.NewReader(stdin), &out, &errb, lookup)
	return code, out.String(), errb.String()
}

// HelpNamesNoMachinePath checks that no --help text of root and its
// subcommands names a path of the machine it was built or run on. Such
// paths are the repository's directory and its parent (where the project's
// own data and tools live), the working directory, the home directory and
// the temporary directory. A reader elsewhere has none of them. The test
// runs in the command's directory, cmd/NAME; it fails if fewer than
// minCommands commands were walked.
func HelpNamesNoMachinePath(t *testing.T, root *cobra.Command, minCommands int) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Dir(filepath.Dir(wd)) // cmd/NAME -> the repository
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
	if n < minCommands {
		t.Fatalf("only %d commands walked", n)
	}
}

// DecodeLine decodes stdout, which must be one line of JSON, into a T. It
// fails on a field T does not have, so a report's fields and their Go type
// agree.
func DecodeLine[T any](t testing.TB, stdout string) T {
	t.Helper()
	var v T
	if strings.Count(stdout, "\n") != 1 || !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("stdout is not one line: %q", stdout)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	return v
}
