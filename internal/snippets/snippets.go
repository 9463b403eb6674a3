// Package snippets reads the fenced code blocks of the documentation
// (README.md and docs/*.md) and says what each one is. A block is a
// program to run against a real server, the output such a program must
// print, text to read, or code shown for reading only. TestSnippets, in this package's
// tests, runs them; docs/testing.md ("Snippets") describes the
// conventions for writers.
//
// A block's info string is its language and then attributes:
//
//	```sh                 run by bash (sh and bash alike)
//	```python             run by python3, one interpreter per file
//	```go                 a complete program (package main): built and run
//	```json output        what the block before it prints, compared as JSON
//	```text output        what the block before it prints, compared as text
//	```sh server          starts the server the file's other blocks talk to
//	```sh illustrative    shown for reading, never run (any language)
//	```text, ```json      text to read (diagrams, configurations, logs)
//
// Every block must name its language. A language the runner cannot run
// (ts, sql, ...) must be marked illustrative, so that a new snippet is
// either checked or visibly not.
package snippets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// Attributes of a block's info string.
const (
	// Illustrative marks a block that is shown for reading only. It
	// needs what a test machine does not have (a provider's API key, a
	// desktop assistant, a release archive), it is a fragment, or it runs
	// the test suite itself.
	Illustrative = "illustrative"
	// Output marks a text or json block that shows what the code block
	// before it prints on standard output.
	Output = "output"
	// Server marks a shell block that starts agentmem serve: the runner
	// starts it in the background and points the file's later blocks at
	// it.
	Server = "server"
)

// runLangs are the languages the runner runs; dataLangs are never run
// (text to read, or a program's expected output).
var (
	runLangs  = map[string]bool{"sh": true, "bash": true, "python": true, "go": true}
	dataLangs = map[string]bool{"text": true, "json": true}
	attrs     = map[string]bool{Illustrative: true, Output: true, Server: true}
)

// A Block is one fenced code block of a Markdown file.
type Block struct {
	File  string   // the file, relative to the repository's root
	Line  int      // the line of its opening fence, from 1
	Lang  string   // the first word of its info string
	Attrs []string // the other words
	Text  string   // its content, every line ending in a newline
	// Output is the output block that follows it, for a code block, or
	// nil. It is the block's expected standard output when the block runs.
	Output *Block
	// Prev is the fenced block before this one in its file, or nil.
	Prev *Block
}

// Has reports whether the block's info string has attribute a.
func (b *Block) Has(a string) bool {
	for _, x := range b.Attrs {
		if x == a {
			return true
		}
	}
	return false
}

// Runnable reports whether the runner runs the block.
func (b *Block) Runnable() bool { return runLangs[b.Lang] && !b.Has(Illustrative) }

// IsShell reports whether the block is a shell script.
func (b *Block) IsShell() bool { return b.Lang == "sh" || b.Lang == "bash" }

// String names the block as file:line (language).
func (b *Block) String() string { return fmt.Sprintf("%s:%d (%s)", b.File, b.Line, b.Lang) }

var fenceRE = regexp.MustCompile("^( {0,3})(`{3,}|~{3,})(.*)$")

// Parse returns the fenced code blocks of a Markdown file, in order, with
// each output block attached to the code block before it. It fails on a
// fence left open.
func Parse(file string, src []byte) ([]*Block, error) {
	var (
		blocks []*Block
		cur    *Block
		indent int
		fence  string
		body   strings.Builder
	)
	lines := strings.SplitAfter(string(src), "\n")
	for i, line := range lines {
		text := strings.TrimRight(line, "\r\n")
		if cur == nil {
			m := fenceRE.FindStringSubmatch(text)
			// A backtick fence's info string may not hold a backtick.
			if m == nil || (m[2][0] == '`' && strings.Contains(m[3], "`")) {
				continue
			}
			fields := strings.Fields(m[3])
			cur = &Block{File: file, Line: i + 1}
			if len(fields) > 0 {
				cur.Lang, cur.Attrs = fields[0], fields[1:]
			}
			indent, fence = len(m[1]), m[2]
			body.Reset()
			continue
		}
		if closing := strings.TrimSpace(text); strings.HasPrefix(closing, fence) && strings.Trim(closing, fence[:1]) == "" &&
			len(text)-len(strings.TrimLeft(text, " ")) <= 3 {
			cur.Text = body.String()
			if n := len(blocks); n > 0 {
				cur.Prev = blocks[n-1]
			}
			blocks = append(blocks, cur)
			cur = nil
			continue
		}
		// Content lines lose up to the opening fence's indentation.
		for k := 0; k < indent && strings.HasPrefix(text, " "); k++ {
			text = text[1:]
		}
		body.WriteString(text + "\n")
	}
	if cur != nil {
		return blocks, fmt.Errorf("%s:%d: the fenced block is never closed", file, cur.Line)
	}
	for _, b := range blocks {
		if b.Has(Output) && b.Prev != nil && b.Prev.Output == nil {
			b.Prev.Output = b
		}
	}
	return blocks, nil
}

