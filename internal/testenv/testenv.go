// Package testenv gives tests access to the optional external programs the
// agentmem test suite uses: a PostgreSQL server and a Chromium browser.
//
// Tests ask for what they need:
//
//	url := testenv.PostgresURL(t)     // skips (or fails in CI) when there is none
//	chrome := testenv.ChromiumPath(t)
//
// On a developer's machine a missing dependency makes the test skip, with a
// reason that says how to provide it. In CI (CI=true) a missing dependency is
// a failure instead: the CI script (./scripts/test.sh, run by .ci/run)
// installs and starts everything, so a skip there would hide a broken setup.
//
// ./scripts/test.sh sets the environment variables below; see docs/testing.md.
//
// The package depends on the standard library only, so any test package may
// import it.
package testenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const (
	// PostgresURLEnv names the variable holding the URL of a PostgreSQL
	// database that tests may use freely (create and drop tables).
	PostgresURLEnv = "AGENTMEM_TEST_POSTGRES_URL"

	// CitusURLEnv names the variable holding the URL of the coordinator
	// of a Citus cluster that tests may use freely (create, distribute
	// and drop tables): scripts/citus-start.sh starts one.
	CitusURLEnv = "AGENTMEM_TEST_CITUS_URL"

	// CitusSpareEnv names the variable holding host:port of a PostgreSQL
	// server with Citus installed (database and user as in
	// AGENTMEM_TEST_CITUS_URL) that is not yet a node of that cluster: the
	// rebalance test adds it as a worker.
	CitusSpareEnv = "AGENTMEM_TEST_CITUS_SPARE"

	// ChromiumEnv names the variable holding the path of a Chromium (or
	// Chrome) executable for browser tests.
	ChromiumEnv = "AGENTMEM_TEST_CHROMIUM"

	// CIEnv names the variable that marks a CI run.
	CIEnv = "CI"
)

// InCI reports whether the tests run in CI: the environment variable CI is
// "true" (in any letter case) or "1". scripts/test.sh uses the same rule.
func InCI() bool {
	v := strings.TrimSpace(os.Getenv(CIEnv))
	return strings.EqualFold(v, "true") || v == "1"
}

// PostgresURL returns the value of AGENTMEM_TEST_POSTGRES_URL, the URL of a
// database the test may use.
//
// When the variable is unset or empty the test cannot run: in CI it fails
// (the CI script must start PostgreSQL), elsewhere it is skipped with a reason
// that says how to run it.
func PostgresURL(t testing.TB) string {
	t.Helper()
	if u := strings.TrimSpace(os.Getenv(PostgresURLEnv)); u != "" {
		return u
	}
	if InCI() {
		t.Fatalf("testenv: this test needs PostgreSQL, but %s is not set and CI=true; "+
			"in CI a missing PostgreSQL is an error, not a skip: the CI script "+
			"(./scripts/test.sh, run by .ci/run) must install and start PostgreSQL "+
			"and export %s", PostgresURLEnv, PostgresURLEnv)
	}
	t.Skipf("testenv: skipping: needs PostgreSQL and %s is not set; "+
		"run ./scripts/test.sh, which starts a throwaway server when PostgreSQL "+
		"is installed (apt-get install postgresql), or set "+
		"%s=postgres://USER@HOST:PORT/DB?sslmode=disable (see docs/testing.md)",
		PostgresURLEnv, PostgresURLEnv)
	return ""
}

// CitusURL returns the value of AGENTMEM_TEST_CITUS_URL, the URL of a
// Citus coordinator the test may use. Unset, the test fails in CI (the
// CI script must build Citus and start a cluster) and is skipped
// elsewhere, with a reason that says how to run it.
func CitusURL(t testing.TB) string {
	t.Helper()
	return needEnv(t, CitusURLEnv, "a Citus cluster",
		"run ./scripts/test.sh, which builds Citus from ../shared/vendor (cached) and starts a local "+
			"cluster when PostgreSQL and its development files are installed and it runs as root, or "+
			"start one with scripts/citus-start.sh (see docs/testing.md)")
}

