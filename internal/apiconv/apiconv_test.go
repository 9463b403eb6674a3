package apiconv

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
)

// TestMirrors: each wire type has the JSON members of its domain type, in
// the same order, with the same options, so that a member added to a
// domain type cannot be left off the wire (or change its bytes) unseen.
func TestMirrors(t *testing.T) {
	for _, p := range []struct{ wire, domain reflect.Type }{
		{reflect.TypeFor[api.Session](), reflect.TypeFor[store.Session]()},
		{reflect.TypeFor[api.Pinning](), reflect.TypeFor[agentmem.Pinning]()},
		{reflect.TypeFor[api.AutoCompact](), reflect.TypeFor[store.AutoCompact]()},
		{reflect.TypeFor[api.Fact](), reflect.TypeFor[facts.Fact]()},
		{reflect.TypeFor[api.FactSource](), reflect.TypeFor[facts.Source]()},
		{reflect.TypeFor[api.FactState](), reflect.TypeFor[facts.FactState]()},
		{reflect.TypeFor[api.DroppedRun](), reflect.TypeFor[agentmem.DroppedRun]()},
		{reflect.TypeFor[api.Range](), reflect.TypeFor[agentmem.Range]()},
		{reflect.TypeFor[api.OpenAIMessage](), reflect.TypeFor[render.OpenAIMessage]()},
		{reflect.TypeFor[api.OpenAIPart](), reflect.TypeFor[render.OpenAIPart]()},
		{reflect.TypeFor[api.OpenAIImageURL](), reflect.TypeFor[render.OpenAIImageURL]()},
		{reflect.TypeFor[api.OpenAIToolCall](), reflect.TypeFor[render.OpenAIToolCall]()},
		{reflect.TypeFor[api.OpenAIFunction](), reflect.TypeFor[render.OpenAIFunction]()},
	} {
		if got, want := jsonMembers(p.wire), jsonMembers(p.domain); !slices.Equal(got, want) {
			t.Errorf("%v has the JSON members\n%v\n%v has\n%v", p.wire, got, p.domain, want)
		}
	}
}

// jsonMembers lists the JSON tags of a struct's encoded fields, in order.
func jsonMembers(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		out = append(out, tag)
	}
	return out
}

var (
	t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
	t2 = t0.Add(2 * time.Hour)
)

// sameJSON fails the test unless wire and domain encode to the same bytes.
func sameJSON(t *testing.T, what string, wire, domain any) {
	t.Helper()
	w, err := json.Marshal(wire)
	if err != nil {
		t.Fatal(err)
	}
	d, err := json.Marshal(domain)
	if err != nil {
		t.Fatal(err)
	}
	if string(w) != string(d) {
		t.Errorf("%s: the wire form encodes to\n%s\nthe domain form to\n%s", what, w, d)
	}
}

func TestSession(t *testing.T) {
	full := &store.Session{
		ID: "s", Tenant: "acme", UserID: "u", Agent: "a", ParentID: "p", ForkSeq: 3, Metadata: map[string]string{"k": "v"},
		Retention: store.Persistent, ExpiresAt: t2, CreatedAt: t0, UpdatedAt: t1, LastSeq: 9,
		Pinning:     &agentmem.Pinning{SystemPrompts: true, FirstTask: true, Tasks: true, Summary: true},
		AutoCompact: &store.AutoCompact{MaxTokens: 1000, TargetTokens: 500, KeepRecent: 4, Summarizer: store.SummarizerLLM},
	}
	bare := &store.Session{ID: "s", Retention: store.SessionRetention, CreatedAt: t0, UpdatedAt: t0}
	for _, s := range []*store.Session{full, bare} {
		w := Session(s)
		sameJSON(t, "session "+s.ID, w, s)
		if back := SessionFromAPI(w); !reflect.DeepEqual(back, s) {
			t.Errorf("round trip: %+v, want %+v", back, s)
		}
	}
	if Session(nil) != nil || SessionFromAPI(nil) != nil {
		t.Error("nil sessions convert to non-nil")
	}
	sameJSON(t, "sessions", Sessions([]*store.Session{full, bare}), []*store.Session{full, bare})
}

