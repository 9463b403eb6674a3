package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/replay"
)

// agentmem-bench trace writes what the README runs agentmem replay on:
// OpenAI-format messages, deterministic for a seed.
func TestBenchTrace(t *testing.T) {
	code, out, stderr := runCLI(t, nil, "", "trace", "--steps", "5", "--seed", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2+2*5 {
		t.Fatalf("%d lines, want 12", len(lines))
	}
	var calls []string
	for i, l := range lines {
		var m agentmem.Message
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		want := []agentmem.Role{agentmem.RoleSystem, agentmem.RoleUser}[min(i, 1)]
		if i >= 2 {
			want = []agentmem.Role{agentmem.RoleAssistant, agentmem.RoleTool}[i%2]
		}
		if m.Role != want {
			t.Fatalf("line %d is %s, want %s", i+1, m.Role, want)
		}
		switch m.Role {
		case agentmem.RoleAssistant:
			if len(m.ToolCalls) != 1 || len(m.Text()) < 150 {
				t.Fatalf("line %d: %d calls, %d characters of reasoning", i+1, len(m.ToolCalls), len(m.Text()))
			}
			calls = append(calls, m.ToolCalls[0].ID)
		case agentmem.RoleTool:
			if m.ToolCallID != calls[len(calls)-1] || len(m.Text()) < 80 {
				t.Fatalf("line %d answers %q, want %q", i+1, m.ToolCallID, calls[len(calls)-1])
			}
		case agentmem.RoleSystem:
			if len(m.Text()) < 1900 {
				t.Fatalf("system prompt of %d characters", len(m.Text()))
			}
		}
	}
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if code, _, stderr := runCLI(t, nil, "", "trace", "--steps", "5", "--seed", "7", "-o", path); code != 0 {
		t.Fatalf("-o: exit %d: %s", code, stderr)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != out {
		t.Fatalf("-o wrote another trace (%v)", err)
	}
	if _, other, _ := runCLI(t, nil, "", "trace", "--steps", "5", "--seed", "8"); other == out {
		t.Fatal("another seed gave the same trace")
	}
	// agentmem replay replays it (package replay), without a violation.
	res, err := replay.Run(t.Context(), replay.Config{Trace: strings.NewReader(out), Budget: 4000})
	if err != nil || res.Steps != 5 || res.Violations.Total != 0 {
		t.Fatalf("replay of the trace: %+v, %v", res, err)
	}
}
