package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps checks that the client and the wire types link none of
// agentmem's domain: a program that only talks to a server links the
// client, package api and the standard library (and uuid, for keys), not
// the server (nor Prometheus with it), the core, the stores and their SQL
// drivers, recall, facts, the tokenizers or the renderers. The arrows
// point inward: the domain's conversions to the wire live with the server
// and with the store adapter (client/remote), not here.
func TestDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list the dependencies")
	}
	const module = "github.com/agentmem/agentmem"
	allowed := map[string]bool{
		module + "/api":          true,
		module + "/client":       true,
		"github.com/google/uuid": true,
	}
	for _, pkg := range []string{module + "/client", module + "/api"} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			// The standard library's import paths have no dot in their
			// first element.
			first, _, _ := strings.Cut(dep, "/")
			if !strings.Contains(first, ".") || allowed[dep] {
				continue
			}
			t.Errorf("%s depends on %s", pkg, dep)
		}
	}
}
