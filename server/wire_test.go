package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/apiconv"
	"github.com/agentmem/agentmem/store"
)

// TestWireBytes: the answers the server encodes from the wire types of
// package api are byte for byte what it encoded from the domain types
// before, through the server's own encoder: a session, and a log read
// whose steps (now JSON texts) hold characters that HTML escaping would
// change.
func TestWireBytes(t *testing.T) {
	encode := func(v any) string {
		t.Helper()
		var buf bytes.Buffer
		if err := encodeResponse(&buf, v); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sess := &store.Session{ID: "s<1>", Tenant: "acme", UserID: "u&v", Retention: store.SessionRetention, CreatedAt: t0, UpdatedAt: t0, LastSeq: 3,
		Pinning: &agentmem.DefaultPinning, AutoCompact: &store.AutoCompact{MaxTokens: 100}}
	if got, want := encode(apiconv.Session(sess)), encode(sess); got != want {
		t.Errorf("session:\n%s\nwant\n%s", got, want)
	}
	task := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 1, ID: "t", Time: t0}, Task: "Use <b> & \u2028 here."}
	act := &agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 2}, Observation: "a > b"}
	entries := []store.Entry{
		{Seq: 1, Kind: store.StepEntry, Step: task},
		{Seq: 2, Kind: store.StepEntry, Step: act},
		{Seq: 3, Kind: store.CompactionEntry, Time: t0, Compaction: &store.CompactionRecord{Working: []int64{1, 2}, Replaced: []agentmem.Step{act}}},
	}
	wire, err := apiconv.ReadSteps(entries, 3)
	if err != nil {
		t.Fatal(err)
	}
	w := []int64{1, 2}
	typed := readSteps{Steps: agentmem.StepList{task, act}, Compactions: []compactionEntry{{Seq: 3, Time: t0, Working: &w, Replaced: agentmem.StepList{act}}}, LastSeq: 3}
	if got, want := encode(wire), encode(typed); got != want {
		t.Errorf("read:\n%s\nwant\n%s", got, want)
	}
}
