package testenv

import (
	"context"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// These tests check the environment scripts/test.sh sets up, as the rest of
// the suite will find it. Like any test that needs PostgreSQL or Chromium they
// skip without them, and fail in CI.

// TestLivePostgresReachable checks that AGENTMEM_TEST_POSTGRES_URL is a
// postgres URL whose server accepts TCP connections. (Speaking the protocol
// would need a driver; this package has no dependencies.)
func TestLivePostgresReachable(t *testing.T) {
	raw := PostgresURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", PostgresURLEnv, err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		t.Fatalf("%s=%q: scheme %q, want postgres or postgresql", PostgresURLEnv, raw, u.Scheme)
	}
	if strings.Trim(u.Path, "/") == "" {
		t.Errorf("%s=%q names no database", PostgresURLEnv, raw)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		t.Skipf("%s=%q uses no TCP host; not checking it", PostgresURLEnv, raw)
	}
	if port == "" {
		port = "5432"
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 10*time.Second)
	if err != nil {
		t.Fatalf("cannot connect to the server of %s=%q: %v", PostgresURLEnv, raw, err)
	}
	conn.Close()
}

// TestLiveChromiumRuns checks that the browser ChromiumPath finds starts and
// reports a version.
func TestLiveChromiumRuns(t *testing.T) {
	path := ChromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", path, err)
	}
	if !strings.Contains(strings.ToLower(string(out)), "chrom") {
		t.Errorf("%s --version printed %q, not a Chromium version", path, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}
