package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// feed runs the events through a reporter and returns its output and counts.
func feed(t *testing.T, verbose bool, events ...event) (string, summary) {
	t.Helper()
	var out strings.Builder
	r := newReporter(&out, verbose)
	for _, ev := range events {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		r.line(append(b, '\n'))
	}
	sum := r.finish()
	return out.String(), sum
}

func out(pkg, test, s string) event {
	return event{Action: "output", Package: pkg, Test: test, Output: s}
}

// passingPackage is the event stream of a package with a passing test, a
// skipped one, and a test with a passing and a skipped subtest.
func passingPackage(pkg string) []event {
	return []event{
		{Action: "start", Package: pkg},
		{Action: "run", Package: pkg, Test: "TestA"},
		out(pkg, "TestA", "=== RUN   TestA\n"),
		out(pkg, "TestA", "    a_test.go:9: chatter\n"),
		out(pkg, "TestA", "--- PASS: TestA (0.00s)\n"),
		{Action: "pass", Package: pkg, Test: "TestA"},
		{Action: "run", Package: pkg, Test: "TestDB"},
		out(pkg, "TestDB", "=== RUN   TestDB\n"),
		out(pkg, "TestDB", "    db_test.go:12: testenv: skipping: needs PostgreSQL\n"),
		out(pkg, "TestDB", "--- SKIP: TestDB (0.00s)\n"),
		{Action: "skip", Package: pkg, Test: "TestDB"},
		{Action: "run", Package: pkg, Test: "TestT"},
		out(pkg, "TestT", "=== RUN   TestT\n"),
		{Action: "run", Package: pkg, Test: "TestT/sub"},
		out(pkg, "TestT/sub", "=== RUN   TestT/sub\n"),
		out(pkg, "TestT/sub", "--- PASS: TestT/sub (0.00s)\n"),
		{Action: "pass", Package: pkg, Test: "TestT/sub"},
		{Action: "run", Package: pkg, Test: "TestT/db"},
		out(pkg, "TestT/db", "=== RUN   TestT/db\n"),
		out(pkg, "TestT/db", "    db_test.go:40: testenv: skipping: needs PostgreSQL\n"),
		out(pkg, "TestT/db", "    --- SKIP: TestT/db (0.00s)\n"),
		{Action: "skip", Package: pkg, Test: "TestT/db"},
		out(pkg, "TestT", "--- PASS: TestT (0.00s)\n"),
		{Action: "pass", Package: pkg, Test: "TestT"},
		out(pkg, "", "PASS\n"),
		out(pkg, "", "ok  \t"+pkg+"\t0.012s\n"),
		{Action: "pass", Package: pkg},
	}
}

func TestReporterPassingPackage(t *testing.T) {
	got, sum := feed(t, false, passingPackage("example.com/m/a")...)
	want := summary{Passed: 3, Skipped: 2, Packages: 1, PackagesOK: 1}
	if sum != want {
		t.Errorf("summary = %+v, want %+v", sum, want)
	}
	for _, s := range []string{
		"ok  \texample.com/m/a\t0.012s\n",
		"skipped (2):",
		"2 × testenv: skipping: needs PostgreSQL\n",
		"example.com/m/a TestDB\n",
		"example.com/m/a TestT/db\n",
	} {
		if !strings.Contains(got, s) {
			t.Errorf("output does not contain %q:\n%s", s, got)
		}
	}
	// A passing package shows only its ok line, as with plain go test.
	for _, s := range []string{"chatter", "=== RUN", "PASS\n", "failed"} {
		if strings.Contains(got, s) {
			t.Errorf("output contains %q:\n%s", s, got)
		}
	}
}

func TestReporterVerbose(t *testing.T) {
	got, sum := feed(t, true, passingPackage("example.com/m/a")...)
	if sum.Passed != 3 || sum.Skipped != 2 {
		t.Errorf("summary = %+v", sum)
	}
	for _, s := range []string{"=== RUN   TestA\n", "chatter", "PASS\n", "ok  \texample.com/m/a"} {
		if !strings.Contains(got, s) {
			t.Errorf("verbose output does not contain %q:\n%s", s, got)
		}
	}
	if n := strings.Count(got, "ok  \texample.com/m/a"); n != 1 {
		t.Errorf("ok line printed %d times:\n%s", n, got)
	}
}

