//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run the real go command on a small module made in a temporary
// directory, to check testrun against go test's actual -json output and that
// it leaves no test binary behind when it stops a run.

// writeModule creates a module named "demo" in a new directory with the given
// files (path relative to the module root) and returns the directory.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module demo\n\ngo 1.26\n"
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func goCommand(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping: runs the go command (-short)")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipping: no go command on PATH")
	}
	return goCmd
}

// goEnv is the environment for the inner go command: never switch toolchains.
func goEnv() []string {
	return append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
}

func TestRunRealGoTest(t *testing.T) {
	goCmd := goCommand(t)
	dir := writeModule(t, map[string]string{
		"demo.go": "package demo\n",
		"demo_test.go": `package demo

import "testing"

func TestPass(t *testing.T) { t.Log("quiet") }
func TestSkip(t *testing.T) { t.Skip("needs the moon") }
func TestFail(t *testing.T) { t.Fatal("boom") }
func TestSub(t *testing.T) {
	t.Run("a", func(t *testing.T) {})
	t.Run("b", func(t *testing.T) { t.Skip("needs the moon") })
}
`,
		"notests/notests.go":      "package notests\n",
		"broken/broken.go":        "package broken\n",
		"broken/broken_test.go":   "package broken\n\nfunc oops( {\n",
		"fine/fine.go":            "package fine\n",
		"fine/fine_test.go":       "package fine\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
		"fine/testdata/README.md": "not Go\n",
	})
	var stdout, stderr strings.Builder
	sum, code := runTests(options{
		goCmd: goCmd, args: []string{"-count=1", "./..."}, dir: dir, env: goEnv(),
		stdout: &stdout, stderr: &stderr,
	})
	got := stdout.String()
	t.Logf("stdout:\n%s\nstderr:\n%s", got, stderr.String())

	if code == 0 {
		t.Errorf("exit status 0 for a failing run")
	}
	want := summary{
		Passed:         4, // TestPass, TestSub, TestSub/a, fine.TestOK
		Failed:         2, // TestFail and the broken package
		Skipped:        2,
		FailedTests:    1,
		Packages:       4,
		PackagesOK:     1,
		PackagesFailed: 2,
		PackagesNoTest: 1,
	}
	if sum != want {
		t.Errorf("summary = %+v\nwant      %+v", sum, want)
	}
	for _, s := range []string{
		"boom", "--- FAIL: TestFail", "FAIL\tdemo\t",
		"ok  \tdemo/fine\t", "?   \tdemo/notests\t[no test files]",
		"FAIL\tdemo/broken", "demo/broken [", "2 × needs the moon", "demo TestSub/b",
	} {
		if !strings.Contains(got, s) {
			t.Errorf("output does not contain %q", s)
		}
	}
	for _, s := range []string{"quiet", "=== RUN"} {
		if strings.Contains(got, s) {
			t.Errorf("output contains %q", s)
		}
	}
}

// hangingModule is a module whose one test writes its process id to pidFile
// and then sleeps far longer than any test here waits.
func hangingModule(t *testing.T, pidFile string) string {
	return writeModule(t, map[string]string{
		"hang.go": "package hang\n",
		"hang_test.go": `package hang

import (
	"os"
	"strconv"
	"testing"
	"time"
)

func TestHang(t *testing.T) {
	os.WriteFile(` + strconv.Quote(pidFile) + `, []byte(strconv.Itoa(os.Getpid())), 0o644)
	time.Sleep(10 * time.Minute)
}
`,
	})
}

// warmUp builds the module's test binary once, so that the timed run starts
// the test quickly.
func warmUp(t *testing.T, goCmd, dir string) {
	t.Helper()
	cmd := exec.Command(goCmd, "test", "-c", "-o", os.DevNull, ".")
	cmd.Dir, cmd.Env = dir, goEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
}

