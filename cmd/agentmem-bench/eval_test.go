package main

import (
	"testing"

	"github.com/agentmem/agentmem/internal/bench/locomo"
	"github.com/agentmem/agentmem/internal/cli/clitest"
)

const tinyLoCoMo = "../../internal/bench/locomo/testdata/tiny.json"

// evalReport decodes the one JSON line of agentmem-bench eval recall.
func evalReport(t *testing.T, stdout string) locomo.Report {
	t.Helper()
	return clitest.DecodeLine[locomo.Report](t, stdout)
}

func TestEvalRecall(t *testing.T) {
	// The figures of locomo.TestEvaluate, through the command, with both
	// backends.
	for _, backend := range []string{"mem", "sqlite"} {
		code, stdout, stderr := runCLI(t, nil, "", "eval", "recall", "--dataset", tinyLoCoMo, "--k", "5,1", "--backend", backend)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", backend, code, stderr)
		}
		rep := evalReport(t, stdout)
		if rep.Questions != 4 || rep.Unit != "turn" || rep.Recall["1"] != 0.5 || rep.Recall["5"] != 0.625 || rep.Dataset != tinyLoCoMo || rep.ByCategory["2"].Recall["5"] != 1 {
			t.Errorf("%s: %s", backend, stdout)
		}
	}
	// Sessions: "What does Alice play?" has evidence in session 2 and a
	// missing session 9, so it scores 1/2 at any k.
	code, stdout, stderr := runCLI(t, nil, "", "eval", "recall", "--dataset", tinyLoCoMo, "--k", "1,2", "--unit", "session")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if rep := evalReport(t, stdout); rep.Unit != "session" || rep.Recall["2"] < rep.Recall["1"] || rep.Recall["2"] > 1 {
		t.Errorf("session unit: %s", stdout)
	}
}

func TestEvalRecallUsage(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "recall"},
		{"eval", "recall", "--dataset", tinyLoCoMo, "--k", "0"},
		{"eval", "recall", "--dataset", tinyLoCoMo, "--unit", "word"},
		{"eval", "recall", "--dataset", tinyLoCoMo, "--backend", "oracle"},
	} {
		if code, _, _ := runCLI(t, nil, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := runCLI(t, nil, "", "eval", "recall", "--dataset", "/nonexistent.json"); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}