// CitusSpare returns the value of AGENTMEM_TEST_CITUS_SPARE (see
// CitusSpareEnv), skipping or failing the test without it as CitusURL
// does.
func CitusSpare(t testing.TB) string {
	t.Helper()
	return needEnv(t, CitusSpareEnv, "a spare Citus node",
		"run ./scripts/test.sh or scripts/citus-start.sh, which start one beside the cluster")
}

// needEnv returns the value of the variable name, or fails the test in
// CI and skips it elsewhere, saying what is missing and how to get it.
func needEnv(t testing.TB, name, what, how string) string {
	t.Helper()
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	if InCI() {
		t.Fatalf("testenv: this test needs %s, but %s is not set and CI=true; "+
			"in CI that is an error, not a skip: %s", what, name, how)
	}
	t.Skipf("testenv: skipping: needs %s and %s is not set; %s", what, name, how)
	return ""
}

// Program returns the path of the program name on PATH. Without it the
// test fails in CI (the CI script must install it) and is skipped
// elsewhere, saying how to get it.
func Program(t testing.TB, name, how string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if InCI() {
		t.Fatalf("testenv: this test needs %s, which is not on PATH, and CI=true; "+
			"in CI that is an error, not a skip: %s", name, how)
	}
	t.Skipf("testenv: skipping: needs %s, which is not on PATH; %s", name, how)
	return ""
}

// chromiumCandidates are looked for, in order, when AGENTMEM_TEST_CHROMIUM is
// unset outside CI: absolute paths are checked directly, bare names are looked
// up on PATH. Tests replace it.
var chromiumCandidates = []string{"/usr/bin/chromium", "chromium", "chromium-browser"}

// ChromiumPath returns the path of a Chromium executable: the value of
// AGENTMEM_TEST_CHROMIUM or, outside CI, the first of /usr/bin/chromium,
// chromium and chromium-browser on PATH that exists.
//
// A set AGENTMEM_TEST_CHROMIUM that names no executable file fails the test,
// in CI or not, since that is a broken setup rather than a missing one.
// When no browser is found the test fails in CI (the CI script must install
// Chromium) and is skipped elsewhere, with a reason that says how to run it.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	if p := strings.TrimSpace(os.Getenv(ChromiumEnv)); p != "" {
		if err := checkExecutable(p); err != nil {
			t.Fatalf("testenv: %s=%q is not usable: %v", ChromiumEnv, p, err)
		}
		return p
	}
	if InCI() {
		t.Fatalf("testenv: this test needs Chromium, but %s is not set and CI=true; "+
			"in CI a missing browser is an error, not a skip: the CI script "+
			"(./scripts/test.sh, run by .ci/run) must install Debian's chromium "+
			"and export %s=/usr/bin/chromium", ChromiumEnv, ChromiumEnv)
	}
	if p := findChromium(); p != "" {
		return p
	}
	t.Skipf("testenv: skipping: needs Chromium; %s is not set and none of %s was found; "+
		"install Debian's chromium (apt-get install chromium) or set %s to a Chromium "+
		"executable (./scripts/test.sh exports it when /usr/bin/chromium exists)",
		ChromiumEnv, strings.Join(chromiumCandidates, ", "), ChromiumEnv)
	return ""
}

// findChromium returns the first usable entry of chromiumCandidates, or "".
func findChromium() string {
	for _, c := range chromiumCandidates {
		if strings.ContainsRune(c, os.PathSeparator) {
			if checkExecutable(c) == nil {
				return c
			}
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// checkExecutable reports why path is not an executable regular file, or nil.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errors.New("no such file")
		}
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not executable (mode %v)", fi.Mode().Perm())
	}
	return nil
}
