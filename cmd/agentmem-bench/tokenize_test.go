package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/cli/clitest"
	"github.com/agentmem/agentmem/tokenizer"
)

// benchTokenize runs agentmem-bench tokenize and decodes its JSON line.
func benchTokenize(t *testing.T, stdin string, args ...string) tokenizeResult {
	t.Helper()
	code, stdout, stderr := runCLI(t, nil, stdin, append([]string{"tokenize"}, args...)...)
	if code != 0 || stderr != "" {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
	}
	return clitest.DecodeLine[tokenizeResult](t, stdout)
}

func TestBenchTokenize(t *testing.T) {
	// A file large enough for CountParallel to cut it into chunks.
	var b strings.Builder
	for i := 0; b.Len() < 600<<10; i++ {
		b.WriteString("The agent's memory holds 1234 steps; naïve café — 東京 🙂\n\tfunc main() { x := y }\n  \n    \n")
	}
	text := b.String()
	path := filepath.Join(t.TempDir(), "corpus.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, enc := range []string{tokenizer.O200kBase, tokenizer.CL100kBase} {
		c, err := tokenizer.Get(enc)
		if err != nil {
			t.Fatal(err)
		}
		want := c.Count(text)
		one := benchTokenize(t, "", "--encoding", enc, "--repeat", "2", path)
		par := benchTokenize(t, "", "--encoding", enc, "--parallel", "--workers", "3", "--repeat", "1", path)
		for _, res := range []tokenizeResult{one, par} {
			if res.Encoding != enc || res.File != path || res.Bytes != len(text) || res.Tokens != want {
				t.Errorf("%+v: want %s, %d bytes, %d tokens", res, enc, len(text), want)
			}
			if res.Seconds <= 0 || res.MBPerSecond <= 0 || res.LoadMS < 0 {
				t.Errorf("%+v: no time measured", res)
			}
		}
		if one.Parallel || one.Workers != 1 || len(one.Runs) != 2 || one.Seconds != min(one.Runs[0], one.Runs[1]) {
			t.Errorf("single: %+v", one)
		}
		if !par.Parallel || par.Workers != 3 || len(par.Runs) != 1 {
			t.Errorf("parallel: %+v", par)
		}
	}
	// Standard input, and the default encoding.
	res := benchTokenize(t, "hello world", "-")
	if res.Encoding != tokenizer.O200kBase || res.Tokens != 2 || res.Bytes != 11 || res.File != "-" {
		t.Errorf("stdin: %+v", res)
	}
}

func TestBenchTokenizeErrors(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"tokenize"}, 2, "accepts 1 arg"},
		{[]string{"tokenize", "--encoding", "gpt2", "-"}, 2, `unknown encoding "gpt2"`},
		{[]string{"tokenize", "--repeat", "0", "-"}, 2, "--repeat"},
		{[]string{"tokenize", "--workers", "-1", "-"}, 2, "--workers"},
		{[]string{"tokenize", filepath.Join(t.TempDir(), "missing.txt")}, 1, "no such file"},
	} {
		code, stdout, stderr := runCLI(t, nil, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d and %q", tc.args, code, stderr, stdout, tc.code, tc.stderr)
		}
	}
}
