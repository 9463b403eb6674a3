package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/recall"
)

// conversations creates two sessions of alice (agents coder and planner)
// and one of bob through the tools, each turn appended with append, so
// that the recall follower indexes them.
func conversations(t *testing.T, e *env) {
	t.Helper()
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "trip", "user_id": "alice", "agent": "planner"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "trip", "messages": []map[string]any{
		{"role": "system", "content": "You plan trips."},
		{"role": "user", "content": "I want to visit Kyoto in April for the cherry blossoms."},
		{"role": "assistant", "content": "April is the peak season; book the ryokan early."},
		{"role": "user", "content": "Then book the Tawaraya ryokan for three nights."},
		{"role": "assistant", "content": "Done: three nights from April 4."},
	}}, nil)
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "code", "user_id": "alice", "agent": "coder"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "code", "messages": turn}, nil)
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "bob-1", "user_id": "bob", "agent": "planner"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "bob-1", "messages": []map[string]any{
		{"role": "user", "content": "Find me a hotel in Kyoto near the station."},
	}}, nil)
}

func TestSearchMemoryFindsAppendedTurns(t *testing.T) {
	lt := newLongTerm(t)
	e := lt.env(t, "acme")
	conversations(t, e)

	var out mcp.SearchMemoryOutput
	call(t, e.cs, mcp.ToolSearchMemory, map[string]any{"query": "which ryokan did we book?"}, &out)
	if len(out.Hits) == 0 {
		t.Fatal("no hits for a turn appended with append")
	}
	h := out.Hits[0]
	if h.SessionID != "trip" || h.Seq != 4 || h.ID != "trip#4" || h.Kind != "task" || h.UserID != "alice" || h.Agent != "planner" ||
		!strings.Contains(h.Text, "Tawaraya ryokan") || h.Score <= 0 || h.Time == nil || !h.Time.Equal(t0) || h.Before != nil || h.After != nil {
		t.Fatalf("best hit: %+v", h)
	}

	// Every session, or one user's, one agent's, one session's.
	kyoto := func(args map[string]any) map[string]bool {
		t.Helper()
		args["query"] = "Kyoto"
		var out mcp.SearchMemoryOutput
		call(t, e.cs, mcp.ToolSearchMemory, args, &out)
		sessions := map[string]bool{}
		for _, h := range out.Hits {
			sessions[h.SessionID] = true
		}
		return sessions
	}
	if s := kyoto(map[string]any{}); !s["trip"] || !s["bob-1"] || s["code"] {
		t.Errorf("all sessions: %v", s)
	}
	if s := kyoto(map[string]any{"user_id": "bob"}); len(s) != 1 || !s["bob-1"] {
		t.Errorf("bob's: %v", s)
	}
	if s := kyoto(map[string]any{"agent": "planner", "user_id": "alice"}); len(s) != 1 || !s["trip"] {
		t.Errorf("alice's with the planner: %v", s)
	}
	if s := kyoto(map[string]any{"session_id": "code"}); len(s) != 0 {
		t.Errorf("session code: %v", s)
	}
	if s := kyoto(map[string]any{"k": 1}); len(s) != 1 {
		t.Errorf("k 1: %v", s)
	}

	// The turns around a match.
	var win mcp.SearchMemoryOutput
	call(t, e.cs, mcp.ToolSearchMemory, map[string]any{"query": "Tawaraya", "session_id": "trip", "before": 1, "after": 2, "k": 1}, &win)
	if len(win.Hits) != 1 {
		t.Fatalf("window: %+v", win)
	}
	w := win.Hits[0]
	if w.Seq != 4 || len(w.Before) != 1 || w.Before[0].Seq != 3 || !strings.Contains(w.Before[0].Text, "peak season") ||
		len(w.After) != 1 || w.After[0].Seq != 5 || w.After[0].SessionID != "trip" || w.After[0].Kind != "action" {
		t.Errorf("window: %s", mustJSON(t, w))
	}

	// A tool call and its result are one turn, found by the result.
	var tool mcp.SearchMemoryOutput
	call(t, e.cs, mcp.ToolSearchMemory, map[string]any{"query": "func main", "session_id": "code"}, &tool)
	if len(tool.Hits) == 0 || tool.Hits[0].Kind != "action" || !strings.Contains(tool.Hits[0].Text, "read_file") {
		t.Errorf("tool result: %s", mustJSON(t, tool))
	}

	var none mcp.SearchMemoryOutput
	call(t, e.cs, mcp.ToolSearchMemory, map[string]any{"query": "quantum chromodynamics"}, &none)
	if none.Hits == nil || len(none.Hits) != 0 {
		t.Errorf("no match must be an empty list: %+v", none)
	}
}