func TestReporterFailingTest(t *testing.T) {
	const pkg = "example.com/m/b"
	got, sum := feed(t, false,
		event{Action: "start", Package: pkg},
		event{Action: "run", Package: pkg, Test: "TestGood"},
		out(pkg, "TestGood", "=== RUN   TestGood\n"),
		out(pkg, "TestGood", "    good_test.go:3: quiet\n"),
		out(pkg, "TestGood", "--- PASS: TestGood (0.00s)\n"),
		event{Action: "pass", Package: pkg, Test: "TestGood"},
		event{Action: "run", Package: pkg, Test: "TestBad"},
		out(pkg, "TestBad", "=== RUN   TestBad\n"),
		out(pkg, "TestBad", "    bad_test.go:7: boom\n"),
		out(pkg, "TestBad", "--- FAIL: TestBad (0.00s)\n"),
		event{Action: "fail", Package: pkg, Test: "TestBad"},
		out(pkg, "", "FAIL\n"),
		out(pkg, "", "FAIL\t"+pkg+"\t0.010s\n"),
		event{Action: "fail", Package: pkg},
	)
	want := summary{Passed: 1, Failed: 1, FailedTests: 1, Packages: 1, PackagesFailed: 1}
	if sum != want {
		t.Errorf("summary = %+v, want %+v", sum, want)
	}
	for _, s := range []string{
		"    bad_test.go:7: boom\n--- FAIL: TestBad (0.00s)\n",
		"FAIL\t" + pkg + "\t0.010s\n",
		"failed (1):\n    " + pkg + " TestBad\n",
	} {
		if !strings.Contains(got, s) {
			t.Errorf("output does not contain %q:\n%s", s, got)
		}
	}
	for _, s := range []string{"quiet", "=== RUN"} {
		if strings.Contains(got, s) {
			t.Errorf("output contains %q:\n%s", s, got)
		}
	}
}

func TestReporterPanicOutsideTestEvents(t *testing.T) {
	// A test that panics (or times out) may get no fail event of its own:
	// its output must still be shown and the run must count a failure.
	const pkg = "example.com/m/c"
	got, sum := feed(t, false,
		event{Action: "start", Package: pkg},
		event{Action: "run", Package: pkg, Test: "TestHang"},
		out(pkg, "TestHang", "=== RUN   TestHang\n"),
		out(pkg, "TestHang", "panic: test timed out after 1s\n"),
		out(pkg, "", "FAIL\t"+pkg+"\t1.005s\n"),
		event{Action: "fail", Package: pkg},
	)
	if sum.Failed != 1 || sum.FailedTests != 0 || sum.PackagesFailed != 1 || sum.PackagesTimedOut != 1 {
		t.Errorf("summary = %+v", sum)
	}
	for _, s := range []string{"panic: test timed out", "FAIL\t" + pkg, pkg + " (timed out after 1s)"} {
		if !strings.Contains(got, s) {
			t.Errorf("output does not contain %q:\n%s", s, got)
		}
	}
}

func TestReporterTimeoutOfAFailedTest(t *testing.T) {
	// When the timed-out test gets a fail event of its own, the package is
	// still named as timed out, with the -timeout it ran past.
	const pkg = "example.com/m/t"
	got, sum := feed(t, false,
		event{Action: "start", Package: pkg},
		event{Action: "run", Package: pkg, Test: "TestSlow"},
		out(pkg, "TestSlow", "panic: test timed out after 8m0s\n\trunning tests:\n\t\tTestSlow (8m0s)\n"),
		event{Action: "fail", Package: pkg, Test: "TestSlow"},
		out(pkg, "", "FAIL\t"+pkg+"\t480.1s\n"),
		event{Action: "fail", Package: pkg},
	)
	if sum.Failed != 1 || sum.FailedTests != 1 || sum.PackagesTimedOut != 1 {
		t.Errorf("summary = %+v", sum)
	}
	if !strings.Contains(got, pkg+" (timed out after 8m0s)") {
		t.Errorf("output does not name the timed-out package:\n%s", got)
	}
}