// waitForPID waits until the hanging test has written its process id, and
// returns it, or 0 if that takes too long. It may run on any goroutine.
func waitForPID(pidFile string) int {
	for start := time.Now(); time.Since(start) < 2*time.Minute; time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile(pidFile)
		if err != nil || len(b) == 0 {
			continue
		}
		if pid, err := strconv.Atoi(string(b)); err == nil {
			return pid
		}
	}
	return 0
}

// checkGone fails unless process pid has exited.
func checkGone(t *testing.T, pid int) {
	t.Helper()
	if pid == 0 {
		t.Fatal("the test binary never started")
	}
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(50 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
	}
	t.Errorf("test binary (pid %d) still running after testrun returned", pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

func TestRunDeadline(t *testing.T) {
	goCmd := goCommand(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	dir := hangingModule(t, pidFile)
	warmUp(t, goCmd, dir)

	var stdout, stderr strings.Builder
	start := time.Now()
	pid := make(chan int, 1)
	go func() { pid <- waitForPID(pidFile) }()
	sum, code := runTests(options{
		goCmd: goCmd, args: []string{"-count=1", "."}, dir: dir, env: goEnv(),
		deadline: 12 * time.Second, grace: 10 * time.Second,
		stdout: &stdout, stderr: &stderr,
	})
	t.Logf("took %v\nstdout:\n%s\nstderr:\n%s", time.Since(start), stdout.String(), stderr.String())

	if code == 0 {
		t.Errorf("exit status 0 after the deadline")
	}
	if !sum.DeadlineExceeded || sum.Failed == 0 {
		t.Errorf("summary = %+v, want deadline exceeded and a failure", sum)
	}
	if !strings.Contains(stderr.String(), "deadline") {
		t.Errorf("no word about the deadline on stderr")
	}
	// The test binary got SIGQUIT and printed where it was stuck.
	if !strings.Contains(stdout.String(), "TestHang") {
		t.Errorf("output does not show where the test hung")
	}
	checkGone(t, <-pid)
}

func TestRunSignalIsPassedOn(t *testing.T) {
	goCmd := goCommand(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	dir := hangingModule(t, pidFile)
	warmUp(t, goCmd, dir)

	sigs := make(chan os.Signal, 1)
	pid := make(chan int, 1)
	go func() {
		p := waitForPID(pidFile)
		pid <- p
		if p != 0 {
			sigs <- syscall.SIGINT
		}
	}()
	var stdout, stderr strings.Builder
	sum, code := runTests(options{
		goCmd: goCmd, args: []string{"-count=1", "."}, dir: dir, env: goEnv(),
		deadline: 3 * time.Minute, stdout: &stdout, stderr: &stderr, signals: sigs,
	})
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 128+int(syscall.SIGINT) {
		t.Errorf("exit status %d for an interrupted run, want %d", code, 128+int(syscall.SIGINT))
	}
	if sum.DeadlineExceeded {
		t.Errorf("deadline reported exceeded; the signal should have stopped the run")
	}
	if !strings.Contains(stderr.String(), "interrupt") {
		t.Errorf("no word about the interrupt on stderr")
	}
	checkGone(t, <-pid)
}

func TestRunGoTestFailsBeforeAnyPackage(t *testing.T) {
	goCmd := goCommand(t)
	dir := writeModule(t, map[string]string{"demo.go": "package demo\n"})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad pattern", []string{"./no/such/dir/..."}, "[setup failed]"},
		{"bad flag value", []string{"-count=x", "./..."}, "go test exited with status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			sum, code := runTests(options{
				goCmd: goCmd, args: tc.args, dir: dir, env: goEnv(),
				stdout: &stdout, stderr: &stderr,
			})
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			if code == 0 {
				t.Errorf("exit status 0")
			}
			if sum.Failed != 1 || sum.Passed != 0 {
				t.Errorf("summary = %+v, want 1 failed", sum)
			}
			if !strings.Contains(stdout.String(), tc.want) {
				t.Errorf("output does not contain %q", tc.want)
			}
		})
	}
}
