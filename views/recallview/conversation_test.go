package recallview_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views/recallview"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func TestStepDocs(t *testing.T) {
	sess := &store.Session{ID: "s1", Tenant: "acme", UserID: "alice", Agent: "coder"}
	big := strings.Repeat("x", 10_000)
	entry := func(seq int64, s agentmem.Step) store.Entry {
		return store.Entry{Seq: seq, Kind: store.StepEntry, Step: s, Time: t0.Add(time.Duration(seq) * time.Minute)}
	}
	tests := []struct {
		step agentmem.Step
		want string // "" means no document
	}{
		{&agentmem.SystemPromptStep{Content: "You are helpful."}, ""},
		{&agentmem.TaskStep{Task: "Fix the login bug"}, "Fix the login bug"},
		{&agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("I moved to Lisbon")}}, "user: I moved to Lisbon"},
		{&agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleAssistant, Name: "Bot", Content: agentmem.Text("Noted")}}, "Bot: Noted"},
		{&agentmem.ActionStep{Thought: "check the file", ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"main.go"}`}},
			Results: []agentmem.ToolResult{{CallID: "c1", Content: "package main"}}}, "check the file\nread_file {\"path\":\"main.go\"}\npackage main"},
		{&agentmem.PlanningStep{Plan: "1. read 2. fix"}, "1. read 2. fix"},
		{&agentmem.FinalAnswerStep{Answer: "Fixed in auth.go"}, "Fixed in auth.go"},
		{&agentmem.ScratchpadStep{Content: ""}, ""},
	}
	for i, tt := range tests {
		seq := int64(i + 1)
		docs := recallview.StepDocs(sess, entry(seq, tt.step))
		if tt.want == "" {
			if len(docs) != 0 {
				t.Errorf("%T: %d docs, want none", tt.step, len(docs))
			}
			continue
		}
		if len(docs) != 1 {
			t.Fatalf("%T: %d docs", tt.step, len(docs))
		}
		d := docs[0]
		if d.Text != tt.want {
			t.Errorf("%T: text %q, want %q", tt.step, d.Text, tt.want)
		}
		wantMeta := map[string]string{"session": "s1", "user": "alice", "agent": "coder", "step": itoa(seq), "kind": string(tt.step.Kind())}
		if d.ID != "s1#"+itoa(seq) || d.Tenant != "acme" || d.Group != "s1" || d.Seq != seq || !d.Time.Equal(t0.Add(time.Duration(seq)*time.Minute)) || !mapsEqual(d.Metadata, wantMeta) {
			t.Errorf("%T: doc %+v", tt.step, d)
		}
	}
	// Long observations are cut; the step's own time wins over the entry's.
	docs := recallview.StepDocs(sess, entry(9, &agentmem.ActionStep{StepInfo: agentmem.StepInfo{Time: t0}, Observation: big}))
	if len(docs) != 1 || len(docs[0].Text) > recallview.MaxObservationBytes+100 || !docs[0].Time.Equal(t0) {
		t.Errorf("long observation: %d bytes, time %v", len(docs[0].Text), docs[0].Time)
	}
	// Compaction entries and a nil session give nothing.
	if got := recallview.StepDocs(sess, store.Entry{Seq: 10, Kind: store.CompactionEntry}); got != nil {
		t.Errorf("compaction: %v", got)
	}
	if got := recallview.StepDocs(nil, entry(1, &agentmem.TaskStep{Task: "x"})); got != nil {
		t.Errorf("nil session: %v", got)
	}
}

// IsStepDoc tells the documents StepDocs makes, an amendment's copies
// too, from those a caller put, even ones that name a session.
func TestIsStepDoc(t *testing.T) {
	sess := &store.Session{ID: "s#1", Tenant: "acme", UserID: "alice"}
	task := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t", Number: 12}, Task: "Fix the login bug"}
	var made []recall.Doc
	made = append(made, recallview.StepDocs(sess, store.Entry{Seq: 12, Kind: store.StepEntry, Step: task, Time: t0})...)
	made = append(made, recallview.StepDocs(sess, store.Entry{Seq: 20, Kind: store.CompactionEntry, Time: t0,
		Compaction: &store.CompactionRecord{Amend: true, Replaced: []agentmem.Step{task}}})...)
	if len(made) != 2 {
		t.Fatalf("StepDocs made %d documents, want 2", len(made))
	}
	for _, d := range made {
		if !recallview.IsStepDoc(d) {
			t.Errorf("IsStepDoc(%+v) = false, want true", d)
		}
	}
	step := made[0]
	for name, change := range map[string]func(d *recall.Doc){
		"an ID of its own":           func(d *recall.Doc) { d.ID = "note-1" },
		"another seq in its ID":      func(d *recall.Doc) { d.ID = "s#1#13" },
		"another group":              func(d *recall.Doc) { d.Group = "s2" },
		"no group":                   func(d *recall.Doc) { d.Group, d.ID = "", "#12" },
		"another session's metadata": func(d *recall.Doc) { d.Metadata = map[string]string{"session": "s2", "step": "12"} },
		"no step metadata":           func(d *recall.Doc) { d.Metadata = map[string]string{"session": "s#1"} },
		"a step that is not its seq": func(d *recall.Doc) { d.Metadata = map[string]string{"session": "s#1", "step": "012"} },
		"no seq": func(d *recall.Doc) {
			d.Seq, d.ID, d.Metadata = 0, "s#1#0", map[string]string{"session": "s#1", "step": "0"}
		},
	} {
		d := step.Clone()
		change(&d)
		if recallview.IsStepDoc(d) {
			t.Errorf("IsStepDoc of a document with %s = true, want false", name)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestIndexer indexes the sessions of a store (backfill, then appends)
// and searches them by scope.
func TestIndexer(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: func() time.Time { return t0 }})
	defer st.Close()
	mk := func(id, user, agent string, texts ...string) *store.Session {
		s, err := st.Create(ctx, store.CreateRequest{ID: id, Tenant: "acme", UserID: user, Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		var steps []agentmem.Step
		for _, tx := range texts {
			steps = append(steps, &agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(tx)}})
		}
		if _, err := st.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: id, Steps: steps}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	mk("s1", "alice", "coder", "my cat is called Miso", "I live in Lisbon")
	mk("s2", "alice", "travel", "book a flight to Lisbon")
	mk("s3", "bob", "coder", "Lisbon has good coffee")
	if _, err := st.Create(ctx, store.CreateRequest{ID: "other", Tenant: "globex", UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	x := &recallview.Indexer{Index: ix, Store: st}
	n, err := x.Backfill(ctx, store.ListRequest{Tenant: "acme", PageSize: 1})
	if err != nil || n != 4 {
		t.Fatalf("Backfill = %d, %v; want 4", n, err)
	}
	search := func(f recall.Filter) []string {
		hits, err := ix.Search(ctx, recall.Query{Tenant: "acme", Text: "Lisbon", K: 10, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			if strings.Contains(h.Doc.Text, "Lisbon") {
				out = append(out, h.Doc.ID)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range []struct {
		f    recall.Filter
		want []string
	}{
		{recall.Scope("s1", "", ""), []string{"s1#2"}},
		{recall.Scope("", "alice", ""), []string{"s1#2", "s2#1"}},
		{recall.Scope("", "", "coder"), []string{"s1#2", "s3#1"}},
		{recall.Scope("", "", ""), []string{"s1#2", "s2#1", "s3#1"}},
	} {
		if got := search(tt.f); !slices.Equal(got, tt.want) {
			t.Errorf("scope %v: %v, want %v", tt.f.Metadata, got, tt.want)
		}
	}
	// An append is indexed; a backfill again changes nothing.
	resp, err := st.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "s3", Steps: []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Task: "Find a hotel in Lisbon"}}})
	if err != nil {
		t.Fatal(err)
	}
	read, err := st.Read(ctx, store.ReadRequest{Tenant: "acme", SessionID: "s3", After: resp.Seqs[0] - 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Add(ctx, read.Session, read.Entries...); err != nil {
		t.Fatal(err)
	}
	if got := search(recall.Scope("", "bob", "")); !slices.Equal(got, []string{"s3#1", "s3#2"}) {
		t.Errorf("after Add: %v", got)
	}
	hits, _ := ix.Search(ctx, recall.Query{Tenant: "acme", Text: "hotel", K: 1})
	if len(hits) != 1 || hits[0].Doc.Metadata[recall.MetaSession] != "s3" || hits[0].Doc.Metadata[recall.MetaStep] != "2" || !hits[0].Doc.Time.Equal(t0) {
		t.Errorf("hit carries %+v", hits)
	}
	if n, err := x.Forget(ctx, read.Session); err != nil || n != 2 {
		t.Errorf("Forget = %d, %v", n, err)
	}
	if got := search(recall.Scope("", "bob", "")); len(got) != 0 {
		t.Errorf("after Forget: %v", got)
	}
}

// The text of each kind of step, exactly: blank parts are left out, a
// tool call is its name and arguments with the space around them trimmed,
// tool results and observations are cut to MaxObservationBytes.
func TestStepDocsText(t *testing.T) {
	sess := &store.Session{ID: "s1"}
	long := strings.Repeat("0123456789", 250)
	cut := agentmem.TruncateText(long, recallview.MaxObservationBytes)
	tests := []struct {
		step agentmem.Step
		want string
	}{
		{&agentmem.ActionStep{Thought: " think ", ModelOutput: "\t", ToolCalls: []agentmem.ToolCall{
			{Name: " grep  ", Arguments: ` {"q":"x"} `}, {Name: "", Arguments: " {} "}, {Name: " ls ", Arguments: "  "}, {Name: " ", Arguments: ""}},
			Results:     []agentmem.ToolResult{{Content: "found it"}, {Content: " "}, {Content: long}},
			Observation: "seen\n", Error: "boom"},
			" think \ngrep    {\"q\":\"x\"}\n{}\nls\nfound it\n" + cut + "\nseen\n\nboom"},
		{&agentmem.ActionStep{ToolCalls: []agentmem.ToolCall{{Name: "run", Arguments: long}}}, "run " + cut},
		{&agentmem.ActionStep{Observation: long}, cut},
		{&agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Content{agentmem.TextPart("one"), agentmem.TextPart(""), agentmem.TextPart("two")}}}, "user: one\ntwo"},
		{&agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser, Name: " ", Content: agentmem.Text(" hi ")}}, " :  hi "},
		{&agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(" \n ")}}, ""},
		{&agentmem.TaskStep{Task: " task "}, " task "},
		{&agentmem.ScratchpadStep{Content: "note"}, "note"},
		{&agentmem.SummaryStep{Summary: "so far", Covers: []agentmem.Range{{From: 1, To: 2}}}, "so far"},
		{&agentmem.ActionStep{Thought: " ", Error: " "}, ""},
	}
	for i, tt := range tests {
		docs := recallview.StepDocs(sess, store.Entry{Seq: int64(i + 1), Kind: store.StepEntry, Step: tt.step, Time: t0})
		got := ""
		if len(docs) == 1 {
			got = docs[0].Text
		} else if len(docs) > 1 {
			t.Fatalf("%d: %d documents", i, len(docs))
		}
		if got != tt.want {
			t.Errorf("%d (%T): text %q, want %q", i, tt.step, got, tt.want)
		}
	}
}
