package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/turncheck"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views"
	"github.com/agentmem/agentmem/views/autocompact"
)

// TestContextShowsWholeTurns: chats appended message by message over
// POST /messages, with tool results that sometimes arrive after the next
// question, read back through GET /context at many budgets in every
// format, with and without truncate-to-fill: no context shows part of a
// turn without its question, the pinned steps are always shown, the
// newest question too, and a budget that cannot hold them is a 422.
func TestContextShowsWholeTurns(t *testing.T) {
	e := newEnv(t)
	shown, refused := 0, 0
	for it := range 6 {
		r := rand.New(rand.NewPCG(uint64(it), 28))
		id := fmt.Sprintf("chat-%d", it)
		e.create(id)
		post := func(msg string) {
			t.Helper()
			e.must(201, "POST", "/v1/sessions/"+id+"/messages", msg)
		}
		post(`{"role":"system","content":"You answer questions about the weather."}`)
		var late []string
		for turn := range 4 + r.IntN(8) {
			post(fmt.Sprintf(`{"role":"user","content":"Q%d: what is the weather in city %d?"}`, turn, turn))
			for _, msg := range late {
				post(msg)
			}
			late = nil
			for c := range r.IntN(3) {
				callID := fmt.Sprintf("call_%d_%d", turn, c)
				post(`{"role":"assistant","tool_calls":[{"id":"` + callID + `","type":"function","function":{"name":"weather","arguments":"{}"}}]}`)
				result := toolResult(callID, strings.Repeat(fmt.Sprintf("city %d: mild, 14 degrees. ", turn), 20+r.IntN(200)))
				if r.IntN(5) == 0 {
					late = append(late, result)
					break
				}
				post(result)
			}
			if late == nil {
				post(fmt.Sprintf(`{"role":"assistant","content":"A%d: it is mild"}`, turn))
			}
		}
		s, f := e.checkWholeTurns(r, id, agentmem.DefaultPinning)
		shown, refused = shown+s, refused+f
	}
	if shown == 0 || refused == 0 {
		t.Fatalf("%d contexts shown, %d refused: the budgets should give both", shown, refused)
	}
}

