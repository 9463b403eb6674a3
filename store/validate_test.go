package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

func TestValidateID(t *testing.T) {
	for _, id := range []string{"a", "0", "A-b_c.d:e", strings.Repeat("z", store.MaxIDLen), "0192f1a4-7d3e-7c2a-9a51-2b7e2c1d3e4f",
		"user@example.com", "Research Agent", " ", "../x", "a/b", `a\b`, "-a", ".a", "...", "é", strings.Repeat("é", store.MaxIDLen/2)} {
		if err := store.ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", ".", "..", "a\x00", "a\n", "\ta", "\x7f", "a\u0085", "\xff", strings.Repeat("z", store.MaxIDLen+1), strings.Repeat("é", store.MaxIDLen/2) + "z"} {
		err := store.ValidateID(id)
		var inv *agentmem.InvalidError
		if !errors.As(err, &inv) || !errors.Is(err, agentmem.ErrInvalid) || inv.Field != "session_id" {
			t.Errorf("ValidateID(%q) = %v, want an *InvalidError for session_id", id, err)
		}
	}
}

func TestValidateCompaction(t *testing.T) {
	step := func(id string, n int64) agentmem.Step {
		return store.WithNumber(&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: id}, Task: "t"}, n)
	}
	ok := []*store.CompactionRecord{
		{},
		{Working: []int64{1, 2, store.NewStepRef(0), store.NewStepRef(1)}, Removed: []int64{3}},
		{Working: []int64{5}, Replaced: []agentmem.Step{step("a", 5)}},
	}
	for _, c := range ok {
		if err := store.ValidateCompaction(c, 2); err != nil {
			t.Errorf("ValidateCompaction(%+v) = %v", c, err)
		}
	}
	bad := map[string]*store.CompactionRecord{
		"zero":                {Working: []int64{0}},
		"ref past steps":      {Working: []int64{store.NewStepRef(2)}},
		"dup":                 {Working: []int64{3, 3}},
		"removed dup":         {Removed: []int64{3, 3}},
		"removed negative":    {Removed: []int64{-1}},
		"replaced elsewhere":  {Working: []int64{5}, Replaced: []agentmem.Step{step("a", 6)}},
		"replaced twice":      {Working: []int64{5}, Replaced: []agentmem.Step{step("a", 5), step("a", 5)}},
		"replaced without ID": {Working: []int64{5}, Replaced: []agentmem.Step{step("", 5)}},
		"replaced nil":        {Working: []int64{5}, Replaced: []agentmem.Step{nil}},
		"replaced new step":   {Working: []int64{store.NewStepRef(0)}, Replaced: []agentmem.Step{step("a", store.NewStepRef(0))}},
	}
	for name, c := range bad {
		if err := store.ValidateCompaction(c, 2); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("%s: ValidateCompaction = %v, want ErrInvalid", name, err)
		}
	}
	if err := store.ValidateCompaction(nil, 0); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("nil record: %v", err)
	}
}

func TestResolveCompaction(t *testing.T) {
	c := &store.CompactionRecord{Working: []int64{1, store.NewStepRef(1), 2, store.NewStepRef(0)}, Removed: []int64{3}}
	got, err := storekit.ResolveCompaction(c, []int64{10, 11})
	if err != nil || !slices.Equal(got.Working, []int64{1, 11, 2, 10}) || !slices.Equal(got.Removed, []int64{3}) {
		t.Fatalf("ResolveCompaction = %+v, %v", got, err)
	}
	if c.Working[1] != store.NewStepRef(1) {
		t.Fatal("ResolveCompaction changed its argument")
	}
	// A new step that was stored already under a number Working names.
	if _, err := storekit.ResolveCompaction(&store.CompactionRecord{Working: []int64{1, store.NewStepRef(0)}}, []int64{1}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("a step named twice after resolution: %v", err)
	}
}

func TestNewSession(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	md := map[string]string{"a": "b"}
	s := storekit.NewSession(store.CreateRequest{Metadata: md, TTL: time.Hour, ParentID: "p", ForkSeq: 4}, now)
	if store.ValidateID(s.ID) != nil || s.Retention != store.SessionRetention || !s.ExpiresAt.Equal(now.Add(time.Hour)) || s.LastSeq != 4 || !s.CreatedAt.Equal(now) {
		t.Fatalf("NewSession = %+v", s)
	}
	md["a"] = "changed"
	if s.Metadata["a"] != "b" {
		t.Fatal("NewSession shares the metadata map")
	}
	if !s.Expired(now.Add(time.Hour)) || s.Expired(now.Add(time.Hour-1)) {
		t.Fatal("Expired at the boundary")
	}
	s.Retention = store.Persistent
	if s.Expired(now.Add(1000 * time.Hour)) {
		t.Fatal("a persistent session expired")
	}
}

func TestSelectEntries(t *testing.T) {
	var entries []store.Entry
	for _, seq := range []int64{1, 2, 4, 7, 8} { // gaps, as after pruning
		entries = append(entries, store.Entry{Seq: seq})
	}
	for _, c := range []struct {
		req  store.ReadRequest
		want []int64
	}{
		{store.ReadRequest{}, []int64{1, 2, 4, 7, 8}},
		{store.ReadRequest{After: 3}, []int64{4, 7, 8}},
		{store.ReadRequest{After: 2, Limit: 2}, []int64{4, 7}},
		{store.ReadRequest{Last: 2}, []int64{7, 8}},
		{store.ReadRequest{After: 7, Last: 3}, []int64{8}},
	} {
		var got []int64
		for _, e := range storekit.SelectEntries(entries, c.req) {
			got = append(got, e.Seq)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("SelectEntries(%+v) = %v, want %v", c.req, got, c.want)
		}
	}
}

func TestWithNumber(t *testing.T) {
	for _, s := range []agentmem.Step{
		&agentmem.SystemPromptStep{}, &agentmem.TaskStep{}, &agentmem.ActionStep{}, &agentmem.PlanningStep{},
		&agentmem.ScratchpadStep{}, &agentmem.FinalAnswerStep{}, &agentmem.SummaryStep{}, &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser}},
	} {
		n := store.WithNumber(s, 42)
		if n.Info().Number != 42 || s.Info().Number != 0 || n.Kind() != s.Kind() {
			t.Errorf("WithNumber(%s): %d (original %d)", s.Kind(), n.Info().Number, s.Info().Number)
		}
	}
}
