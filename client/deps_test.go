package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoServer checks that a program using the client does not link
// the server: the client shares the API's wire types with the server
// through package api, not by importing it (and Prometheus with it).
func TestImportsNoServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list the client's dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/agentmem/agentmem/client").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "github.com/agentmem/agentmem/server",
			strings.HasPrefix(dep, "github.com/prometheus/"),
			strings.HasPrefix(dep, "github.com/agentmem/agentmem/mcp"),
			strings.HasPrefix(dep, "github.com/agentmem/agentmem/inspector"):
			t.Errorf("the client depends on %s", dep)
		}
	}
}
