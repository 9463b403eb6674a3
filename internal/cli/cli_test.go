package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestEnvName(t *testing.T) {
	for flag, want := range map[string]string{"tokenizer": "AGENTMEM_TOKENIZER", "log-level": "AGENTMEM_LOG_LEVEL", "max-line-bytes": "AGENTMEM_MAX_LINE_BYTES"} {
		if got := EnvName(flag); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flag, got, want)
		}
	}
}

// echo is the test's subcommand: it prints --word, fails for "fail" and
// wants a word.
func init() {
	Register(func(*App) *cobra.Command {
		var word string
		cmd := &cobra.Command{Use: "echo", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
			switch word {
			case "fail":
				return Failure(errors.New("it broke"))
			case "":
				return Usagef("--word is required")
			}
			return PrintJSONLine(cmd.OutOrStdout(), word)
		}}
		cmd.Flags().StringVar(&word, "word", "", "")
		return cmd
	})
}

// A command built with Root reads its flags from the environment, and
// Execute turns its errors into exit codes and messages that name the
// command.
func TestExecute(t *testing.T) {
	run := func(env map[string]string, args ...string) (int, string, string) {
		a := &App{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
		var out, errb bytes.Buffer
		root := a.Root(&cobra.Command{Use: "tool"}, strings.NewReader(""), &out, &errb)
		code := Execute(context.Background(), root, args, &errb)
		return code, out.String(), errb.String()
	}
	for _, tc := range []struct {
		env          map[string]string
		args         []string
		code         int
		out, inError string
	}{
		{nil, []string{"echo", "--word", "hi"}, 0, "\"hi\"\n", ""},
		{map[string]string{"AGENTMEM_WORD": "env"}, []string{"echo"}, 0, "\"env\"\n", ""},
		{map[string]string{"AGENTMEM_WORD": "env"}, []string{"echo", "--word", "flag"}, 0, "\"flag\"\n", ""},
		{nil, []string{"echo", "--word", "fail"}, 1, "", "tool echo: it broke\n"},
		{nil, []string{"echo"}, 2, "", "tool: --word is required\nRun 'tool echo --help' for usage.\n"},
		{nil, []string{"echo", "--nope"}, 2, "", "unknown flag: --nope"},
		{nil, []string{"other"}, 2, "", `unknown command "other"`},
		{map[string]string{"AGENTMEM_LOG_LEVEL": "loud"}, []string{"echo", "--word", "x"}, 2, "", "--log-level"},
	} {
		code, out, stderr := run(tc.env, tc.args...)
		if code != tc.code || out != tc.out || !strings.Contains(stderr, tc.inError) || (tc.inError == "") != (stderr == "") {
			t.Errorf("%v %v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.env, tc.args, code, out, stderr, tc.code, tc.out, tc.inError)
		}
	}
}

// An AtomicFile is at its path complete after Commit, and nowhere after
// Abort.
func TestAtomicFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	f, err := CreateAtomic(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("whole"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file is at its path before Commit: %v", err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "whole" {
		t.Fatalf("after Commit: %q, %v", data, err)
	}
	g, err := CreateAtomic(path)
	if err != nil {
		t.Fatal(err)
	}
	g.WriteString("half")
	g.Abort()
	entries, _ := os.ReadDir(dir)
	if data, _ := os.ReadFile(path); string(data) != "whole" || len(entries) != 1 {
		t.Fatalf("after Abort: %q, %d files", data, len(entries))
	}
}
