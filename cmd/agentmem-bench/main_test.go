package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/internal/cli/clitest"
)

// runCLI runs the command line in-process with the given environment.
func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, execute, env, stdin, args...)
}

// No --help text names a path of the machine it was built or run on.
func TestHelpNamesNoMachinePath(t *testing.T) {
	a := &cli.App{LookupEnv: func(string) (string, bool) { return "", false }}
	clitest.HelpNamesNoMachinePath(t, newRoot(a, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}), 8)
}

// The root's help lists every measurement; a flag can come from its
// AGENTMEM_* variable, as in agentmem.
func TestHelpAndEnvironment(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "", "--help")
	if code != 0 || stderr != "" {
		t.Fatalf("--help: exit %d, %q", code, stderr)
	}
	for _, name := range []string{"load", "compare", "proxy", "tokenize", "trace", "eval", "AGENTMEM_"} {
		if !strings.Contains(stdout, name) {
			t.Errorf("--help does not name %q:\n%s", name, stdout)
		}
	}
	code, _, stderr = runCLI(t, map[string]string{"AGENTMEM_STEPS": "-1"}, "", "trace")
	if code != 2 || !strings.Contains(stderr, "agentmem-bench: --steps must not be negative") {
		t.Errorf("AGENTMEM_STEPS=-1: exit %d, %q", code, stderr)
	}
}
