package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/cli/clitest"
	"github.com/agentmem/agentmem/replay"
)

const sample = "../../replay/testdata/sample.jsonl"

// runCLI runs the command line in-process with the given environment.
func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, execute, env, stdin, args...)
}

// result decodes the one JSON line of a replay.
func result(t *testing.T, stdout string) replay.Result {
	t.Helper()
	return clitest.DecodeLine[replay.Result](t, stdout)
}

func TestReplaySample(t *testing.T) {
	out := filepath.Join(t.TempDir(), "final.json")
	code, stdout, stderr := runCLI(t, nil, "", "replay", "--trace", sample, "--budget", "3000", "--baseline", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	res := result(t, stdout)
	if res.Steps != 6 || res.Messages != 14 || res.Renders != 7 || res.Budget != 3000 || res.Format != "openai" ||
		res.Tokenizer != "o200k_base" || res.Violations.Total != 0 || res.FinalTokens > 3000 || res.TokenizeSeconds == nil {
		t.Errorf("result: %s", stdout)
	}
	if !strings.Contains(stderr, "replay done") {
		t.Errorf("stderr has no diagnostics: %q", stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var fc replay.FinalContext
	if err := json.Unmarshal(data, &fc); err != nil || fc.Tokens != res.FinalTokens || fc.Format != "openai" {
		t.Fatalf("final context %v: %.200s", err, data)
	}
}

func TestReplayFromStdin(t *testing.T) {
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, nil, string(data), "replay", "--trace", "-", "--budget", "3000", "--log-level", "error")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if res := result(t, stdout); res.Messages != 14 {
		t.Errorf("messages = %d", res.Messages)
	}
}

func TestFlagsFromEnvironment(t *testing.T) {
	env := map[string]string{"AGENTMEM_TRACE": sample, "AGENTMEM_BUDGET": "2500", "AGENTMEM_FORMAT": "anthropic", "AGENTMEM_TOKENIZER": "cl100k_base", "AGENTMEM_LOG_LEVEL": "warn"}
	code, stdout, stderr := runCLI(t, env, "", "replay")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if res := result(t, stdout); res.Budget != 2500 || res.Format != "anthropic" || res.Tokenizer != "cl100k_base" {
		t.Errorf("the environment was not read: %s", stdout)
	}
	// A flag on the command line wins.
	code, stdout, _ = runCLI(t, env, "", "replay", "--format", "observation")
	if res := result(t, stdout); code != 0 || res.Format != "observation" || res.Budget != 2500 {
		t.Errorf("exit %d: %s", code, stdout)
	}
	// A bad value is a usage error naming the variable.
	env["AGENTMEM_BUDGET"] = "lots"
	code, _, stderr = runCLI(t, env, "", "replay")
	if code != 2 || !strings.Contains(stderr, "AGENTMEM_BUDGET") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {}, {"replay", "--help"}, {"help", "replay"}} {
		code, stdout, stderr := runCLI(t, nil, "", args...)
		if code != 0 || !strings.Contains(stdout, "Usage:") || stderr != "" {
			t.Errorf("%v: exit %d, stdout %.100q, stderr %q", args, code, stdout, stderr)
		}
		if len(args) > 0 && args[len(args)-1] == "replay" || len(args) == 2 && args[0] == "replay" {
			if !strings.Contains(stdout, "--budget") || strings.Contains(stdout, "cpuprofile") {
				t.Errorf("%v: replay help: %s", args, stdout)
			}
		} else if !strings.Contains(stdout, "replay") || !strings.Contains(stdout, "AGENTMEM_") {
			t.Errorf("%v: root help: %s", args, stdout)
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runCLI(t, nil, "", "version")
	if code != 0 || !strings.HasPrefix(stdout, "agentmem ") || !strings.Contains(stdout, runtime.Version()) {
		t.Fatalf("exit %d: %q", code, stdout)
	}
	code, flag, _ := runCLI(t, nil, "", "--version")
	if code != 0 || flag != stdout {
		t.Errorf("--version: exit %d, %q; want what the version command prints, %q", code, flag, stdout)
	}
}

func TestVersionLine(t *testing.T) {
	for _, tc := range []struct {
		b    buildStamp
		want string
	}{
		{buildStamp{}, "agentmem devel ("},
		{buildStamp{Version: "v1.2.3", Commit: "0123456789abcdef0123", Date: "2026-11-27T12:00:00Z"},
			"agentmem v1.2.3 (commit 0123456789ab, built 2026-11-27T12:00:00Z, "},
		{buildStamp{Commit: "0123456789abcdef", Date: "2026-11-27T12:00:00Z", Modified: true},
			"agentmem devel (commit 0123456789ab-dirty, built 2026-11-27T12:00:00Z, "},
	} {
		got := versionLine(tc.b)
		if !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(got, runtime.GOOS+"/"+runtime.GOARCH+")") {
			t.Errorf("versionLine(%+v) = %q, want it to start %q", tc.b, got, tc.want)
		}
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"role\":\"system\",\"content\":\"s\"}\n{\"role\":\"user\",\"content\":\"t\"}\n{oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"replay", "--budget", "100"}, 2, "--trace is required"},
		{[]string{"replay", "--trace", sample}, 2, "--budget is required"},
		{[]string{"replay", "--trace", sample, "--budget", "x"}, 2, "invalid argument"},
		{[]string{"replay", "--trace", sample, "--budget", "100", "--format", "xml"}, 2, `unknown format "xml"`},
		{[]string{"replay", "--trace", sample, "--budget", "100", "--tokenizer", "gpt2"}, 2, "gpt2"},
		{[]string{"replay", "--trace", sample, "--budget", "100", "extra"}, 2, "unknown command"},
		{[]string{"replay", "--nope"}, 2, "unknown flag: --nope"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"--log-level", "loud", "version"}, 2, "--log-level"},
		{[]string{"serve", "--store", "mem://", "--extract-facts"}, 2, "--extract-facts needs a model"},
		{[]string{"replay", "--trace", filepath.Join(dir, "missing.jsonl"), "--budget", "100"}, 1, "no such file"},
		{[]string{"replay", "--trace", bad, "--budget", "100"}, 1, "trace line 3: "},
		{[]string{"replay", "--trace", sample, "--budget", "100"}, 1, "render 1 (before trace line 3)"},
	} {
		code, stdout, stderr := runCLI(t, nil, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d and %q", tc.args, code, stderr, stdout, tc.code, tc.stderr)
		}
		if code == 2 && !strings.Contains(stderr, "--help' for usage") {
			t.Errorf("%v: no usage hint: %q", tc.args, stderr)
		}
	}
}
