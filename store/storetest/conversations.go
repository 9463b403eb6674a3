package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// store.Conversations (the seeds' ConversationStore) is built on Create,
// Read, Append, List and Delete; these tests check that every backend
// gives it a save that replaces a conversation while the log keeps it,
// both answers to a missing conversation, and tenants that never meet.

func (e *env) conversations(tenant string) store.Conversations {
	return store.Conversations{Store: e.st, Tenant: tenant}
}

// texts renders a snapshot's steps as "role: text" lines.
func texts(snap *agentmem.Snapshot) []string {
	var out []string
	for _, s := range snap.Steps {
		for _, m := range s.Messages(agentmem.RenderOptions{}) {
			out = append(out, string(m.Role)+": "+m.Text())
		}
	}
	return out
}

func (e *env) wantConversation(c store.Conversations, id string, want []string, what string) *agentmem.Snapshot {
	e.t.Helper()
	snap, err := c.Load(e.ctx, id)
	if err != nil {
		e.t.Fatalf("%s: Load(%q): %v", what, id, err)
	}
	if got := texts(snap); !slices.Equal(got, want) {
		e.t.Fatalf("%s: conversation %q holds\n%q\nwant\n%q", what, id, got, want)
	}
	return snap
}

func (s *suite) conversationTests() []namedTest {
	chat := []agentmem.Message{
		{Role: agentmem.RoleSystem, Content: agentmem.Text("be brief")},
		userMsg("hello"),
		{Role: agentmem.RoleAssistant, Content: agentmem.Text("hi there")},
	}
	return []namedTest{
		{"LoadMissing", func(t *testing.T) {
			e := s.open(t)
			c := e.conversations("")
			snap, err := c.Load(e.ctx, "nobody")
			if err != nil || snap == nil || len(snap.Steps) != 0 {
				t.Fatalf("Load of a missing conversation = %v, %v; want an empty snapshot (the default, as the seed)", snap, err)
			}
			if err := agentmem.New(agentmem.Options{}).Restore(snap); err != nil {
				t.Fatalf("the empty snapshot does not restore: %v", err)
			}
			_, err = c.Get(e.ctx, "nobody")
			var nf *store.ConversationNotFoundError
			if !errors.As(err, &nf) || nf.ID != "nobody" || !errors.Is(err, agentmem.ErrNotFound) {
				t.Fatalf("Get of a missing conversation: %v, want a *ConversationNotFoundError wrapping ErrNotFound", err)
			}
			if ids, err := c.List(e.ctx); err != nil || len(ids) != 0 {
				t.Fatalf("Load and Get created something: List = %v, %v", ids, err)
			}
		}},
		{"SaveReplacesAndTheLogKeeps", func(t *testing.T) {
			e := s.open(t)
			c := e.conversations("")
			if err := c.SaveMessages(e.ctx, "c1", chat); err != nil {
				t.Fatal(err)
			}
			first := e.wantConversation(c, "c1", []string{"system: be brief", "user: hello", "assistant: hi there"}, "first save")
			// The seed's flow: load, change, save the whole list again.
			next := &agentmem.Snapshot{Version: agentmem.SnapshotVersion, Steps: []agentmem.Step{
				first.Steps[0],
				&agentmem.MessageStep{Message: userMsg("a new question")},
			}}
			if err := c.Save(e.ctx, "c1", next); err != nil {
				t.Fatal(err)
			}
			e.wantConversation(c, "c1", []string{"system: be brief", "user: a new question"}, "second save")
			entries := e.entries("c1")
			var logged []string
			for _, en := range entries {
				if en.Step != nil {
					for _, m := range en.Step.Messages(agentmem.RenderOptions{}) {
						logged = append(logged, m.Text())
					}
				}
			}
			for _, want := range []string{"hello", "hi there", "a new question"} {
				if !slices.Contains(logged, want) {
					t.Fatalf("the log lost %q: %q", want, logged)
				}
			}
			if n := len(e.workingSet("c1")); n != 2 {
				t.Fatalf("working set has %d steps, want 2", n)
			}
			last := entries[len(entries)-1]
			if last.Kind != store.CompactionEntry || last.Compaction.Amend || len(last.Compaction.Removed) != 2 {
				t.Fatalf("the save is not recorded as a full compaction removing 2 steps: %s", e.entryJSON(last))
			}
			// The system prompt kept its place in the log: not copied.
			if last.Compaction.Working[0] != int64(first.Steps[0].Info().Number) {
				t.Fatalf("the unchanged system prompt was not kept by number: working %v", last.Compaction.Working)
			}
		}},
		{"StepsComeBack", func(t *testing.T) {
			e := s.open(t)
			c := e.conversations("")
			a := &agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: "a"}, Message: userMsg("first")}
			b := &agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: "b"}, Message: userMsg("second")}
			snap := func(ss ...agentmem.Step) *agentmem.Snapshot {
				return &agentmem.Snapshot{Version: agentmem.SnapshotVersion, Steps: ss}
			}
			for i, save := range []*agentmem.Snapshot{snap(a, b), snap(a), snap(a, b), snap(b, a), snap()} {
				if err := c.Save(e.ctx, "c", save); err != nil {
					t.Fatalf("save %d: %v", i, err)
				}
				var want []string
				for _, s := range save.Steps {
					want = append(want, "user: "+s.(*agentmem.MessageStep).Message.Text())
				}
				e.wantConversation(c, "c", want, fmt.Sprintf("save %d", i))
			}
			// New steps after the old ones are a plain append.
			if err := c.Save(e.ctx, "d", snap(a)); err != nil {
				t.Fatal(err)
			}
			if err := c.Save(e.ctx, "d", snap(a, b)); err != nil {
				t.Fatal(err)
			}
			for _, en := range e.entries("d") {
				if en.Kind == store.CompactionEntry {
					t.Fatalf("a save that only adds steps wrote a compaction: %s", e.entryJSON(en))
				}
			}
		}},
		{"SaveUnchangedWritesNothing", func(t *testing.T) {
			e := s.open(t)
			c := e.conversations("")
			if err := c.SaveMessages(e.ctx, "c", chat); err != nil {
				t.Fatal(err)
			}
			snap := e.wantConversation(c, "c", []string{"system: be brief", "user: hello", "assistant: hi there"}, "save")
			before := e.get("c").LastSeq
			if err := c.Save(e.ctx, "c", snap); err != nil {
				t.Fatal(err)
			}
			if after := e.get("c").LastSeq; after != before {
				t.Fatalf("saving the same conversation appended: LastSeq %d -> %d", before, after)
			}
		}},
		{"SaveChangedStepKeepsItsID", func(t *testing.T) {
			e := s.open(t)
			c := e.conversations("")
			if err := c.SaveMessages(e.ctx, "c", chat); err != nil {
				t.Fatal(err)
			}
			snap := e.wantConversation(c, "c", []string{"system: be brief", "user: hello", "assistant: hi there"}, "save")
			changed := agentmem.CloneStep(snap.Steps[2]).(*agentmem.ActionStep) // an assistant reply is an action
			changed.ModelOutput = "hi, corrected"
			snap.Steps[2] = changed
			if err := c.Save(e.ctx, "c", snap); err != nil {
				t.Fatal(err)
			}
			got := e.wantConversation(c, "c", []string{"system: be brief", "user: hello", "assistant: hi, corrected"}, "after the change")
			if got.Steps[2].Info().ID != changed.ID {
				t.Fatalf("the changed step lost its ID %q: %q", changed.ID, got.Steps[2].Info().ID)
			}
		}},
		{"BoundMemoryRoundTrip", func(t *testing.T) {
			e := s.open(t)
			c := e.conversations("")
			mem := agentmem.New(e.memOptions())
			for _, m := range chat {
				if err := mem.AddMessage(e.ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Save(e.ctx, "c", mem.Snapshot()); err != nil {
				t.Fatal(err)
			}
			b := e.openMemory("c") // the saved conversation is a session like any other
			e.wantSameMemory(b, b, "")
			if got, want := e.stepsJSON(b.Steps()), e.stepsJSON(e.workingSet("c")); got != want {
				t.Fatalf("bound memory\n%s\nstored\n%s", got, want)
			}
			if len(b.Steps()) != 3 {
				t.Fatalf("bound memory has %d steps, want 3", len(b.Steps()))
			}
		}},
		{"ListDeleteClear", func(t *testing.T) {
			e := s.open(t)
			c := e.conversations("")
			for _, id := range []string{"z", "m", "a1"} {
				if err := c.SaveMessages(e.ctx, id, chat[1:2]); err != nil {
					t.Fatal(err)
				}
			}
			ids, err := c.List(e.ctx)
			if err != nil || !slices.Equal(ids, []string{"a1", "m", "z"}) {
				t.Fatalf("List = %v, %v; want [a1 m z], sorted", ids, err)
			}
			if err := c.Delete(e.ctx, "m"); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(e.ctx, "m"); err != nil {
				t.Fatalf("deleting a missing conversation: %v, want nothing done, as the seed", err)
			}
			if _, err := c.Get(e.ctx, "m"); !errors.Is(err, agentmem.ErrNotFound) {
				t.Fatalf("deleted conversation: %v", err)
			}
			n, err := c.Clear(e.ctx)
			if err != nil || n != 2 {
				t.Fatalf("Clear = %d, %v; want 2", n, err)
			}
			if ids, _ := c.List(e.ctx); len(ids) != 0 {
				t.Fatalf("after Clear, List = %v", ids)
			}
		}},
		{"Tenants", func(t *testing.T) {
			e := s.open(t)
			a, b := e.conversations("a"), e.conversations("b")
			for _, id := range []string{"m", "a1"} {
				if err := a.SaveMessages(e.ctx, id, chat[1:2]); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.SaveMessages(e.ctx, "b1", chat[1:2]); err != nil {
				t.Fatal(err)
			}
			if ids, err := a.List(e.ctx); err != nil || !slices.Equal(ids, []string{"a1", "m"}) {
				t.Fatalf("List(a) = %v, %v; want [a1 m]", ids, err)
			}
			// Another tenant's conversation is absent to b.
			if snap, err := b.Load(e.ctx, "m"); err != nil || len(snap.Steps) != 0 {
				t.Fatalf("b loads a's conversation: %v, %v", snap, err)
			}
			if _, err := b.Get(e.ctx, "m"); !errors.Is(err, agentmem.ErrNotFound) {
				t.Fatalf("b gets a's conversation: %v", err)
			}
			if err := b.Delete(e.ctx, "m"); err != nil {
				t.Fatal(err)
			}
			// IDs are per tenant: b's "m" is its own.
			if err := b.SaveMessages(e.ctx, "m", []agentmem.Message{userMsg("b's own")}); err != nil {
				t.Fatal(err)
			}
			e.wantConversation(b, "m", []string{"user: b's own"}, "b's m")
			e.wantConversation(a, "m", []string{"user: hello"}, "after b's delete and save")
			if n, err := a.Clear(e.ctx); err != nil || n != 2 {
				t.Fatalf("Clear(a) = %d, %v; want 2", n, err)
			}
			e.wantConversation(b, "b1", []string{"user: hello"}, "b after a's Clear")
			if ids, _ := b.List(e.ctx); !slices.Equal(ids, []string{"b1", "m"}) {
				t.Fatalf("b after a's Clear lists %v", ids)
			}
		}},
		{"BadInput", func(t *testing.T) {
			e := s.open(t)
			c := e.conversations("")
			e.wantErr(c.Save(e.ctx, "c", nil), agentmem.ErrInvalid, "Save(nil)")
			e.wantErr(c.Save(e.ctx, "x\x00", &agentmem.Snapshot{Version: agentmem.SnapshotVersion}), agentmem.ErrInvalid, "Save(bad ID)")
			e.wantErr(c.Save(e.ctx, "c", &agentmem.Snapshot{Steps: []agentmem.Step{&agentmem.ActionStep{Results: []agentmem.ToolResult{{CallID: "orphan", Content: "x"}}}}}), agentmem.ErrInvalid, "Save(invalid step)")
			_, err := c.Load(e.ctx, "")
			e.wantErr(err, agentmem.ErrInvalid, "Load(empty ID)")
			if ids, _ := c.List(e.ctx); len(ids) != 0 {
				t.Fatalf("a refused save wrote %v", ids)
			}
		}},
	}
}