func TestSearchMemoryErrors(t *testing.T) {
	e := newLongTerm(t).env(t, "")
	bad := func(args map[string]any, want ...string) {
		t.Helper()
		callErr(t, e.cs, mcp.ToolSearchMemory, args, want...)
	}
	bad(map[string]any{}, "query")
	bad(map[string]any{"query": ""}, "query")
	bad(map[string]any{"query": " \t"}, "query", "empty")
	bad(map[string]any{"query": strings.Repeat("q", mcp.MaxQueryBytes+1)}, "query")
	bad(map[string]any{"query": "x", "k": 0}, "k")
	bad(map[string]any{"query": "x", "k": mcp.MaxSearchK + 1}, "k")
	bad(map[string]any{"query": "x", "k": 2.5}, "k")
	bad(map[string]any{"query": "x", "before": -1}, "before")
	bad(map[string]any{"query": "x", "after": mcp.MaxWindow + 1}, "after")
	bad(map[string]any{"query": "x", "session_id": ".."}, "session_id")
	bad(map[string]any{"query": "x", "user_id": strings.Repeat("u", 257)}, "user_id")
	bad(map[string]any{"query": "x", "agent": "a\x00b"}, "agent", "NUL")
	bad(map[string]any{"query": "x", "scope": "all"}, "scope")
	bad(map[string]any{"query": []string{"x"}}, "query")
}

// A tool acting for one tenant finds none of another tenant's turns,
// whatever it filters on.
func TestSearchMemoryTenantsAreIsolated(t *testing.T) {
	lt := newLongTerm(t)
	acme, globex, anon := lt.env(t, "acme"), lt.env(t, "globex"), lt.env(t, "")
	conversations(t, acme)
	for _, e := range []*env{globex, anon} {
		for _, args := range []map[string]any{
			{"query": "Kyoto ryokan cherry blossoms"},
			{"query": "Tawaraya", "session_id": "trip", "before": 3, "after": 3},
			{"query": "Kyoto", "user_id": "alice"},
			{"query": "main.go", "agent": "coder"},
		} {
			var out mcp.SearchMemoryOutput
			call(t, e.cs, mcp.ToolSearchMemory, args, &out)
			if len(out.Hits) != 0 {
				t.Errorf("tenant %q finds acme's turns with %v: %s", e.tenant, args, mustJSON(t, out))
			}
		}
	}
	// The index holds them, under acme.
	hits, err := lt.ix.Search(context.Background(), recall.Query{Tenant: "acme", Text: "Tawaraya", K: 1})
	if err != nil || len(hits) != 1 || hits[0].Doc.Tenant != "acme" {
		t.Errorf("acme's index: %+v, %v", hits, err)
	}
}

// Long sessions: k and the window bound what comes back, and a result
// holds at most mcp.MaxOutputBytes: the matches that do not fit are left
// out, with a next_offset that gets them (the 50 best matches here take
// several calls).
func TestSearchMemoryBounds(t *testing.T) {
	e := newLongTerm(t).env(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "long"}, nil)
	var msgs []map[string]any
	for i := range 120 {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("note %d about the garden and its roses", i)})
	}
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "long", "messages": msgs}, nil)
	seen := map[string]bool{}
	offset, results := 0, 0
	for {
		args := map[string]any{"query": "garden roses", "k": mcp.MaxSearchK - offset, "before": mcp.MaxWindow, "after": mcp.MaxWindow, "offset": offset}
		res := callRaw(t, e.cs, mcp.ToolSearchMemory, args)
		if res.IsError || len(text(res)) > mcp.MaxOutputBytes {
			t.Fatalf("a result of %d bytes (error %v)", len(text(res)), res.IsError)
		}
		var out mcp.SearchMemoryOutput
		if err := json.Unmarshal(mustJSON(t, res.StructuredContent), &out); err != nil {
			t.Fatal(err)
		}
		results++
		for _, h := range out.Hits {
			if seen[h.ID] {
				t.Fatalf("hit %s again after offset %d", h.ID, offset)
			}
			seen[h.ID] = true
			if len(h.Before) > mcp.MaxWindow || len(h.After) > mcp.MaxWindow {
				t.Fatalf("hit %d: window %d+%d", h.Seq, len(h.Before), len(h.After))
			}
			for _, b := range h.Before {
				if b.Seq >= h.Seq {
					t.Errorf("hit %d: turn %d is not before it", h.Seq, b.Seq)
				}
			}
			for _, a := range h.After {
				if a.Seq <= h.Seq {
					t.Errorf("hit %d: turn %d is not after it", h.Seq, a.Seq)
				}
			}
		}
		if offset+len(out.Hits) >= mcp.MaxSearchK {
			if out.NextOffset != 0 {
				t.Errorf("next_offset %d after the k-th hit", out.NextOffset)
			}
			break
		}
		if out.NextOffset != offset+len(out.Hits) || !strings.Contains(out.Note, fmt.Sprintf("offset %d", out.NextOffset)) {
			t.Fatalf("%d hits from offset %d: next_offset %d, note %q", len(out.Hits), offset, out.NextOffset, out.Note)
		}
		offset = out.NextOffset
	}
	if len(seen) != mcp.MaxSearchK || results < 2 {
		t.Fatalf("%d hits in %d results, want %d in more than one", len(seen), results, mcp.MaxSearchK)
	}
	var def mcp.SearchMemoryOutput
	call(t, e.cs, mcp.ToolSearchMemory, map[string]any{"query": "garden roses"}, &def)
	if len(def.Hits) != mcp.DefaultSearchK || def.NextOffset != 0 || def.Note != "" {
		t.Errorf("%d hits without k (next_offset %d, note %q), want %d", len(def.Hits), def.NextOffset, def.Note, mcp.DefaultSearchK)
	}
	callErr(t, e.cs, mcp.ToolSearchMemory, map[string]any{"query": "garden", "offset": mcp.MaxOffset + 1}, "offset")
}

