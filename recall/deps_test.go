package recall_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoSessionsOrModels checks that the search engine depends on
// neither the session store nor a model client: it indexes documents and
// embeds through agentmem.Embedder, and what follows a session log into
// it, or calls a model for it, builds on it from outside.
func TestImportsNoSessionsOrModels(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list recall's dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/agentmem/agentmem/recall").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"github.com/agentmem/agentmem/llm",
		"github.com/agentmem/agentmem/store",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("recall depends on %s", dep)
			}
		}
	}
}
