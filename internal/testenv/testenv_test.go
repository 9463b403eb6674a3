package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records a Skip or Fatal instead of acting on the real test. Like the
// real ones, its Skip and Fatal methods stop the calling goroutine, so code
// after them does not run; call the function under test through run.
type fakeTB struct {
	testing.TB // the real test, for methods not overridden below

	skipped bool
	failed  bool
	msg     string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Skip(args ...any)                 { f.skip(fmt.Sprint(args...)) }
func (f *fakeTB) Skipf(format string, args ...any) { f.skip(fmt.Sprintf(format, args...)) }
func (f *fakeTB) SkipNow()                         { f.skip("") }
func (f *fakeTB) Fatal(args ...any)                { f.fatal(fmt.Sprint(args...)) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal(fmt.Sprintf(format, args...))
}
func (f *fakeTB) FailNow() { f.fatal("") }
func (f *fakeTB) Error(args ...any) {
	f.failed = true
	f.msg += fmt.Sprint(args...)
}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.failed = true
	f.msg += fmt.Sprintf(format, args...)
}
func (f *fakeTB) Fail()        { f.failed = true }
func (f *fakeTB) Failed() bool { return f.failed }
func (f *fakeTB) Skipped() bool {
	return f.skipped
}

func (f *fakeTB) skip(msg string) {
	f.skipped = true
	f.msg = msg
	runtime.Goexit()
}

func (f *fakeTB) fatal(msg string) {
	f.failed = true
	f.msg = msg
	runtime.Goexit()
}

// run calls fn with a fakeTB on its own goroutine, so that a Skip or Fatal
// ends only that goroutine, and returns what fn returned and the fake.
func run(t *testing.T, fn func(testing.TB) string) (string, *fakeTB) {
	t.Helper()
	f := &fakeTB{TB: t}
	var got string
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = fn(f)
	}()
	<-done
	return got, f
}

type outcome int

const (
	returned outcome = iota
	skipped
	failed
)

func (o outcome) String() string {
	return [...]string{"returned", "skipped", "failed"}[o]
}

func outcomeOf(f *fakeTB) outcome {
	switch {
	case f.failed:
		return failed
	case f.skipped:
		return skipped
	}
	return returned
}

func TestInCI(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{
		{"", false},
		{"false", false},
		{"0", false},
		{"no", false},
		{"yes", false},
		{"true", true},
		{"TRUE", true},
		{"True", true},
		{" true\n", true},
		{"1", true},
	} {
		t.Setenv("CI", tc.value)
		if got := InCI(); got != tc.want {
			t.Errorf("CI=%q: InCI() = %v, want %v", tc.value, got, tc.want)
		}
	}
}

func TestPostgresURL(t *testing.T) {
	const url = "postgres://postgres@127.0.0.1:5432/agentmem_test?sslmode=disable"
	for _, tc := range []struct {
		name     string
		ci       string
		env      string
		want     outcome
		wantURL  string
		contains []string
	}{
		{name: "set", env: url, want: returned, wantURL: url},
		{name: "set in CI", ci: "true", env: url, want: returned, wantURL: url},
		{name: "set with spaces", env: " " + url + "\n", want: returned, wantURL: url},
		{
			name: "unset skips", want: skipped,
			contains: []string{PostgresURLEnv, "./scripts/test.sh", "apt-get install postgresql"},
		},
		{
			name: "blank skips", env: "  ", want: skipped,
			contains: []string{PostgresURLEnv},
		},
		{
			name: "unset fails in CI", ci: "true", want: failed,
			contains: []string{PostgresURLEnv, "CI script", "must install and start PostgreSQL"},
		},
		{
			name: "unset fails with CI=1", ci: "1", want: failed,
			contains: []string{"CI script"},
		},
		{
			name: "CI=false skips", ci: "false", want: skipped,
			contains: []string{"./scripts/test.sh"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv(PostgresURLEnv, tc.env)
			got, f := run(t, PostgresURL)
			if o := outcomeOf(f); o != tc.want {
				t.Fatalf("outcome = %v (message %q), want %v", o, f.msg, tc.want)
			}
			if got != tc.wantURL {
				t.Errorf("PostgresURL = %q, want %q", got, tc.wantURL)
			}
			for _, s := range tc.contains {
				if !strings.Contains(f.msg, s) {
					t.Errorf("message %q does not mention %q", f.msg, s)
				}
			}
		})
	}
}

