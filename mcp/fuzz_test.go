package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/agentmem/agentmem/views/recallview"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzFoldMessages checks append's arguments, with data as the messages,
// as every tool call's are checked (checkArguments), decodes the messages
// as the SDK does (JSON into []Message) and appends them, with the append
// tool's handler, to a session whose working set holds a pending action
// (call p1 answered, p2 not). Whatever the input, nothing panics;
// arguments that would decode with a loss are refused with a JSON-RPC
// invalid-params error, so no stored text holds a U+FFFD the client did
// not send; a refused append stores nothing; an accepted one stores valid
// steps, and the session's context, pending actions left out, renders to
// messages every API accepts.
func FuzzFoldMessages(f *testing.F) {
	f.Add([]byte(`[{"role":"user","content":"hi"}]`), false, "")
	f.Add([]byte(`[{"role":"system","content":"s"},{"role":"user","content":"u"},{"role":"assistant","tool_calls":[{"id":"c1","name":"f","arguments":"{}"}]},{"role":"tool","tool_call_id":"c1","content":"r"}]`), false, "k")
	f.Add([]byte(`[{"role":"assistant","tool_calls":[{"id":"c1","name":"f"},{"id":"c2","name":"g"}]},{"role":"tool","tool_call_id":"c2","content":"x","is_error":true}]`), true, "")
	f.Add([]byte(`[{"role":"tool","tool_call_id":"nobody","content":"x"}]`), false, "")
	f.Add([]byte(`[{"role":"tool","tool_call_id":"p2","content":"later"}]`), false, "")
	f.Add([]byte(`[{"role":"assistant","tool_calls":[{"id":"c","name":"f"},{"id":"c","name":"f"}]}]`), true, "")
	f.Add([]byte(`[]`), false, "")
	clock := func() time.Time { return time.Unix(1_700_000_000, 0).UTC() }
	f.Fuzz(func(t *testing.T, data []byte, flush bool, key string) {
		args := append(append([]byte(`{"session_id":"s","messages":`), data...), '}')
		if err := checkArguments(args); err != nil {
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !utf8.ValidString(we.Message) {
				t.Fatalf("checkArguments: %v, want a JSON-RPC invalid-params error", err)
			}
			return // the SDK never hands these to the tool
		}
		var msgs []Message
		if json.Unmarshal(data, &msgs) != nil {
			return
		}
		if len(key) > maxIdempotencyKey {
			key = key[:maxIdempotencyKey]
		}
		ctx := context.Background()
		st := memstore.New(memstore.Options{Clock: clock})
		defer st.Close()
		cfg := Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clock, NewID: agentmem.NewID}
		tt := &tools{cfg: withSessions(t, cfg), tenant: ""}
		if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
			t.Fatal(err)
		}
		pending := &agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: "p"},
			ToolCalls: []agentmem.ToolCall{{ID: "p1", Name: "f"}, {ID: "p2", Name: "g"}}, Results: []agentmem.ToolResult{{CallID: "p1", Content: "r1"}}}
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{pending}}); err != nil {
			t.Fatal(err)
		}
		out, err := tt.append(ctx, AppendInput{SessionID: "s", Messages: msgs, FlushPending: flush, IdempotencyKey: key})
		ws, rerr := st.Read(ctx, store.ReadRequest{SessionID: "s", WorkingSet: true})
		if rerr != nil {
			t.Fatal(rerr)
		}
		if err != nil {
			if ws.Session.LastSeq != 1 {
				t.Fatalf("a refused append stored something (%v): last seq %d", err, ws.Session.LastSeq)
			}
			return
		}
		if len(out.Seqs) > len(msgs) || out.LastSeq != ws.Session.LastSeq {
			t.Fatalf("%d messages: %+v (session at %d)", len(msgs), out, ws.Session.LastSeq)
		}
		sentFFFD := bytes.Contains(data, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(data), []byte(`\ufffd`))
		for _, s := range ws.Steps {
			for _, m := range s.Messages(agentmem.RenderOptions{}) {
				if strings.ContainsRune(m.Text(), utf8.RuneError) && !sentFFFD {
					t.Fatalf("U+FFFD in %q, which the client did not send: %q", m.Text(), data)
				}
			}
		}
		mem := agentmem.New(agentmem.Options{Counter: tokenizer.NewHeuristic()})
		if err := mem.Restore(&agentmem.Snapshot{Version: agentmem.SnapshotVersion, NextNumber: int(ws.Session.LastSeq) + 1, Steps: ws.Steps}); err != nil {
			t.Fatalf("the stored working set does not restore: %v", err)
		}
		for _, name := range render.Names() {
			format, _ := render.ByName(name)
			c, err := mem.Context(ctx, agentmem.ContextOptions{Format: format})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := render.Validate(name, c.Messages); err != nil {
				t.Fatalf("%s: accepted messages render invalid: %v\n%s", name, err, data)
			}
			if flush && len(c.Pending) > 0 {
				t.Fatalf("pending after a flush: %+v", c.Pending)
			}
		}
	})
}

// The long-term tools FuzzLongTermArgs calls, by tool%len.
var fuzzTools = []string{ToolRemember, ToolRecallFacts, ToolForget, ToolSearchMemory}

