package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

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