func TestCitusURL(t *testing.T) {
	const url = "postgres://postgres@127.0.0.1:5433/agentmem_test?sslmode=disable"
	for _, tc := range []struct {
		name, ci, env string
		get           func(testing.TB) string
		varName       string
		want          outcome
		contains      []string
	}{
		{name: "set", env: url, get: CitusURL, varName: CitusURLEnv, want: returned},
		{name: "unset skips", get: CitusURL, varName: CitusURLEnv, want: skipped,
			contains: []string{CitusURLEnv, "./scripts/test.sh", "scripts/citus-start.sh"}},
		{name: "unset fails in CI", ci: "true", get: CitusURL, varName: CitusURLEnv, want: failed,
			contains: []string{CitusURLEnv, "CI=true"}},
		{name: "spare set", env: "127.0.0.1:5434", get: CitusSpare, varName: CitusSpareEnv, want: returned},
		{name: "spare unset skips", get: CitusSpare, varName: CitusSpareEnv, want: skipped,
			contains: []string{CitusSpareEnv}},
		{name: "spare unset fails in CI", ci: "1", get: CitusSpare, varName: CitusSpareEnv, want: failed,
			contains: []string{CitusSpareEnv}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv(tc.varName, tc.env)
			got, f := run(t, tc.get)
			if o := outcomeOf(f); o != tc.want {
				t.Fatalf("outcome = %v (message %q), want %v", o, f.msg, tc.want)
			}
			if tc.want == returned && got != strings.TrimSpace(tc.env) {
				t.Errorf("got %q, want %q", got, tc.env)
			}
			for _, s := range tc.contains {
				if !strings.Contains(f.msg, s) {
					t.Errorf("message %q does not mention %q", f.msg, s)
				}
			}
		})
	}
}

// writeExecutable creates a file at path with the given mode and returns path.
func writeExecutable(t *testing.T, path string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is filtered by the umask; set it exactly.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestChromiumPath(t *testing.T) {
	dir := t.TempDir()
	exe := writeExecutable(t, filepath.Join(dir, "chromium-exe"), 0o755)
	plain := writeExecutable(t, filepath.Join(dir, "not-executable"), 0o644)
	missing := filepath.Join(dir, "missing")

	// A directory on PATH holding an executable named like a browser.
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	onPath := writeExecutable(t, filepath.Join(binDir, "fake-chromium-browser"), 0o755)

	for _, tc := range []struct {
		name       string
		ci         string
		env        string
		candidates []string
		want       outcome
		wantPath   string
		contains   []string
	}{
		{name: "env set", env: exe, want: returned, wantPath: exe},
		{name: "env set in CI", ci: "true", env: exe, want: returned, wantPath: exe},
		{
			name: "env names a missing file", env: missing, want: failed,
			contains: []string{ChromiumEnv, missing, "no such file"},
		},
		{
			name: "env names a missing file in CI", ci: "true", env: missing, want: failed,
			contains: []string{ChromiumEnv, "no such file"},
		},
		{
			name: "env names a non-executable file", env: plain, want: failed,
			contains: []string{"not executable"},
		},
		{
			name: "env names a directory", env: dir, want: failed,
			contains: []string{"is a directory"},
		},
		{
			name: "absolute candidate found", candidates: []string{missing, exe},
			want: returned, wantPath: exe,
		},
		{
			name: "non-executable candidate passed over", candidates: []string{plain, exe},
			want: returned, wantPath: exe,
		},
		{
			name: "candidate found on PATH", candidates: []string{"fake-chromium-browser"},
			want: returned, wantPath: onPath,
		},
		{
			name: "nothing found skips", candidates: []string{missing, "no-such-browser"},
			want:     skipped,
			contains: []string{ChromiumEnv, "apt-get install chromium", missing, "no-such-browser"},
		},
		{
			// In CI the script must export the variable: a browser found by
			// looking around does not count.
			name: "unset fails in CI even when a candidate exists", ci: "true",
			candidates: []string{exe}, want: failed,
			contains: []string{ChromiumEnv, "CI script", "chromium"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv(ChromiumEnv, tc.env)
			t.Setenv("PATH", binDir)
			saved := chromiumCandidates
			t.Cleanup(func() { chromiumCandidates = saved })
			chromiumCandidates = tc.candidates

			got, f := run(t, ChromiumPath)
			if o := outcomeOf(f); o != tc.want {
				t.Fatalf("outcome = %v (message %q), want %v", o, f.msg, tc.want)
			}
			if got != tc.wantPath {
				t.Errorf("ChromiumPath = %q, want %q", got, tc.wantPath)
			}
			for _, s := range tc.contains {
				if !strings.Contains(f.msg, s) {
					t.Errorf("message %q does not mention %q", f.msg, s)
				}
			}
		})
	}
}

// TestDefaultChromiumCandidates pins the documented search order.
func TestDefaultChromiumCandidates(t *testing.T) {
	want := []string{"/usr/bin/chromium", "chromium", "chromium-browser"}
	if fmt.Sprint(chromiumCandidates) != fmt.Sprint(want) {
		t.Errorf("chromiumCandidates = %q, want %q", chromiumCandidates, want)
	}
}