// FuzzLongTermArgs decodes the arguments of a long-term tool (remember,
// recall_facts, forget, search_memory; tool picks one) as the SDK does,
// JSON into the tool's input type, and calls its handler directly, with
// no schema validation in front: the handlers bound every argument
// themselves. Whatever the input, a handler never panics, refuses bad
// arguments with an error of the caller's (invalid or not found), never
// one of the memory behind it (which would be logged), and what it
// accepts it answers consistently.
func FuzzLongTermArgs(f *testing.F) {
	f.Add(uint8(0), []byte(`{"user_id":"alice","text":"Prefers tea.","confidence":0.9,"session_id":"s1","metadata":{"topic":"drinks"}}`))
	f.Add(uint8(1), []byte(`{"user_id":"alice","query":"coffee","k":3}`))
	f.Add(uint8(2), []byte(`{"user_id":"alice","fact_id":"FACT","reason":"wrong"}`))
	f.Add(uint8(3), []byte(`{"query":"garden","k":2,"session_id":"s1","user_id":"alice","agent":"coder","before":1,"after":1}`))
	clock := func() time.Time { return time.Unix(1_700_000_000, 0).UTC() }
	f.Fuzz(func(t *testing.T, tool uint8, data []byte) {
		ctx := context.Background()
		st := memstore.New(memstore.Options{Clock: clock})
		defer st.Close()
		ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
		defer ix.Close()
		fm := facts.New(facts.NewMemStore(), facts.Options{Clock: clock})
		follower, stop := recallview.Start(st, st, &recallview.Indexer{Index: ix, Store: st}, recallview.FollowerOptions{})
		defer stop()
		var logs bytes.Buffer
		cfg := Config{Store: st, Facts: fm, Recall: ix, RecallFollower: follower, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Clock: clock, NewID: agentmem.NewID}
		tt := &tools{cfg: withSessions(t, cfg), tenant: "fuzz"}

		// A session with turns and a fact, for the arguments to reach.
		if _, err := st.Create(ctx, store.CreateRequest{ID: "s1", Tenant: "fuzz", UserID: "alice", Agent: "coder"}); err != nil {
			t.Fatal(err)
		}
		turn := []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text("the garden has roses")}, {Role: agentmem.RoleAssistant, Content: agentmem.Text("roses need sun")}}
		if _, err := newStoreService(t, st).AppendMessages(ctx, sessions.MessagesRequest{Tenant: "fuzz", SessionID: "s1", Messages: turn, Now: clock}); err != nil {
			t.Fatal(err)
		}
		known, err := fm.Remember(ctx, facts.RememberRequest{Tenant: "fuzz", UserID: "alice", Text: "Drinks coffee."})
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.ReplaceAll(data, []byte("FACT"), []byte(known.Fact.ID))

		name := fuzzTools[int(tool)%len(fuzzTools)]
		var callErr error
		switch name {
		case ToolRemember:
			var in RememberInput
			if json.Unmarshal(data, &in) != nil {
				return
			}
			out, err := tt.remember(ctx, in)
			callErr = err
			if err == nil && (out.Fact.UserID != in.UserID || out.Fact.Text != strings.TrimSpace(in.Text) ||
				out.Fact.Confidence < 0 || out.Fact.Confidence > 1 || (out.Outcome != "added" && out.Outcome != "reinforced" && out.Outcome != "ignored")) {
				t.Fatalf("remember(%s) = %+v", data, out)
			}
		case ToolRecallFacts:
			var in RecallFactsInput
			if json.Unmarshal(data, &in) != nil {
				return
			}
			out, err := tt.recallFacts(ctx, in)
			callErr = err
			if err == nil {
				if len(out.Facts) > max(in.K, DefaultFactsK) || len(out.Facts) > MaxFactsK {
					t.Fatalf("recall_facts(%s): %d facts", data, len(out.Facts))
				}
				for _, h := range out.Facts {
					if h.UserID != in.UserID || h.Confidence < 0 || h.Confidence > 1 {
						t.Fatalf("recall_facts(%s): %+v", data, h)
					}
				}
			}
		case ToolForget:
			var in ForgetInput
			if json.Unmarshal(data, &in) != nil {
				return
			}
			out, err := tt.forget(ctx, in)
			callErr = err
			if err == nil {
				if _, gerr := fm.Get(ctx, "fuzz", out.FactID); out.FactID != known.Fact.ID || in.UserID != "alice" || gerr == nil {
					t.Fatalf("forget(%s) = %+v, and then Get: %v", data, out, gerr)
				}
			}
		case ToolSearchMemory:
			var in SearchMemoryInput
			if json.Unmarshal(data, &in) != nil {
				return
			}
			out, err := tt.searchMemory(ctx, in)
			callErr = err
			if err == nil {
				if len(out.Hits) > MaxSearchK || (in.K > 0 && len(out.Hits) > in.K) {
					t.Fatalf("search_memory(%s): %d hits", data, len(out.Hits))
				}
				for _, h := range out.Hits {
					if len(h.Before) > in.Before || len(h.After) > in.After || h.SessionID != "s1" {
						t.Fatalf("search_memory(%s): %+v", data, h)
					}
				}
			}
		}
		if callErr != nil && (logs.Len() > 0 || strings.Contains(callErr.Error(), "unavailable") || strings.Contains(callErr.Error(), "internal error")) {
			t.Fatalf("%s(%s): a failure of the memory, not of the arguments: %v\n%s", name, data, callErr, logs.String())
		}
	})
}

// withSessions gives cfg the sessions service New would give it, for tests
// that build the tools directly.
func withSessions(t *testing.T, cfg Config) *Config {
	t.Helper()
	svc, err := sessions.New(sessions.Config{Store: cfg.Store, Clock: cfg.Clock, Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sessions, cfg.Counter, cfg.MaxContextTokens = svc, svc.Counter(), svc.MaxContextTokens()
	return &cfg
}

// newStoreService returns a sessions service over st, without a cache.
func newStoreService(t testing.TB, st *store.Store) *sessions.Service {
	t.Helper()
	svc, err := sessions.New(sessions.Config{Store: st, CacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
