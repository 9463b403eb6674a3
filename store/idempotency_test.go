package store_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// fingerprintCases are appends whose fingerprints are pinned: a store
// keeps the fingerprint with its idempotency key, so a retry sent after
// an upgrade is recognized only if the same request still gets the same
// fingerprint, byte for byte.
func fingerprintCases() []struct {
	name  string
	steps []agentmem.Step
	c     *store.CompactionRecord
	want  string
} {
	at := time.Date(2026, 11, 28, 12, 30, 15, 123456789, time.FixedZone("CET", 3600))
	action := func(id string, n int, tm time.Time) agentmem.Step {
		return &agentmem.ActionStep{
			StepInfo:    agentmem.StepInfo{ID: id, Number: n, Time: tm, Metadata: map[string]string{"z": "1", "a": "<b>&"}},
			Thought:     "look it up",
			ToolCalls:   []agentmem.ToolCall{{ID: "c1", Name: "search", Arguments: `{"q":"agentmem"}`}},
			Results:     []agentmem.ToolResult{{CallID: "c1", Content: "found \"it\"\n\u2028 é"}},
			Usage:       &agentmem.Usage{InputTokens: 10, OutputTokens: 3},
			Duration:    time.Second,
			ModelOutput: "ok",
		}
	}
	task := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "turn/0"}, Task: "fix the bug"}
	return []struct {
		name  string
		steps []agentmem.Step
		c     *store.CompactionRecord
		want  string
	}{
		{"one task", []agentmem.Step{task}, nil,
			"ccb4104b0b981b9a46300dc3e3abaeb41ec0a2af92632803c9782e46414501d8"},
		{"action", []agentmem.Step{action("turn/0", 0, time.Time{})}, nil, "b1285484f6518c99203865d19f3efad72085bd412e1ab984d6d772b18ad36bb0"},
		{"action, numbered and stamped", []agentmem.Step{action("turn/0", 41, at)}, nil, "b1285484f6518c99203865d19f3efad72085bd412e1ab984d6d772b18ad36bb0"},
		{"ID to escape", []agentmem.Step{action("k\"<\\>/0", 7, at.UTC())}, nil, "3d255f206151b56c6eb686d9f48a3b973d45e13d372a1248916f1f4f5a6ccf68"},
		{"kinds", []agentmem.Step{
			&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{ID: "k/0", Time: at}, Content: "be brief"},
			&agentmem.PlanningStep{StepInfo: agentmem.StepInfo{ID: "k/1", Number: 3}, Plan: "1. read"},
			&agentmem.ScratchpadStep{StepInfo: agentmem.StepInfo{ID: "k/2"}, Content: "note"},
			&agentmem.FinalAnswerStep{StepInfo: agentmem.StepInfo{ID: "k/3", Time: at}, Answer: "42"},
			&agentmem.SummaryStep{StepInfo: agentmem.StepInfo{ID: "k/4"}, Summary: "so far", Covers: []agentmem.Range{{From: 1, To: 2}}},
			&agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: "k/5", Time: at}, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("hi"), Time: at}},
		}, nil, "aa5c7bcf6271beb8fdfc60777b7d70d68f84a0c9f6bafc290d0bcd66f000432b"},
		{"compaction", []agentmem.Step{task, action("turn/1", 0, at)}, &store.CompactionRecord{
			Working:  []int64{1, store.NewStepRef(0), store.NewStepRef(1)},
			Replaced: []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t", Number: 1, Time: at}, Task: "shorter"}},
			Removed:  []int64{2},
		}, "7573aad8703cd7b88d3115f0549400f5b7704ff60af3ae58c4081e02f305884f"},
		{"compaction only", nil, &store.CompactionRecord{Amend: true,
			Replaced: []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t", Number: 1}, Task: "shorter"}}}, "8e38e410cde085b9f74578127b8ac09484b0ebb351d312f37d711af212d49590"},
	}
}

func TestStepsFingerprintPinned(t *testing.T) {
	for _, c := range fingerprintCases() {
		got, err := store.StepsFingerprint(c.steps, c.c)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: StepsFingerprint = %s, want %s", c.name, got, c.want)
		}
		req, err := store.WithStepsKey(store.AppendRequest{SessionID: "s", Steps: c.steps, Compaction: c.c}, "k")
		if err != nil {
			t.Fatalf("%s: WithStepsKey: %v", c.name, err)
		}
		if k := req.Idempotency; k.Key != "k" || k.Fingerprint != c.want {
			t.Errorf("%s: WithStepsKey gives %+v, want the key k and the fingerprint %s", c.name, *k, c.want)
		}
	}
}

// TestWithStepsKeyEncoded checks that a request from WithStepsKey is
// validated and encoded as the request itself, and that its encodings
// stand only for the steps encoded: the store encodes a step that took
// the place of one of them.
func TestWithStepsKeyEncoded(t *testing.T) {
	for _, c := range fingerprintCases() {
		req := store.AppendRequest{SessionID: "s", Steps: c.steps, Compaction: c.c}
		want, err := store.ValidateAppendEncoded(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		keyed, err := store.WithStepsKey(req, "k")
		if err != nil {
			t.Fatal(err)
		}
		got, err := store.ValidateAppendEncoded(keyed)
		if err != nil {
			t.Fatalf("%s: keyed: %v", c.name, err)
		}
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("%s: keyed encodings\n%q\nwant\n%q", c.name, got, want)
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	steps := []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "k/0", Time: at}, Task: "first"}}
	req, err := store.WithStepsKey(store.AppendRequest{SessionID: "s", Steps: steps}, "k")
	if err != nil {
		t.Fatal(err)
	}
	other := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "k/0", Time: at}, Task: "second"}
	steps[0] = other
	got, err := store.ValidateAppendEncoded(req)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := store.EncodeStep(other); !bytes.Equal(got[0], want) {
		t.Errorf("a step put in place of the one encoded: stored as %s, want %s", got[0], want)
	}
	// Bad input is refused as without a key.
	bad := store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "x"}, Task: "\xff"}}}
	keyed, err := store.WithStepsKey(bad, "k")
	if err != nil {
		t.Fatal(err)
	}
	_, want := store.ValidateAppendEncoded(bad)
	if _, err := store.ValidateAppendEncoded(keyed); want == nil || err == nil || err.Error() != want.Error() {
		t.Errorf("an invalid step with a key: %v, want %v", err, want)
	}
	if _, err := store.WithStepsKey(store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{nil}}, "k"); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("a nil step: %v, want ErrInvalid", err)
	}
}
