package responses_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/responses"
)

// everyType is one item of each kind the Agents SDK stores, in the forms
// it writes them (whitespace and member order as given must come back).
var everyType = []string{
	`{"role": "developer", "content": "Be brief."}`,
	`{"role":"system","content":[{"type":"input_text","text":"You are a weather bot."}],"type":"message"}`,
	`{"content":"What is the weather in Paris?","role":"user"}`,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"And this picture?"},{"type":"input_image","image_url":"https://example.com/a.png","detail":"high"},{"type":"input_file","file_id":"file-1","filename":"a.pdf"}]}`,
	`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Need the weather tool."}],"encrypted_content":null}`,
	`{"arguments":"{\"city\":\"Paris\"}","call_id":"call_1","name":"get_weather","type":"function_call","id":"fc_1","status":"completed"}`,
	`{"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"}`,
	`{"call_id":"call_1","output":"sunny, 21°C <b>","type":"function_call_output"}`,
	`{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"12:00"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}`,
	`{"id":"msg_1","content":[{"annotations":[],"text":"Sunny, 21°C.","type":"output_text","logprobs":[]},{"type":"refusal","refusal":"No pictures."}],"role":"assistant","status":"completed","type":"message"}`,
	`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"paris weather"}}`,
	`{"type":"file_search_call","id":"fs_1","queries":["q"],"status":"completed","results":null}`,
	`{"type":"computer_call","id":"cu_1","call_id":"cc_1","action":{"type":"click","x":1,"y":2,"button":"left"},"pending_safety_checks":[],"status":"completed"}`,
	`{"type":"computer_call_output","call_id":"cc_1","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,BBBB"}}`,
	`{"type":"image_generation_call","id":"ig_1","result":"Q0NDQw==","status":"completed"}`,
	`{"type":"code_interpreter_call","id":"ci_1","code":"print(1)","container_id":"c","outputs":[{"type":"logs","logs":"1"}],"status":"completed"}`,
	`{"type":"local_shell_call","id":"ls_1","call_id":"lc_1","action":{"type":"exec","command":["ls"],"env":{}},"status":"completed"}`,
	`{"type":"local_shell_call_output","id":"lc_1","output":"a.txt"}`,
	`{"type":"mcp_list_tools","id":"ml_1","server_label":"s","tools":[{"name":"t","input_schema":{}}]}`,
	`{"type":"mcp_approval_request","id":"ma_1","server_label":"s","name":"t","arguments":"{}"}`,
	`{"type":"mcp_approval_response","approval_request_id":"ma_1","approve":true}`,
	`{"type":"mcp_call","id":"mc_1","server_label":"s","name":"t","arguments":"{}","output":"ok","error":null}`,
	`{"type":"custom_tool_call","call_id":"ct_1","name":"grammar","input":"x = 1"}`,
	`{"type":"custom_tool_call_output","call_id":"ct_1","output":"parsed"}`,
	`{"type":"item_reference","id":"msg_0"}`,
	`{"type":"some_future_item","payload":{"n":1.50,"big":12345678901234567890,"s":"\u00e9\n"}}`,
}

func raws(items []string) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, s := range items {
		out[i] = json.RawMessage(s)
	}
	return out
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// session folds item lists appended one request after another, as
// sessions.Service.AppendMessages does (KeepPending, the working set's actions
// open), and numbers the steps as a log would.
type session struct {
	t     *testing.T
	steps []agentmem.Step
	last  int64
	ids   int
}

func (s *session) add(items ...string) error {
	s.t.Helper()
	_, err := s.addCounting(items...)
	return err
}

// addCounting is add, also returning how many outputs repeated a result
// their call had (and so stored nothing).
func (s *session) addCounting(items ...string) (int, error) {
	s.t.Helper()
	raw := raws(items)
	opts := responses.Options{NewID: func() string { s.ids++; return fmt.Sprintf("s%d", s.ids) }}
	if responses.NeedsState(raw) && len(s.steps) > 0 {
		opts.Newest, opts.LastSeq = s.steps[len(s.steps)-1].Info().ID, s.last
	}
	msgs, err := responses.ToMessages(raw, opts)
	if err != nil {
		return 0, err
	}
	var open []*agentmem.ActionStep
	for _, st := range s.steps {
		if a, ok := st.(*agentmem.ActionStep); ok && len(a.ToolCalls) > 0 {
			open = append(open, a)
		}
	}
	f, err := agentmem.FoldMessages(open, msgs, agentmem.FoldOptions{KeepPending: true})
	if err != nil {
		return 0, err
	}
	for _, u := range f.Updated {
		for i, st := range s.steps {
			if st.Info().ID == u.ID {
				s.steps[i] = u
			}
		}
	}
	for _, st := range f.Steps {
		s.last++
		info := st.Info()
		info.Number = int(s.last)
		s.steps = append(s.steps, agentmem.WithInfo(st, info))
	}
	if len(f.Updated) > 0 {
		s.last++ // the amendment
	}
	return len(f.Repeated), nil
}