func TestFact(t *testing.T) {
	f := facts.Fact{
		ID: "f", Tenant: "acme", UserID: "u", Text: "likes tea", Confidence: 0.8, CreatedAt: t0, ReinforcedAt: t1, Reinforcements: 2,
		Source: facts.Source{SessionID: "s", StepSeq: 4, Agent: "a"}, SupersededBy: "g", SupersededAt: t2,
		ValidFrom: t0.Add(-time.Hour), ValidTo: t2, Metadata: map[string]string{"k": "v"}, Embedding: []float32{1, 2},
	}
	sameJSON(t, "fact", Fact(f), f)
	sameJSON(t, "bare fact", Fact(facts.Fact{ID: "f"}), facts.Fact{ID: "f"})
	sameJSON(t, "facts", Facts([]facts.Fact{f}), []facts.Fact{f})
	if got := FactSourceFromAPI(FactSource(f.Source)); got != f.Source {
		t.Errorf("source round trip: %+v", got)
	}
	log := []facts.AuditEntry{
		{Seq: 1, Tenant: "acme", UserID: "u", FactID: "f", Action: facts.ActionAdded, By: "a", At: t0, After: f.State()},
		{Seq: 2, Tenant: "acme", UserID: "u", FactID: "f", Action: facts.ActionUpdated, By: "b", Reason: "r", At: t1, Before: f.State(), After: &facts.FactState{Text: "x", ValidFrom: t0}},
		{Seq: 3, Tenant: "acme", UserID: "u", FactID: "f", Action: facts.ActionForgotten, At: t2, Digest: "sha256:00"},
	}
	changes := FactChanges(log)
	for i, e := range log {
		sameJSON(t, "state before", changes[i].Before, e.Before)
		sameJSON(t, "state after", changes[i].After, e.After)
		if c := changes[i]; c.Seq != e.Seq || c.Action != string(e.Action) || c.By != e.By || c.Reason != e.Reason || !c.At.Equal(e.At) || c.Digest != e.Digest {
			t.Errorf("change %d = %+v, want %+v", i, c, e)
		}
	}
}

func TestContextParts(t *testing.T) {
	runs := []agentmem.DroppedRun{{First: 2, Last: 4, Count: 3}}
	sameJSON(t, "dropped", DroppedRuns(runs), runs)
	rs := []agentmem.Range{{From: 1, To: 5}}
	sameJSON(t, "ranges", Ranges(rs), rs)
	if DroppedRuns(nil) != nil || Ranges(nil) != nil {
		t.Error("nil lists convert to non-nil")
	}
	sameJSON(t, "empty ranges", Ranges([]agentmem.Range{}), []agentmem.Range{})
}

func TestOpenAIMessages(t *testing.T) {
	msgs := []agentmem.Message{
		{Role: agentmem.RoleSystem, Content: agentmem.Text("Be brief.")},
		{Role: agentmem.RoleUser, Name: "ann", Content: []agentmem.Part{
			{Type: agentmem.PartText, Text: "What is this?"},
			{Type: agentmem.PartImage, Image: &agentmem.Image{URL: "https://example.com/a.png", Detail: "low"}},
		}},
		{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "look", Arguments: `{"x":1}`}}},
		{Role: agentmem.RoleTool, ToolCallID: "c1", Content: agentmem.Text("a cat")},
	}
	wire := render.OpenAIRequest(msgs)
	got := OpenAIMessages(msgs)
	sameJSON(t, "messages", got, wire)
	if _, ok := got[1].Content.([]api.OpenAIPart); !ok {
		t.Errorf("parts are %T, want []api.OpenAIPart", got[1].Content)
	}
}