// Check returns what is wrong with a file's blocks under the conventions
// of the package documentation. A block must name a language, and one
// the runner cannot run must be marked illustrative. Attributes must be
// known, and an output block must follow a code block.
func Check(blocks []*Block) []error {
	var errs []error
	bad := func(b *Block, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", b.File, b.Line, fmt.Sprintf(format, args...)))
	}
	for _, b := range blocks {
		for _, a := range b.Attrs {
			if !attrs[a] {
				bad(b, "unknown attribute %q in the info string (known: illustrative, output, server)", a)
			}
		}
		switch {
		case b.Lang == "":
			bad(b, "the block names no language: use text for plain text, or the language of the code")
		case dataLangs[b.Lang]:
			if b.Has(Illustrative) || b.Has(Server) {
				bad(b, "a %s block is never run: it takes no illustrative or server attribute", b.Lang)
			}
			if b.Has(Output) && (b.Prev == nil || b.Prev.Has(Output) || dataLangs[b.Prev.Lang]) {
				bad(b, "an output block must follow the code block whose output it shows")
			}
		case !runLangs[b.Lang] && !b.Has(Illustrative):
			bad(b, "the runner cannot run %s: mark the block illustrative (```%s illustrative)", b.Lang, b.Lang)
		case b.Has(Output):
			bad(b, "only text and json blocks show output")
		case b.Has(Server) && (!b.IsShell() || b.Has(Illustrative)):
			bad(b, "a server block is a shell block that is run")
		case b.Lang == "go" && b.Runnable() && !goMainRE.MatchString(b.Text):
			bad(b, "a go block runs as a complete program (package main); mark a fragment illustrative")
		}
	}
	return errs
}

var goMainRE = regexp.MustCompile(`(?m)^package main\b`)

// Volatile parts of a program's output, replaced by placeholders in both
// the output shown and the output printed before they are compared, so
// that the documentation can show a real run's output.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<uuid>"},
	{regexp.MustCompile(`\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<time>"},
	{regexp.MustCompile(`\bam_[0-9a-f]{12}_[A-Za-z0-9_-]+`), "<key>"},
	{regexp.MustCompile(`\b[0-9a-f]{12}\b`), "<key-id>"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s)\b`), "<duration>"},
}

// longFraction is a number with ten or more decimals, such as a score or a
// confidence that decays with time: it is compared to four decimals.
var longFraction = regexp.MustCompile(`\b\d+\.\d{10,}\b`)

// Normalize replaces the volatile parts of s (UUIDs, RFC 3339 times, API
// keys and their IDs, durations) by their placeholders, and rounds
// numbers of ten or more decimals to four.
func Normalize(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return longFraction.ReplaceAllStringFunc(s, func(n string) string {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return n
		}
		return strconv.FormatFloat(f, 'f', 4, 64)
	})
}

// Compare checks the output a block printed against the output block that
// shows it. Both are normalized first. A json block matches when both hold
// the same sequence of JSON values, whatever their layout and the order of
// their members. A text block matches line by line, ignoring trailing
// spaces and blank lines at the end; a line "..." stands for any number
// of lines.
func Compare(want *Block, got string) error {
	w, g := Normalize(want.Text), Normalize(got)
	if want.Lang == "json" {
		wv, err := jsonValues(w)
		if err != nil {
			return fmt.Errorf("the json output block does not parse: %v", err)
		}
		gv, err := jsonValues(g)
		if err != nil {
			return fmt.Errorf("the output is not JSON (%v):\n%s", err, got)
		}
		if !reflect.DeepEqual(wv, gv) {
			return fmt.Errorf("the output differs from the block at %s:%d\n--- shown (normalized)\n%s--- printed (normalized)\n%s",
				want.File, want.Line, pretty(wv), pretty(gv))
		}
		return nil
	}
	if !linesMatch(lines(w), lines(g)) {
		return fmt.Errorf("the output differs from the block at %s:%d\n--- shown (normalized)\n%s--- printed (normalized)\n%s",
			want.File, want.Line, w, g)
	}
	return nil
}

func jsonValues(s string) ([]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var vs []any
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("no JSON value")
	}
	return vs, nil
}

func pretty(vs []any) string {
	var buf bytes.Buffer
	for _, v := range vs {
		b, _ := json.MarshalIndent(v, "", "  ")
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.String()
}

func lines(s string) []string {
	ls := strings.Split(s, "\n")
	for i := range ls {
		ls[i] = strings.TrimRight(ls[i], " \t\r")
	}
	for len(ls) > 0 && ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// linesMatch matches got against want, where a want line "..." matches
// any number of lines.
func linesMatch(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if linesMatch(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && want[0] == got[0] && linesMatch(want[1:], got[1:])
}