func (s *session) wantItems(want []string) {
	s.t.Helper()
	got := responses.Items(s.steps)
	var g, w []string
	for _, it := range got {
		g = append(g, string(it))
	}
	for _, it := range want {
		w = append(w, compact(s.t, it))
	}
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		s.t.Fatalf("items:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// TestEveryItemTypeRoundTrips: every item type, appended at once or one
// request per item, comes back exactly, in order.
func TestEveryItemTypeRoundTrips(t *testing.T) {
	s := &session{t: t}
	if err := s.add(everyType...); err != nil {
		t.Fatal(err)
	}
	s.wantItems(everyType)

	s = &session{t: t}
	for _, it := range everyType {
		if err := s.add(it); err != nil {
			t.Fatal(err)
		}
	}
	s.wantItems(everyType)
}

// TestConversion checks what each item becomes: the messages a context
// renders, and items with no chat equivalent rendering nothing.
func TestConversion(t *testing.T) {
	msgs, err := responses.ToMessages(raws(everyType), responses.Options{NewID: agentmem.NewID})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		role   agentmem.Role
		text   string
		call   string
		images int
	}
	wants := map[int]want{
		0: {role: agentmem.RoleSystem, text: "Be brief."},
		1: {role: agentmem.RoleSystem, text: "You are a weather bot."},
		2: {role: agentmem.RoleUser, text: "What is the weather in Paris?"},
		3: {role: agentmem.RoleUser, text: "And this picture?", images: 1},
		5: {role: agentmem.RoleAssistant, call: "call_1"},
		7: {role: agentmem.RoleTool, text: "sunny, 21°C <b>", call: "call_1"},
		8: {role: agentmem.RoleTool, text: "12:00", call: "call_2", images: 1},
		9: {role: agentmem.RoleAssistant, text: "Sunny, 21°C.\nNo pictures."},
	}
	for i, m := range msgs {
		if m.Metadata[responses.MetaItem] != compact(t, everyType[i]) {
			t.Fatalf("item %d: metadata %q", i, m.Metadata[responses.MetaItem])
		}
		w, ok := wants[i]
		if !ok {
			if i == 6 {
				continue
			}
			// No chat equivalent: an assistant message with nothing.
			if m.Role != agentmem.RoleAssistant || m.Text() != "" || len(m.ToolCalls) != 0 {
				t.Fatalf("item %d: %+v", i, m)
			}
			continue
		}
		images := 0
		for _, p := range m.Content {
			if p.Type == agentmem.PartImage {
				images++
			}
		}
		call := m.ToolCallID
		if len(m.ToolCalls) == 1 {
			call = m.ToolCalls[0].ID
			if m.ToolCalls[0].Name != "get_weather" || m.ToolCalls[0].Arguments != `{"city":"Paris"}` {
				t.Fatalf("item %d: call %+v", i, m.ToolCalls[0])
			}
		}
		if m.Role != w.role || m.Text() != w.text || call != w.call || images != w.images {
			t.Fatalf("item %d: %+v, want %+v", i, m, w)
		}
	}
	// The steps render only the chat turns, calls with their results.
	f, err := agentmem.FoldMessages(nil, msgs, agentmem.FoldOptions{KeepPending: true})
	if err != nil {
		t.Fatal(err)
	}
	var rendered []string
	for _, st := range f.Steps {
		for _, m := range st.Messages(agentmem.RenderOptions{}) {
			rendered = append(rendered, string(m.Role)+":"+m.Text()+m.ToolCallID)
		}
	}
	wantText := "system:Be brief.|system:You are a weather bot.|user:What is the weather in Paris?|user:And this picture?|" +
		"assistant:|tool:sunny, 21°C <b>call_1|assistant:|tool:12:00call_2|assistant:Sunny, 21°C.\nNo pictures."
	if got := strings.Join(rendered, "|"); got != wantText {
		t.Fatalf("rendered:\n%s\nwant:\n%s", got, wantText)
	}
}

// TestJavaScriptSDKItems: the items of the OpenAI Agents SDK for
// JavaScript (callId, function_call_result with one part or several)
// are function calls and their results, round-trip exactly, and may come
// item by item.
func TestJavaScriptSDKItems(t *testing.T) {
	user := `{"role":"user","content":"Weather in Rome?"}`
	call := `{"type":"function_call","id":"fc_1","callId":"call_1","name":"get_weather","arguments":"{\"city\":\"Rome\"}","status":"completed","providerData":{"x":1}}`
	call2 := `{"type":"function_call","callId":"call_2","name":"get_time","arguments":"{}"}`
	result := `{"type":"function_call_result","callId":"call_1","name":"get_weather","status":"completed","output":{"type":"text","text":"21C, clear"}}`
	result2 := `{"type":"function_call_result","callId":"call_2","name":"get_time","status":"completed","output":[{"type":"text","text":"noon"},{"type":"image","image":"https://example.com/c.png"}]}`
	answer := `{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Rome is 21C."}]}`
	all := []string{user, call, call2, result, result2, answer}
	msgs, err := responses.ToMessages(raws(all), responses.Options{NewID: agentmem.NewID})
	if err != nil {
		t.Fatal(err)
	}
	if c := msgs[1].ToolCalls; len(c) != 1 || c[0].ID != "call_1" || c[0].Name != "get_weather" || c[0].Arguments != `{"city":"Rome"}` {
		t.Errorf("function_call with callId: %+v", msgs[1])
	}
	if m := msgs[3]; m.Role != agentmem.RoleTool || m.ToolCallID != "call_1" || m.Text() != "21C, clear" {
		t.Errorf("function_call_result with one part: %+v", m)
	}
	if m := msgs[4]; m.Role != agentmem.RoleTool || m.ToolCallID != "call_2" || m.Text() != "noon" ||
		len(m.Content) != 2 || m.Content[1].Image == nil || m.Content[1].Image.URL != "https://example.com/c.png" {
		t.Errorf("function_call_result with parts: %+v", m)
	}
	s := &session{t: t}
	for _, it := range all {
		if err := s.add(it); err != nil {
			t.Fatal(err)
		}
	}
	s.wantItems(all)
	if !responses.NeedsState(raws([]string{result})) {
		t.Error("a function_call_result first does not need the session's state")
	}
	for item, field := range map[string]string{
		`{"type":"function_call","name":"f","arguments":"{}"}`:                         "call_id",
		`{"type":"function_call","callId":"","name":"f","arguments":"{}"}`:             "callId",
		`{"type":"function_call_result","callId":"c","name":"f","status":"completed"}`: "output",
		`{"type":"function_call_result","callId":"c","output":7}`:                      "output",
	} {
		err := responses.Check(raws([]string{item}))
		var ie *agentmem.InvalidError
		if !errors.As(err, &ie) || ie.Field != "items[0]."+field {
			t.Errorf("%s: %v, want invalid naming %s", item, err, field)
		}
	}
}

// TestOutputsInLaterRequests: outputs that arrive after other items, in
// any order and in later requests, come back where they were appended;
// an output popped (its result taken off its action) leaves its call
// pending and disappears from the items.
func TestOutputsInLaterRequests(t *testing.T) {
	user := `{"role":"user","content":"weather and time?"}`
	c1 := `{"type":"function_call","call_id":"a","name":"weather","arguments":"{}"}`
	c2 := `{"type":"function_call","call_id":"b","name":"time","arguments":"{}"}`
	o2 := `{"type":"function_call_output","call_id":"b","output":"noon"}`
	o1 := `{"type":"function_call_output","call_id":"a","output":"sunny"}`
	note := `{"type":"reasoning","id":"r","summary":[]}`
	answer := `{"role":"assistant","content":"Sunny at noon."}`
	s := &session{t: t}
	for _, req := range [][]string{{user, c1}, {c2}, {o2}, {note, o1}, {answer}} {
		if err := s.add(req...); err != nil {
			t.Fatal(err)
		}
	}
	all := []string{user, c1, c2, o2, note, o1, answer}
	s.wantItems(all)

	// Newest is the answer, then (once it is gone) o1, which sits on the
	// first call's action.
	item, i, call, ok := responses.Newest(s.steps)
	if !ok || string(item) != answer || i != len(s.steps)-1 || call != "" {
		t.Fatalf("newest: %s %d %q", item, i, call)
	}
	s.steps = s.steps[:len(s.steps)-1]
	item, i, call, _ = responses.Newest(s.steps)
	if string(item) != o1 || call != "a" || s.steps[i].(*agentmem.ActionStep).ToolCalls[0].ID != "a" {
		t.Fatalf("newest: %s %d %q", item, i, call)
	}
	_, rest, _ := s.steps[i].(*agentmem.ActionStep).PopResult("a")
	s.steps[i] = rest
	s.wantItems([]string{user, c1, c2, o2, note})
	if !rest.Pending() {
		t.Fatal("the call whose output was popped is not pending")
	}
	// Answered again, later: it goes at the end.
	if err := s.add(o1); err != nil {
		t.Fatal(err)
	}
	s.wantItems([]string{user, c1, c2, o2, note, o1})
}

// TestStepsWrittenOtherwise: steps that did not come from items come
// back as the items they render.
func TestStepsWrittenOtherwise(t *testing.T) {
	steps := []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{ID: "1"}, Content: "sys"},
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "2"}, Task: "look", Images: []agentmem.Image{{URL: "https://x/y.png"}}},
		&agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: "3"}, ModelOutput: "checking",
			ToolCalls: []agentmem.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}},
			Results:   []agentmem.ToolResult{{CallID: "c", Content: "done"}}},
		&agentmem.SummaryStep{StepInfo: agentmem.StepInfo{ID: "4"}, Summary: "earlier"},
		&agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: "5"}, ModelOutput: "shooting", Images: []agentmem.Image{{URL: "https://x/sketch.png"}},
			ToolCalls: []agentmem.ToolCall{{ID: "s", Name: "screenshot", Arguments: "{}"}},
			Results:   []agentmem.ToolResult{{CallID: "s", Content: "the page", Images: []agentmem.Image{{MediaType: "image/png", Data: []byte{1, 2, 3}, Detail: "low"}}}}},
		&agentmem.FinalAnswerStep{StepInfo: agentmem.StepInfo{ID: "6"}, Answer: "42"},
	}
	got := responses.Items(steps)
	want := []string{
		`{"content":"sys","role":"system"}`,
		`{"content":[{"text":"look","type":"input_text"},{"detail":"auto","image_url":"https://x/y.png","type":"input_image"}],"role":"user"}`,
		`{"content":"checking","role":"assistant"}`,
		`{"arguments":"{}","call_id":"c","name":"f","type":"function_call"}`,
		`{"call_id":"c","output":"done","type":"function_call_output"}`,
		`{"content":"Summary of earlier steps:\nearlier","role":"user"}`,
		`{"content":"shooting\n[image: https://x/sketch.png]","role":"assistant"}`,
		`{"arguments":"{}","call_id":"s","name":"screenshot","type":"function_call"}`,
		`{"call_id":"s","output":[{"text":"the page","type":"input_text"},{"detail":"low","image_url":"data:image/png;base64,AQID","type":"input_image"}],"type":"function_call_output"}`,
		`{"content":"42","role":"assistant"}`,
	}
	if len(got) != len(want) {
		t.Fatalf("%d items: %s", len(got), got)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Fatalf("item %d: %s, want %s", i, got[i], want[i])
		}
	}
	if _, i, call, _ := responses.Newest(steps); i != 5 || call != "" {
		t.Fatalf("newest: %d %q", i, call)
	}
}