func TestReporterBuildFailure(t *testing.T) {
	const pkg = "example.com/m/d"
	got, sum := feed(t, false,
		event{Action: "build-output", ImportPath: pkg + " [" + pkg + ".test]", Output: "# " + pkg + "\n"},
		event{Action: "build-output", ImportPath: pkg + " [" + pkg + ".test]", Output: "./d.go:3:1: syntax error\n"},
		event{Action: "build-fail", ImportPath: pkg + " [" + pkg + ".test]"},
		event{Action: "start", Package: pkg},
		out(pkg, "", "FAIL\t"+pkg+" [build failed]\n"),
		event{Action: "fail", Package: pkg, FailedBuild: pkg + " [" + pkg + ".test]"},
	)
	if sum.Failed != 1 || sum.PackagesFailed != 1 {
		t.Errorf("summary = %+v", sum)
	}
	for _, s := range []string{"./d.go:3:1: syntax error\n", "FAIL\t" + pkg + " [build failed]\n", pkg + " [build failed]"} {
		if !strings.Contains(got, s) {
			t.Errorf("output does not contain %q:\n%s", s, got)
		}
	}
}

func TestReporterNoTestFilesAndPlainLines(t *testing.T) {
	const pkg = "example.com/m/e"
	var b strings.Builder
	r := newReporter(&b, false)
	r.line([]byte("go: downloading example.com/x v1.0.0\n"))
	for _, ev := range []event{
		{Action: "start", Package: pkg},
		out(pkg, "", "?   \t"+pkg+"\t[no test files]\n"),
		{Action: "skip", Package: pkg},
	} {
		j, _ := json.Marshal(ev)
		r.line(j)
	}
	sum := r.finish()
	if sum.PackagesNoTest != 1 || sum.Packages != 1 || sum.Failed != 0 {
		t.Errorf("summary = %+v", sum)
	}
	want := "go: downloading example.com/x v1.0.0\n?   \t" + pkg + "\t[no test files]\n"
	if b.String() != want {
		t.Errorf("output = %q, want %q", b.String(), want)
	}
}

func TestReporterUnfinishedPackage(t *testing.T) {
	// go test killed: the package never reports an end.
	const pkg = "example.com/m/f"
	got, sum := feed(t, false,
		event{Action: "start", Package: pkg},
		event{Action: "run", Package: pkg, Test: "TestSlow"},
		out(pkg, "TestSlow", "=== RUN   TestSlow\n"),
		out(pkg, "TestSlow", "SIGQUIT: quit\n"),
	)
	if sum.Failed != 1 {
		t.Errorf("summary = %+v", sum)
	}
	for _, s := range []string{"SIGQUIT: quit", pkg + " (did not finish)"} {
		if !strings.Contains(got, s) {
			t.Errorf("output does not contain %q:\n%s", s, got)
		}
	}
}

func TestSkipReason(t *testing.T) {
	for _, tc := range []struct{ out, want string }{
		{"=== RUN   TestX\n    x_test.go:12: needs the moon\n--- SKIP: TestX (0.00s)\n", "needs the moon"},
		{"=== RUN   TestX/y\n        x_test.go:3: a\n        b\n    --- SKIP: TestX/y (0.00s)\n", "a b"},
		{"=== RUN   TestX\n--- SKIP: TestX (0.00s)\n", "(no reason given)"},
		{"", "(no reason given)"},
	} {
		if got := skipReason(tc.out); got != tc.want {
			t.Errorf("skipReason(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
	long := "    x_test.go:1: " + strings.Repeat("é", 1000) + "\n"
	if got := skipReason(long); len([]rune(got)) != 401 || !strings.HasSuffix(got, "…") {
		t.Errorf("long reason not cut to 400 runes: %d", len([]rune(got)))
	}
}

func TestSummaryWrite(t *testing.T) {
	var b strings.Builder
	s := summary{Passed: 5, Failed: 2, Skipped: 1, FailedTests: 1, Packages: 3,
		PackagesOK: 1, PackagesFailed: 1, PackagesNoTest: 1, DeadlineExceeded: true}
	if err := s.write(&b); err != nil {
		t.Fatal(err)
	}
	want := "passed=5\nfailed=2\nskipped=1\nfailed_tests=1\npackages=3\n" +
		"packages_ok=1\npackages_failed=1\npackages_no_test=1\npackages_timed_out=0\ndeadline_exceeded=1\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
