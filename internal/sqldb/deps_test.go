package sqldb_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/testenv"
)

// TestDriverDeps checks that each backend links only its own database's
// driver: the SQLite backends no pgx (github.com/jackc/...), the
// PostgreSQL backends no modernc.org/sqlite (modernc.org/...), and this
// package, which they all share, neither. A shared package that imports
// a driver, or a backend that imports the other database's package, fails
// it.
func TestDriverDeps(t *testing.T) {
	goTool := testenv.Program(t, "go", "the go command lists the backends' dependencies")
	const (
		pgx    = "github.com/jackc/"
		sqlite = "modernc.org/"
	)
	forbidden := map[string][]string{"internal/sqldb": {pgx, sqlite}}
	for _, c := range []string{"store", "recall", "facts", "auth", "blocks"} {
		forbidden[c+"/sqlite"] = []string{pgx}
		forbidden[c+"/postgres"] = []string{sqlite}
	}
	const mod = "github.com/agentmem/agentmem/"
	args := []string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}
	for pkg := range forbidden {
		args = append(args, mod+pkg)
	}
	out, err := exec.Command(goTool, args...).Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		t.Fatalf("go list: %v\n%s", err, ee.Stderr)
	} else if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(forbidden) {
		t.Fatalf("go list listed %d packages, want %d:\n%s", len(lines), len(forbidden), out)
	}
	for _, line := range lines {
		deps := strings.Fields(line)
		pkg := strings.TrimPrefix(deps[0], mod)
		for _, dep := range deps[1:] {
			for _, f := range forbidden[pkg] {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
