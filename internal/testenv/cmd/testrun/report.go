package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` output (see `go doc test2json`),
// including the build events of Go 1.24 and later.
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	FailedBuild string
	ImportPath  string // build-output and build-fail events
}

// summary counts what a run did. It is written to the -summary file.
type summary struct {
	Passed  int // tests (and subtests) that passed
	Failed  int // tests that failed, plus packages that failed outside any test
	Skipped int // tests that were skipped

	FailedTests    int // tests (and subtests) that failed
	Packages       int // packages go test reported on
	PackagesOK     int
	PackagesFailed int
	PackagesNoTest int // packages with no test files

	// PackagesTimedOut counts test binaries that ran past go test's
	// -timeout: the one failure a slower machine causes by itself.
	PackagesTimedOut int
	DeadlineExceeded bool
}

// testState is what the reporter keeps about one test of one package.
type testState struct {
	out  strings.Builder // output not yet printed or dropped
	done bool
}

// pkgState is what the reporter keeps about one package.
type pkgState struct {
	out         strings.Builder // package-level output
	tests       map[string]*testState
	order       []string // test names in the order they started
	failedTests int
	timeout     string // the -timeout the test binary ran past, if it did
}

func (p *pkgState) test(name string) *testState {
	ts, ok := p.tests[name]
	if !ok {
		ts = &testState{}
		p.tests[name] = ts
		p.order = append(p.order, name)
	}
	return ts
}

// skip records one skipped test and why.
type skip struct {
	pkg, test, reason string
}

// reporter turns a `go test -json` stream into output shaped like plain
// `go test`: one line per package, and the full output of each test that
// failed. Unlike go test it also keeps count, lists skipped tests with their
// reasons and failed tests by name at the end. In verbose mode it prints all
// output as it comes, like `go test -v`.
type reporter struct {
	out     io.Writer
	verbose bool

	pkgs        map[string]*pkgState
	sum         summary
	failedNames []string // "pkg Test" of failed tests, and failed packages
	skips       []skip
}

func newReporter(out io.Writer, verbose bool) *reporter {
	return &reporter{out: out, verbose: verbose, pkgs: map[string]*pkgState{}}
}

func (r *reporter) pkg(name string) *pkgState {
	p, ok := r.pkgs[name]
	if !ok {
		p = &pkgState{tests: map[string]*testState{}}
		r.pkgs[name] = p
	}
	return p
}

// line handles one line of go test's standard output. Lines that are not
// JSON events are printed unchanged.
func (r *reporter) line(b []byte) {
	var ev event
	trimmed := strings.TrimSpace(string(b))
	if !strings.HasPrefix(trimmed, "{") || json.Unmarshal(b, &ev) != nil || ev.Action == "" {
		if trimmed != "" {
			fmt.Fprintln(r.out, strings.TrimRight(string(b), "\n"))
		}
		return
	}
	r.event(ev)
}

func (r *reporter) event(ev event) {
	switch ev.Action {
	case "build-output":
		// Compiler errors: print at once, as go test does.
		io.WriteString(r.out, ev.Output)
	case "start":
		r.pkg(ev.Package)
	case "run":
		r.pkg(ev.Package).test(ev.Test)
	case "output":
		if r.verbose {
			io.WriteString(r.out, ev.Output)
		}
		p := r.pkg(ev.Package)
		if m := timedOutRE.FindStringSubmatch(ev.Output); m != nil {
			p.timeout = m[1]
		}
		if ev.Test == "" {
			p.out.WriteString(ev.Output)
		} else {
			p.test(ev.Test).out.WriteString(ev.Output)
		}
	case "pass", "fail", "skip":
		if ev.Test == "" {
			r.packageDone(ev)
		} else {
			r.testDone(ev)
		}
	}
	// "build-fail" is followed by the package's own fail event; "pause",
	// "cont" and "bench" carry nothing to report.
}

func (r *reporter) testDone(ev event) {
	p := r.pkg(ev.Package)
	ts := p.test(ev.Test)
	ts.done = true
	switch ev.Action {
	case "pass":
		r.sum.Passed++
	case "skip":
		r.sum.Skipped++
		r.skips = append(r.skips, skip{ev.Package, ev.Test, skipReason(ts.out.String())})
	case "fail":
		r.sum.Failed++
		r.sum.FailedTests++
		p.failedTests++
		r.failedNames = append(r.failedNames, ev.Package+" "+ev.Test)
		if !r.verbose {
			io.WriteString(r.out, stripFraming(ts.out.String()))
		}
	}
	ts.out.Reset()
}

func (r *reporter) packageDone(ev event) {
	p := r.pkg(ev.Package)
	r.sum.Packages++
	switch ev.Action {
	case "pass":
		r.sum.PackagesOK++
		if !r.verbose {
			printLinesWithPrefix(r.out, p.out.String(), "ok")
		}
	case "skip":
		r.sum.PackagesNoTest++
		if !r.verbose {
			printLinesWithPrefix(r.out, p.out.String(), "?")
		}
	case "fail":
		r.sum.PackagesFailed++
		if p.timeout != "" {
			r.sum.PackagesTimedOut++
			if p.failedTests == 0 {
				r.sum.Failed++
			}
			r.failedNames = append(r.failedNames, ev.Package+" (timed out after "+p.timeout+")")
		} else if p.failedTests == 0 {
			// A build failure, a panic or timeout that no test event caught,
			// or a failing TestMain: count it, or a failed run could report
			// "0 failed".
			r.sum.Failed++
			what := "(package failed outside any test)"
			if ev.FailedBuild != "" {
				what = "[build failed]"
				if strings.Contains(p.out.String(), "[setup failed]") {
					what = "[setup failed]"
				}
			}
			r.failedNames = append(r.failedNames, ev.Package+" "+what)
		}
		if !r.verbose {
			// Output of tests that never finished (a panic, a timeout) or
			// came after they did (a race report), then the package's own.
			for _, name := range p.order {
				if s := p.tests[name].out.String(); s != "" {
					io.WriteString(r.out, stripFraming(s))
				}
			}
			io.WriteString(r.out, p.out.String())
		}
	}
	delete(r.pkgs, ev.Package)
}

// timedOutRE matches the panic of a test binary that ran past its -timeout.
var timedOutRE = regexp.MustCompile(`panic: test timed out after (\S+)`)

// finish prints the lists of skipped and failed tests and returns the counts.
func (r *reporter) finish() summary {
	// Packages that never reported an end (go test was killed) have output
	// nobody has seen yet.
	var names []string
	for name := range r.pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := r.pkgs[name]
		if !r.verbose {
			for _, tn := range p.order {
				if s := p.tests[tn].out.String(); s != "" {
					io.WriteString(r.out, stripFraming(s))
				}
			}
			io.WriteString(r.out, p.out.String())
		}
		if p.out.Len() > 0 || len(p.order) > 0 {
			r.failedNames = append(r.failedNames, name+" (did not finish)")
			r.sum.Failed++
		}
	}

	if len(r.skips) > 0 {
		r.printSkips()
	}
	if len(r.failedNames) > 0 {
		fmt.Fprintf(r.out, "\nfailed (%d):\n", len(r.failedNames))
		const max = 50
		for i, n := range r.failedNames {
			if i == max {
				fmt.Fprintf(r.out, "    ... and %d more\n", len(r.failedNames)-max)
				break
			}
			fmt.Fprintf(r.out, "    %s\n", n)
		}
	}
	return r.sum
}

// printSkips lists the skipped tests grouped by reason, the most common first.
func (r *reporter) printSkips() {
	byReason := map[string][]string{}
	var reasons []string
	for _, s := range r.skips {
		if _, ok := byReason[s.reason]; !ok {
			reasons = append(reasons, s.reason)
		}
		byReason[s.reason] = append(byReason[s.reason], s.pkg+" "+s.test)
	}
	sort.SliceStable(reasons, func(i, j int) bool {
		return len(byReason[reasons[i]]) > len(byReason[reasons[j]])
	})
	fmt.Fprintf(r.out, "\nskipped (%d):\n", len(r.skips))
	const maxReasons, maxNames = 20, 5
	for i, reason := range reasons {
		if i == maxReasons {
			fmt.Fprintf(r.out, "    ... and %d more reasons\n", len(reasons)-maxReasons)
			break
		}
		tests := byReason[reason]
		fmt.Fprintf(r.out, "    %d × %s\n", len(tests), reason)
		for j, tn := range tests {
			if j == maxNames {
				fmt.Fprintf(r.out, "        ... and %d more\n", len(tests)-maxNames)
				break
			}
			fmt.Fprintf(r.out, "        %s\n", tn)
		}
	}
}

// isFraming reports whether line is one of the lines go test -json adds to
// mark tests starting and switching: "=== RUN", "=== PAUSE", "=== CONT",
// "=== NAME".
func isFraming(line string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// stripFraming drops the framing lines from a test's output, so that a
// failure prints as it would without -json.
func stripFraming(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if !isFraming(line) {
			b.WriteString(line)
		}
	}
	return b.String()
}

func printLinesWithPrefix(w io.Writer, s, prefix string) {
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(line, prefix) {
			io.WriteString(w, line)
		}
	}
}

// logPrefix matches the "file_test.go:12: " that t.Log and t.Skip put
// before a message.
var logPrefix = regexp.MustCompile(`^[^\s:]+\.go:\d+: `)

// skipReason extracts the message a test gave t.Skip from its output, without
// the file:line prefix, so that tests skipped for the same reason group.
func skipReason(out string) string {
	var parts []string
	for _, line := range strings.Split(out, "\n") {
		if isFraming(line) {
			continue
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--- SKIP") {
			continue
		}
		parts = append(parts, logPrefix.ReplaceAllString(line, ""))
	}
	reason := strings.Join(parts, " ")
	if reason == "" {
		return "(no reason given)"
	}
	const max = 400
	if r := []rune(reason); len(r) > max {
		reason = string(r[:max]) + "…"
	}
	return reason
}

// write renders s as the -summary file: key=value lines a shell reads.
func (s summary) write(w io.Writer) error {
	b := 0
	if s.DeadlineExceeded {
		b = 1
	}
	_, err := fmt.Fprintf(w, "passed=%d\nfailed=%d\nskipped=%d\nfailed_tests=%d\n"+
		"packages=%d\npackages_ok=%d\npackages_failed=%d\npackages_no_test=%d\n"+
		"packages_timed_out=%d\ndeadline_exceeded=%d\n",
		s.Passed, s.Failed, s.Skipped, s.FailedTests,
		s.Packages, s.PackagesOK, s.PackagesFailed, s.PackagesNoTest, s.PackagesTimedOut, b)
	return err
}
