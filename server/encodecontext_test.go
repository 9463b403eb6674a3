package server

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/render"
)

// TestEncodeContext: encodeContext writes a context response byte for
// byte as encodeResponse writes it with the messages' wire value, in every
// format: with the response's other fields empty or full (facts that make
// the fields after the messages longer than encodeContext's stack buffer),
// with texts to escape, and after what the buffer held already. (The
// package's TestMain compares both with encoding/json too.)
func TestEncodeContext(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	odd := "<b>&amp;</b> \"q\" \\ \u2028\u2029 \x00\x1f\t\n ünï 🙂"
	m := agentmem.New(agentmem.Options{})
	add := func(s agentmem.Step) {
		t.Helper()
		if _, err := m.Add(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	add(&agentmem.SystemPromptStep{Content: "You are <careful>. " + odd})
	add(&agentmem.TaskStep{Task: "Fix " + odd, Images: []agentmem.Image{{URL: "https://x.test/a.png?a=1&b=<2>"}, {Data: []byte("\x89PNG\r\n\x1a\n")}}})
	add(&agentmem.ActionStep{
		ModelOutput: "Reading " + odd,
		ToolCalls: []agentmem.ToolCall{
			{ID: "c1", Name: "read", Arguments: `{"path": "<a&b>.go", "s": "` + "\u2028" + `"}`},
			{ID: "c2", Name: "run", Arguments: "not json <&>"},
		},
		Results: []agentmem.ToolResult{
			{CallID: "c1", Content: strings.Repeat("func f() {}\n"+odd, 50)},
			{CallID: "c2", Content: "FAIL " + odd, IsError: true, Images: []agentmem.Image{{URL: "data:image/png;base64,iVBORw0KGgo="}}},
		},
		Observation: odd,
	})
	add(&agentmem.FinalAnswerStep{Answer: "done " + odd})

	rel, score := 0.5, 0.25
	var facts []api.FactView
	for i := range 12 {
		facts = append(facts, api.FactView{Fact: api.Fact{ID: fmt.Sprint("f", i), UserID: "u<1>", Text: "likes " + odd, Confidence: 0.9, CreatedAt: t0, ReinforcedAt: t0},
			EffectiveConfidence: 0.8, Relevance: &rel, Score: &score})
	}
	full := api.ContextResponse{Tokenizer: "heuristic", Budget: 8000, MaxContextTokens: 100000, Tokens: 1234,
		Steps: []int{1, 2, 3}, Dropped: []api.DroppedRun{{First: 4, Last: 5, Count: 2}}, DroppedSteps: 2, Truncated: []int{3},
		NewestTruncated: true, Summarized: []api.Range{{From: 1, To: 2}}, Pending: []api.PendingCalls{{Seq: 7, ToolCallIDs: []string{"c<9>"}}},
		LastSeq: 42, Facts: facts, Recalled: []string{"r&1"}, Blocks: []api.ContextBlock{{Label: "persona<", Owner: "user", Version: 3}}}
	empty := api.ContextResponse{Steps: []int{}, Dropped: []api.DroppedRun{}, Truncated: []int{}, Summarized: []api.Range{}, Pending: []api.PendingCalls{}}

	for _, name := range render.Names() {
		f, err := render.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.Context(context.Background(), agentmem.ContextOptions{Format: f})
		if err != nil {
			t.Fatal(err)
		}
		for _, msgs := range [][]agentmem.Message{c.Messages, nil} {
			for which, out := range map[string]api.ContextResponse{"full": full, "empty": empty} {
				out.Format = name
				wire, err := render.Encode(name, msgs)
				if err != nil {
					t.Fatal(err)
				}
				reflective := out
				reflective.Messages = wire
				var want bytes.Buffer
				want.WriteString("before ")
				if err := encodeResponse(&want, reflective); err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				got.WriteString("before ")
				if err := encodeContext(&got, out, name, msgs); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("%s, %d messages, %s response:\n got %s\nwant %s", name, len(msgs), which, got.Bytes(), want.Bytes())
				}
			}
		}
	}
}

// TestContextReadsConcurrently: context reads of sessions of different
// sizes, in every format, made at once, each answer the same bytes as
// that read made alone. The server recycles a context's storage once its
// answer is written (contexts); an answer that shared storage with
// another read's would differ, and the race detector would see it.
func TestContextReadsConcurrently(t *testing.T) {
	e := newEnv(t)
	e.session("a", 3)
	e.session("b", 12)
	var paths []string
	for _, id := range []string{"a", "b"} {
		for _, f := range render.Names() {
			paths = append(paths, "/v1/sessions/"+id+"/context?format="+f, "/v1/sessions/"+id+"/context?budget=1500&format="+f)
		}
	}
	want := make(map[string][]byte)
	for _, p := range paths {
		want[p] = e.must(200, "GET", p, nil).body
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 3 * len(paths) {
				p := paths[(g+i*5)%len(paths)]
				if r := e.do("GET", p, nil); r.code != 200 || !bytes.Equal(r.body, want[p]) {
					t.Errorf("GET %s: status %d, %d bytes differ from the read alone (%d)", p, r.code, len(r.body), len(want[p]))
					return
				}
			}
		})
	}
	wg.Wait()
}