// TestBadItems: each bad item is refused naming it.
func TestBadItems(t *testing.T) {
	good := `{"role":"user","content":"hi"}`
	for body, field := range map[string]string{
		`[1]`:                            "items[1]",
		`"text"`:                         "items[1]",
		`{}`:                             "items[1].type",
		`{"type":""}`:                    "items[1].type",
		`{"type":7}`:                     "items[1].type",
		`{"role":"robot","content":"x"}`: "items[1].role",
		`{"role":"user"}`:                "items[1].content",
		`{"role":"user","content":7}`:    "items[1].content",
		`{"role":"user","content":[7]}`:  "items[1].content",
		`{"role":"user","content":[{"text":"x"}]}`:                         "items[1].content[0].type",
		`{"role":"user","content":[{"type":"input_text","text":3}]}`:       "items[1].content[0].text",
		`{"role":"user","content":[{"type":"input_image","image_url":3}]}`: "items[1].content[0].image_url",
		`{"type":"function_call","name":"f","arguments":"{}"}`:             "items[1].call_id",
		`{"type":"function_call","call_id":"c","arguments":"{}"}`:          "items[1].name",
		`{"type":"function_call","call_id":"c","name":"f","arguments":{}}`: "items[1].arguments",
		`{"type":"function_call_output","output":"x"}`:                     "items[1].call_id",
		`{"type":"function_call_output","call_id":"c"}`:                    "items[1].output",
		`{"type":"function_call_output","call_id":"c","output":5}`:         "items[1].output",
		`{"type":"message","role":"user","content":[null]}`:                "items[1].content[0]",
	} {
		items := []json.RawMessage{json.RawMessage(good), json.RawMessage(body)}
		_, err := responses.ToMessages(items, responses.Options{NewID: agentmem.NewID})
		var ie *agentmem.InvalidError
		if !errors.As(err, &ie) || ie.Field != field || !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("%s: %v, want a refusal of %s", body, err, field)
		}
		if err2 := responses.Check(items); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%s: Check says %v, ToMessages %v", body, err2, err)
		}
	}
	// An output first in a session with no steps has no call.
	_, err := responses.ToMessages(raws([]string{`{"type":"function_call_output","call_id":"c","output":"x"}`}), responses.Options{NewID: agentmem.NewID})
	var ie *agentmem.InvalidError
	if !errors.As(err, &ie) || ie.Field != "items[0].call_id" {
		t.Fatalf("an output with no call: %v", err)
	}
}
