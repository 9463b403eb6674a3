package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/llm"
)

// TestAgentOffline runs the whole loop against the scripted model, which
// refuses any invalid conversation with HTTP 400: finishing proves every
// request the memory rendered was valid.
func TestAgentOffline(t *testing.T) {
	t.Setenv("AGENTMEM_LLM_BASE_URL", "")
	var out strings.Builder
	res, err := run(context.Background(), Config{Task: "weather in Paris and Oslo: which is warmer?", Budget: 2000, MaxSteps: 12, Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if res.Answer != "Paris is warmer: 18°C against 9°C in Oslo." {
		t.Fatalf("answer = %q\n%s", res.Answer, out.String())
	}
	if !strings.Contains(out.String(), "built-in scripted model") {
		t.Fatal("the offline run did not say it used the scripted model")
	}
	if n := len(agentmem.StepsOf[*agentmem.FinalAnswerStep](res.Memory)); n != 1 {
		t.Fatalf("%d final answer steps", n)
	}
}

// TestAgentCompactsUnderPressure gives the agent a budget so small that
// its memory must truncate and summarize; the answer still comes out right
// because the facts live in the scratchpad. The LLM summarizer is used
// (LLM config set), through the real client against the scripted server.
func TestAgentCompactsUnderPressure(t *testing.T) {
	srv := httptest.NewServer(newScriptedModel())
	defer srv.Close()
	var out strings.Builder
	res, err := run(context.Background(), Config{
		Task: "weather in Paris and Oslo: which is warmer?", Budget: 450, MaxSteps: 12, Out: &out,
		LLM: &llm.Config{BaseURL: srv.URL + "/v1", Model: "scripted"},
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(res.Answer, "Paris is warmer") {
		t.Fatalf("answer = %q\n%s", res.Answer, out.String())
	}
	if !strings.Contains(out.String(), "[memory] compacted") {
		t.Fatalf("no compaction under a 450-token budget:\n%s", out.String())
	}
	if !strings.Contains(res.Memory.Summary(), "scratchpad") {
		t.Fatalf("the LLM summary is missing: %q\n%s", res.Memory.Summary(), res.Memory.Visualize())
	}
}

// TestFirstLineKeepsUTF8: the one-line previews of the run's output never
// cut a character in half (issue 13 item 15: "9°C 9�…").
func TestFirstLineKeepsUTF8(t *testing.T) {
	// Shift the observation so that byte 100 falls at every place of the
	// two-byte '°'.
	for shift := range 20 {
		s := strings.Repeat("x", shift) + weather["oslo"]
		got := firstLine(s)
		if !utf8.ValidString(got) {
			t.Fatalf("firstLine(%.30q…) = %q is not valid UTF-8", s, got)
		}
		if len(got) > 100+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(s, strings.TrimSuffix(got, "…")) {
			t.Fatalf("firstLine = %q", got)
		}
	}
	if got := firstLine("short\nsecond line"); got != "short" {
		t.Fatalf("firstLine of a short text = %q", got)
	}
}
