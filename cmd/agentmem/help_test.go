package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/internal/cli/clitest"
)

// No --help text names a path of the machine it was built or run on.
func TestHelpNamesNoMachinePath(t *testing.T) {
	a := &cli.App{LookupEnv: func(string) (string, bool) { return "", false }}
	clitest.HelpNamesNoMachinePath(t, newRoot(a, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}), 20)
}