// checkWholeTurns reads a session's context through GET /context at 25
// random budgets and formats, with and without truncate-to-fill, and
// checks each against the working set under pin (turncheck); it returns
// how many contexts were shown and how many refused with 422.
func (e *env) checkWholeTurns(r *rand.Rand, id string, pin agentmem.Pinning) (shown, refused int) {
	t := e.t
	t.Helper()
	ws, err := e.mem.Read(context.Background(), store.ReadRequest{SessionID: id, WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	var full api.ContextResponse
	e.must(200, "GET", "/v1/sessions/"+id+"/context", nil).json(t, &full)
	for range 25 {
		budget := 1 + r.IntN(full.Tokens+100)
		format := render.Names()[r.IntN(len(render.Names()))]
		q := fmt.Sprintf("/v1/sessions/%s/context?budget=%d&format=%s", id, budget, format)
		if r.IntN(2) == 0 {
			q += "&truncate=true"
		}
		resp := e.do("GET", q, nil)
		if resp.code == 422 {
			if d := resp.apiErr(t); d.Code != "budget_too_small" {
				t.Fatalf("%s: 422 %+v", q, d)
			}
			refused++
			continue
		}
		if resp.code != 200 {
			t.Fatalf("%s: %d %s", q, resp.code, resp.body)
		}
		var c api.ContextResponse
		resp.json(t, &c)
		if err := turncheck.Check(pin, ws.Steps, c.Steps, c.DroppedSteps); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if err := turncheck.NewestQuestion(ws.Steps, c.Steps); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		shown++
	}
	return shown, refused
}

// TestItemsContextShowsWholeTurns: the same over the items routes (the
// OpenAI Agents SDK's session), with a chat's pinning, as the clients'
// SDK sessions create theirs.
func TestItemsContextShowsWholeTurns(t *testing.T) {
	e := newEnv(t)
	shown := 0
	for it := range 6 {
		r := rand.New(rand.NewPCG(uint64(it), 29))
		id := fmt.Sprintf("items-%d", it)
		// As the Python and TypeScript clients' SDK sessions create it.
		e.must(201, "POST", "/v1/sessions", `{"id":"`+id+`","pinning":{"system_prompts":true,"summary":true}}`)
		var items []string
		for turn := range 4 + r.IntN(8) {
			items = append(items, fmt.Sprintf(`{"role":"user","content":"Q%d: what is the weather in city %d?"}`, turn, turn))
			for c := range r.IntN(3) {
				callID := fmt.Sprintf("call_%d_%d", turn, c)
				items = append(items,
					`{"type":"function_call","call_id":"`+callID+`","name":"weather","arguments":"{}"}`,
					`{"type":"function_call_output","call_id":"`+callID+`","output":`+quote(strings.Repeat(fmt.Sprintf("city %d: mild. ", turn), 20+r.IntN(200)))+`}`)
			}
			items = append(items, fmt.Sprintf(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A%d: it is mild"}]}`, turn))
			// The SDK adds a turn's items in one or a few calls.
			e.must(201, "POST", "/v1/sessions/"+id+"/items", itemsBody(items...))
			items = nil
		}
		var sess store.Session
		e.must(200, "GET", "/v1/sessions/"+id, nil).json(t, &sess)
		if sess.Pinning == nil || *sess.Pinning != agentmem.ChatPinning {
			t.Fatalf("an items session pins %+v, want a chat's", sess.Pinning)
		}
		s, _ := e.checkWholeTurns(r, id, agentmem.ChatPinning)
		shown += s
	}
	if shown == 0 {
		t.Fatal("no context shown")
	}
	// The newest question alone does not fit in 5 tokens: a 422, not a
	// context without it.
	if d := e.must(422, "GET", "/v1/sessions/items-0/context?budget=5", nil).apiErr(t); d.Code != "budget_too_small" {
		t.Fatalf("budget 5: %+v", d)
	}
}

// TestAutoCompactOverHTTP: a session created with "auto_compact" and a
// chat's pinning, appended to over POST /messages, is compacted in the
// background by the service's compactor: once it has caught up, the
// context has the summary, costs at most max_tokens, and shows whole
// turns; GET /v1/sessions/{id} returns the settings.
func TestAutoCompactOverHTTP(t *testing.T) {
	e := newEnv(t)
	c, stop := autocompact.Start(e.srv.Sessions(), nil, views.Options{})
	if c == nil {
		t.Fatal("the test store has no feed")
	}
	defer stop()
	e.must(201, "POST", "/v1/sessions", `{"id":"ac","pinning":{"system_prompts":true,"summary":true},"auto_compact":{"max_tokens":3000,"target_tokens":1500}}`)
	var sess store.Session
	e.must(200, "GET", "/v1/sessions/ac", nil).json(t, &sess)
	if sess.AutoCompact == nil || sess.AutoCompact.MaxTokens != 3000 || sess.AutoCompact.TargetTokens != 1500 || sess.Pinning == nil || sess.Pinning.FirstTask {
		t.Fatalf("settings as read: pinning %+v, auto_compact %+v", sess.Pinning, sess.AutoCompact)
	}
	e.must(201, "POST", "/v1/sessions/ac/messages", `{"role":"system","content":"You answer questions about files."}`)
	for i := range 20 {
		e.must(201, "POST", "/v1/sessions/ac/messages", fmt.Sprintf(`[{"role":"user","content":"Q%d: what is in file %d?"},
			{"role":"assistant","content":"A%d: %s"}]`, i, i, i, strings.Repeat("a line of the file. ", 30)))
	}
	if err := c.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var cx api.ContextResponse
	e.must(200, "GET", "/v1/sessions/ac/context", nil).json(t, &cx)
	if cx.Tokens > 3000 || len(cx.Summarized) == 0 {
		t.Fatalf("after the compactor caught up: %d tokens, summarized %v", cx.Tokens, cx.Summarized)
	}
	ws, err := e.mem.Read(context.Background(), store.ReadRequest{SessionID: "ac", WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := turncheck.Check(agentmem.ChatPinning, ws.Steps, cx.Steps, cx.DroppedSteps); err != nil {
		t.Fatal(err)
	}
	if ws.Steps[1].Kind() != agentmem.KindSummary || !agentmem.StartsTurn(ws.Steps[2]) {
		t.Fatalf("the summary is not right after the system prompt, before whole turns: %s, %s", ws.Steps[1].Kind(), ws.Steps[2].Kind())
	}
}