// A turn's text is cut to mcp.MaxTurnTextBytes, and a match whose window
// of turns alone passes mcp.MaxOutputBytes keeps the turns nearest it.
func TestSearchMemoryLongTurns(t *testing.T) {
	e := newLongTerm(t).env(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "long"}, nil)
	var msgs []map[string]any
	for i := range 25 {
		word := "filler"
		if i == 12 {
			word = "needle"
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("%s %d ", word, i) + strings.Repeat("lorem ipsum ", 500)})
	}
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "long", "messages": msgs}, nil)
	res := callRaw(t, e.cs, mcp.ToolSearchMemory, map[string]any{"query": "needle", "k": 1, "before": mcp.MaxWindow, "after": mcp.MaxWindow})
	if res.IsError || len(text(res)) > mcp.MaxOutputBytes {
		t.Fatalf("a result of %d bytes (error %v)", len(text(res)), res.IsError)
	}
	var out mcp.SearchMemoryOutput
	if err := json.Unmarshal(mustJSON(t, res.StructuredContent), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Hits) != 1 || out.Hits[0].Seq != 13 {
		t.Fatalf("hits: %+v", out.Hits)
	}
	h := out.Hits[0]
	if !h.Truncated || len(h.Text) > mcp.MaxTurnTextBytes || !strings.HasPrefix(h.Text, "needle 12 lorem") {
		t.Errorf("the match's text: %d bytes, truncated %v", len(h.Text), h.Truncated)
	}
	n := len(h.Before) + len(h.After)
	if n == 0 || n >= 2*mcp.MaxWindow || h.Before[len(h.Before)-1].Seq != 12 || h.After[0].Seq != 14 {
		t.Errorf("window: %d before, %d after", len(h.Before), len(h.After))
	}
	if !strings.Contains(out.Note, "truncated") || !strings.Contains(out.Note, "nearest") {
		t.Errorf("note %q", out.Note)
	}
}

// similarity=tfidf scores by TF-IDF cosine (in [0, 1]); BM25 stays the
// default, and an unknown similarity is the caller's error.
func TestSearchMemorySimilarity(t *testing.T) {
	lt := newLongTerm(t)
	e := lt.env(t, "acme")
	conversations(t, e)
	var tf, bm mcp.SearchMemoryOutput
	call(t, e.cs, mcp.ToolSearchMemory, map[string]any{"query": "Kyoto ryokan", "similarity": "tfidf"}, &tf)
	call(t, e.cs, mcp.ToolSearchMemory, map[string]any{"query": "Kyoto ryokan"}, &bm)
	if len(tf.Hits) == 0 || len(bm.Hits) == 0 {
		t.Fatalf("no hits: tfidf %d, bm25 %d", len(tf.Hits), len(bm.Hits))
	}
	for _, h := range tf.Hits {
		if h.Score <= 0 || h.Score > 1 {
			t.Fatalf("tfidf score %v of %s is not a cosine", h.Score, h.ID)
		}
	}
	if tf.Hits[0].Score == bm.Hits[0].Score {
		t.Fatalf("the default scored as tfidf: %v", bm.Hits[0].Score)
	}
	callErr(t, e.cs, mcp.ToolSearchMemory, map[string]any{"query": "Kyoto", "similarity": "cosine"}, "similarity")
}