func TestReadSteps(t *testing.T) {
	task := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 1, ID: "t", Time: t0, Metadata: map[string]string{"k": "<v>"}}, Task: "Fix it & ship."}
	act := &agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 2, ID: "a"},
		ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "run", Arguments: "{}"}},
		Results:   []agentmem.ToolResult{{CallID: "c1", Content: "ok"}}}
	copyAct := &agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 2, ID: "a"},
		ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "run", Arguments: "{}"}},
		Results:   []agentmem.ToolResult{{CallID: "c1", Content: "o"}}}
	entries := []store.Entry{
		{Seq: 1, Kind: store.StepEntry, Step: task, Time: t0},
		{Seq: 2, Kind: store.StepEntry, Step: act, Time: t0},
		{Seq: 3, Kind: store.CompactionEntry, Time: t1, Compaction: &store.CompactionRecord{Working: []int64{1, 2}, Replaced: []agentmem.Step{copyAct}}},
		{Seq: 4, Kind: store.CompactionEntry, Time: t2, Compaction: &store.CompactionRecord{Working: nil, Removed: []int64{1, 2}}},
		{Seq: 5, Kind: store.CompactionEntry, Time: t2, Compaction: &store.CompactionRecord{Amend: true, Replaced: []agentmem.Step{copyAct}}},
	}
	got, err := ReadSteps(entries, 5)
	if err != nil {
		t.Fatal(err)
	}
	// The answer's form before it had wire types of its own: typed steps
	// encoded by their MarshalJSON.
	type compactionEntry struct {
		Seq      int64             `json:"seq"`
		Time     time.Time         `json:"time"`
		Amend    bool              `json:"amend,omitempty"`
		Working  *[]int64          `json:"working,omitempty"`
		Removed  []int64           `json:"removed,omitempty"`
		Replaced agentmem.StepList `json:"replaced,omitempty"`
	}
	w12, w0 := []int64{1, 2}, []int64{}
	want := struct {
		Steps       agentmem.StepList `json:"steps"`
		Compactions []compactionEntry `json:"compactions,omitempty"`
		LastSeq     int64             `json:"last_seq"`
	}{
		Steps: agentmem.StepList{task, act},
		Compactions: []compactionEntry{
			{Seq: 3, Time: t1, Working: &w12, Replaced: agentmem.StepList{copyAct}},
			{Seq: 4, Time: t2, Working: &w0, Removed: []int64{1, 2}},
			{Seq: 5, Time: t2, Amend: true, Replaced: agentmem.StepList{copyAct}},
		},
		LastSeq: 5,
	}
	sameJSON(t, "read", got, want)

	// And back: the same entries, less the times of step entries, which
	// the answer does not have.
	data, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var decoded api.ReadStepsResponse
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	back, err := EntriesFromAPI(&decoded)
	if err != nil {
		t.Fatal(err)
	}
	wantBack := slices.Clone(entries)
	wantBack[0].Time, wantBack[1].Time = time.Time{}, time.Time{}
	wantBack[3].Compaction = &store.CompactionRecord{Working: []int64{}, Removed: []int64{1, 2}}
	if !reflect.DeepEqual(back, wantBack) {
		t.Errorf("entries back:\n%+v\nwant\n%+v", back, wantBack)
	}
	decoded.Compactions[0].Working = nil
	if _, err := EntriesFromAPI(&decoded); err == nil {
		t.Error("a full compaction record without its working set was accepted")
	}
}

func TestCompactionRecord(t *testing.T) {
	act := &agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 2, ID: "a"}, Observation: "x"}
	for _, rec := range []*store.CompactionRecord{
		{Working: []int64{1, store.NewStepRef(0)}, Removed: []int64{3}, Replaced: []agentmem.Step{act}},
		{},
		{Amend: true, Replaced: []agentmem.Step{act}},
	} {
		w, err := CompactionRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := store.EncodeCompaction(rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(enc) {
			t.Errorf("wire form %s, store.EncodeCompaction %s", got, enc)
		}
	}
}

func TestDamaged(t *testing.T) {
	ds := []*agentmem.DamagedError{{Kind: "session", Tenant: "acme", ID: "s", Err: agentmem.ErrDamaged}}
	w := Damaged(ds)
	if len(w) != 1 || w[0].ID != "s" || w[0].Error != agentmem.ErrDamaged.Error() {
		t.Fatalf("wire %+v", w)
	}
	back := DamagedFromAPI("session", "acme", w)
	if len(back) != 1 || back[0].ID != "s" || back[0].Tenant != "acme" || back[0].Kind != "session" || back[0].Err.Error() != w[0].Error {
		t.Errorf("back %+v", back)
	}
	if Damaged(nil) != nil || DamagedFromAPI("session", "", nil) != nil {
		t.Error("no records convert to some")
	}
}
