package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/sessions"
)

// TestCredentials: the configured upstream key wins over the caller's;
// without one the caller's credentials are forwarded, never an agentmem
// API key; each key's sessions are its tenant's.
func TestCredentials(t *testing.T) {
	keys := auth.NewKeys(auth.NewMemStore(), auth.KeysOptions{})
	e := newEnv(t, func(pc *proxy.Config, sc *server.Config) {
		pc.OpenAI.APIKey = "sk-configured"
		sc.Auth = auth.NewAuthenticator(keys, auth.AuthenticatorOptions{Require: true, CacheTTL: -1})
	})
	tokenA, _, err := keys.Create(context.Background(), "tenant-a", "")
	if err != nil {
		t.Fatal(err)
	}
	tokenB, _, err := keys.Create(context.Background(), "tenant-b", "")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	body := map[string]any{"model": "gpt-4o", "messages": msgs}
	// No key: refused.
	if r := e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "s"}, body); r.status != 401 {
		t.Errorf("without a key: %d", r.status)
	}
	// A provider's key is not an agentmem key: refused where keys are
	// required, and not sent anywhere.
	if r := e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "s", "Authorization": "Bearer sk-openai"}, body); r.status != 401 {
		t.Errorf("with a provider key where agentmem keys are required: %d", r.status)
	}
	if len(e.up.Received()) != 0 {
		t.Fatal("an unauthenticated request reached the upstream")
	}
	r := e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "s", "Authorization": "Bearer " + tokenA}, body)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if got := e.up.Received()[0].Header.Get("Authorization"); got != "Bearer sk-configured" {
		t.Errorf("the upstream got Authorization %q", got)
	}
	// The session is tenant-a's: tenant-b's "s" is another session.
	if _, err := e.svc.Get(context.Background(), "tenant-a", "s"); err != nil {
		t.Errorf("tenant-a's session: %v", err)
	}
	if _, err := e.svc.Get(context.Background(), "tenant-b", "s"); err == nil {
		t.Error("tenant-b sees tenant-a's session")
	}
	r = e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "s", "Authorization": "Bearer " + tokenB}, body)
	if r.status != 200 || r.header.Get(proxy.HeaderCreated) != "true" {
		t.Errorf("tenant-b's first request: %d %v", r.status, r.header)
	}

	// Without a configured key and without agentmem keys: the caller's
	// credentials are forwarded.
	e2 := newEnv(t, nil)
	e2.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "s", "Authorization": "Bearer sk-caller"}, body)
	e2.post(t, "/v1/messages", map[string]string{proxy.HeaderSession: "s", "X-Api-Key": "sk-ant-caller"}, map[string]any{"model": "claude", "max_tokens": 5, "messages": msgs})
	rec := e2.up.Received()
	if rec[0].Header.Get("Authorization") != "Bearer sk-caller" || rec[1].Header.Get("X-Api-Key") != "sk-ant-caller" {
		t.Errorf("the caller's credentials were not forwarded: %v / %v", rec[0].Header, rec[1].Header)
	}
	for _, h := range rec {
		for k := range h.Header {
			if strings.HasPrefix(k, "X-Agentmem-") {
				t.Errorf("%s was forwarded", k)
			}
		}
	}

	// An agentmem key is never forwarded, even with no configured key.
	keys3 := auth.NewKeys(auth.NewMemStore(), auth.KeysOptions{})
	e3 := newEnv(t, func(_ *proxy.Config, sc *server.Config) {
		sc.Auth = auth.NewAuthenticator(keys3, auth.AuthenticatorOptions{Require: true, CacheTTL: -1})
	})
	token3, _, _ := keys3.Create(context.Background(), "t", "")
	e3.post(t, "/v1/messages", map[string]string{proxy.HeaderSession: "s", "Authorization": "Bearer " + token3, "X-Api-Key": "sk-ant"}, map[string]any{"model": "claude", "max_tokens": 5, "messages": msgs})
	if got := e3.up.Received()[0].Header; got.Get("Authorization") != "" || got.Get("X-Api-Key") != "sk-ant" {
		t.Errorf("the upstream got %v", got)
	}
}

// TestClientGoesAway: a client that leaves in the middle of a stream
// gets no reply recorded, and the upstream request is cancelled.
func TestClientGoesAway(t *testing.T) {
	e := newEnv(t, nil)
	reached, upstreamDone := make(chan struct{}), make(chan struct{})
	e.up.Hold = func(r *http.Request, event int) {
		if event == 3 {
			close(reached)
			<-r.Context().Done() // the proxy let go of the upstream
			close(upstreamDone)
		}
	}
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set(proxy.HeaderSession, "away")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	<-reached
	cancel()
	resp.Body.Close()
	select {
	case <-upstreamDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not cancelled when the client left")
	}
	if h := e.held(t, "away"); len(h) != 1 {
		t.Errorf("the session holds %s", wire(t, h))
	}
}

// TestFactsAndRecall: X-Agentmem-Facts and X-Agentmem-Recall add the
// user's facts and turns of the user's other sessions to the system
// prompt, within the budget, and the response says so.
func TestFactsAndRecall(t *testing.T) {
	fm := facts.New(facts.NewMemStore(), facts.Options{})
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	e := newEnv(t, func(pc *proxy.Config, sc *server.Config) {
		sc.Facts, sc.Recall = fm, ix
	})
	ctx := context.Background()
	if _, err := fm.Remember(ctx, facts.RememberRequest{UserID: "ann", Text: "Ann is allergic to peanuts."}); err != nil {
		t.Fatal(err)
	}
	// A turn of another session of Ann's, in the recall index.
	if err := ix.Upsert(ctx, recall.Doc{ID: "old#3", Text: "The transistor was invented at Bell Labs in 1947.", Group: "old", Seq: 3,
		Metadata: map[string]string{recall.MetaSession: "old", recall.MetaUser: "ann"}}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Upsert(ctx, recall.Doc{ID: "bob#1", Text: "The transistor story according to Bob.", Group: "bob", Seq: 1,
		Metadata: map[string]string{recall.MetaSession: "bob", recall.MetaUser: "bob"}}); err != nil {
		t.Fatal(err)
	}
	hdr := map[string]string{proxy.HeaderSession: "new", proxy.HeaderUser: "ann", proxy.HeaderFacts: "5", proxy.HeaderRecall: "3", proxy.HeaderBudget: "2000"}
	r := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": []any{
		map[string]any{"role": "system", "content": systemPrompt},
		map[string]any{"role": "user", "content": "Who invented the transistor?"},
	}})
	if r.status != 200 || r.header.Get(proxy.HeaderFactsInjected) != "1" || r.header.Get(proxy.HeaderRecallInjected) != "1" {
		t.Fatalf("%d %v %s", r.status, r.header, r.body)
	}
	var sent map[string]json.RawMessage
	_ = json.Unmarshal(e.up.Received()[0].Body, &sent)
	msgs, err := render.DecodeOpenAIMessages(sent["messages"])
	if err != nil {
		t.Fatal(err)
	}
	sys := msgs[0].Text()
	if !strings.HasPrefix(sys, systemPrompt) || !strings.Contains(sys, "allergic to peanuts") || !strings.Contains(sys, "Bell Labs") || strings.Contains(sys, "Bob") {
		t.Errorf("the system prompt sent: %q", sys)
	}
	if cost := agentmem.RequestTokens(o200k(t), msgs); cost > 2000 || r.header.Get(proxy.HeaderContextTokens) != itoa(cost) {
		t.Errorf("the messages cost %d; header %s", cost, r.header.Get(proxy.HeaderContextTokens))
	}
	// The session records the user's messages, not the injected text;
	// the reply's metadata records the call.
	h, err := e.svc.History(ctx, sessions.HistoryRequest{Tenant: "", SessionID: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if h.UserID != "ann" || h.Steps[0].(*agentmem.SystemPromptStep).Content != systemPrompt {
		t.Errorf("the session: user %q, first step %+v", h.UserID, h.Steps[0])
	}
	md := h.Steps[len(h.Steps)-1].Info().Metadata
	if md[proxy.MetaFacts] == "" || md[proxy.MetaRecall] != "old#3" || md[proxy.MetaBudget] != "2000" || md[proxy.MetaAPI] != "openai" || md[proxy.MetaModel] != "gpt-4o" {
		t.Errorf("the reply's call record: %v", md)
	}
	// Facts for a session without a user: 400.
	r = e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "nouser", proxy.HeaderFacts: "2"},
		map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if r.status != 400 || !strings.Contains(string(r.body), proxy.HeaderFacts) {
		t.Errorf("facts without a user: %d %s", r.status, r.body)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestFastPath: a whole history resent byte for byte is recognised from
// the session's memo, and gives what the general path gives; a session
// another writer touched, a reply the client changed and a bad new
// message take the general path.
func TestFastPath(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Script = func(_ string, n int, _ []any) proxytest.Reply { return proxytest.Reply{Text: "answer " + itoa(n)} }
	hdr := map[string]string{proxy.HeaderSession: "fast"}
	h := []any{map[string]any{"role": "system", "content": systemPrompt}, map[string]any{"role": "user", "content": firstTask}}
	send := func(stream bool) map[string]any {
		t.Helper()
		r := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h, "stream": stream})
		m, _ := openAIReply(t, r, stream)
		return m
	}
	for i := range 4 {
		h = append(h, send(i%2 == 1), map[string]any{"role": "user", "content": "next " + itoa(i)})
	}
	if got := e.Proxy.FastRecorded(); got != 3 {
		t.Errorf("%d requests took the fast path, want 3", got)
	}
	check := func(want []any) {
		t.Helper()
		if got := wire(t, e.held(t, "fast")); got != wire(t, canonicalOpenAI(t, want)) {
			t.Errorf("the session holds\n%s\nwant\n%s", got, wire(t, canonicalOpenAI(t, want)))
		}
	}
	// Another writer appends: the memo no longer applies.
	other := agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("from elsewhere")}
	if _, err := e.svc.AppendMessages(context.Background(), sessions.MessagesRequest{SessionID: "fast", Messages: []agentmem.Message{other}}); err != nil {
		t.Fatal(err)
	}
	h = append(h, send(false))
	if got := e.Proxy.FastRecorded(); got != 3 {
		t.Errorf("after another writer, the fast path was taken (%d)", got)
	}
	check(h) // the session follows the client (rule 5 popped the other message)
	// The client changes the reply it got: the general path rewinds.
	h = append(h, map[string]any{"role": "user", "content": "more"})
	send(false)
	if got := e.Proxy.FastRecorded(); got != 4 {
		t.Errorf("a request after a rewind did not take the fast path (%d)", got)
	}
	h = append(h, map[string]any{"role": "assistant", "content": "a reply the client rewrote"}, map[string]any{"role": "user", "content": "again"})
	reply := send(false)
	if got := e.Proxy.FastRecorded(); got != 4 {
		t.Errorf("a rewritten reply took the fast path (%d)", got)
	}
	check(append(append([]any{}, h...), reply))
	h = append(h, reply)
	// A new message that does not check is refused as the general path
	// refuses it, and nothing is recorded.
	msgs, _ := json.Marshal(h)
	bad := `{"model":"gpt-4o","messages":` + string(msgs[:len(msgs)-1]) + `,{"role":"user","content":"bad \ud800"}]}`
	r := e.post(t, "/v1/chat/completions", hdr, []byte(bad))
	var eb api.ErrorBody
	if err := json.Unmarshal(r.body, &eb); err != nil || r.status != 400 || eb.Error.Field != fmt.Sprintf("messages[%d].content", len(h)) {
		t.Errorf("a lone surrogate in a new message: %d %s", r.status, r.body)
	}
	check(h)
}

// TestInspectorShowsTheCall: the inspector's "what the model saw" page of
// a reply the proxy recorded shows the call's record and the context as
// the proxy fitted it (its budget, format and tokenizer): the messages
// the upstream received.
func TestInspectorShowsTheCall(t *testing.T) {
	e := newEnv(t, func(_ *proxy.Config, sc *server.Config) {
		svc, err := sessions.New(sessions.Config{Store: sc.Store})
		if err != nil {
			t.Fatal(err)
		}
		sc.Sessions = svc
		insp, err := inspector.New(inspector.Config{Store: sc.Store, Sessions: svc, Tenant: func(*http.Request) (string, error) { return "", nil }})
		if err != nil {
			t.Fatal(err)
		}
		sc.Inspector, sc.InspectorPatterns = insp, inspector.Patterns
	})
	hdr := map[string]string{proxy.HeaderSession: "seen", proxy.HeaderBudget: "700"}
	h := []any{map[string]any{"role": "system", "content": systemPrompt}, map[string]any{"role": "user", "content": firstTask}}
	for i := range 3 {
		r := e.post(t, "/v1/messages", hdr, map[string]any{"model": "claude-x", "max_tokens": 100, "system": systemPrompt, "messages": h[1:]})
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var resp struct {
			Content []any `json:"content"`
		}
		_ = json.Unmarshal(r.body, &resp)
		h = append(h, map[string]any{"role": "assistant", "content": resp.Content})
		var results []any
		for _, b := range resp.Content {
			if m := b.(map[string]any); m["type"] == "tool_use" {
				results = append(results, map[string]any{"type": "tool_result", "tool_use_id": m["id"], "content": bigResult(i)})
			}
		}
		if len(results) == 0 {
			results = []any{map[string]any{"type": "text", "text": "go on " + itoa(i)}}
		}
		h = append(h, map[string]any{"role": "user", "content": results})
	}
	// The last reply's step.
	hist, err := e.svc.History(context.Background(), sessions.HistoryRequest{SessionID: "seen"})
	if err != nil {
		t.Fatal(err)
	}
	last := hist.Steps[len(hist.Steps)-1].Info()
	call, ok := proxy.CallOf(last.Metadata)
	if !ok || call.API != "anthropic" || call.Budget != 700 || call.Model != "claude-x" {
		t.Fatalf("the reply's record: %+v %v", call, ok)
	}
	resp, err := http.Get(fmt.Sprintf("%s/sessions/seen/context?at=%d", e.srv.URL, last.Number))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), `id="proxied-call"`) || !strings.Contains(string(page), "claude-x") {
		t.Fatalf("%d: the page does not show the call:\n%.2000s", resp.StatusCode, page)
	}
	// The page renders the messages the upstream received for that call.
	rec := e.up.Received()
	sent := anthropicWire(t, rec[len(rec)-1].Body)
	if !strings.Contains(string(page), `id="ctx-tokens">`+itoa(call.Tokens)+`<`) {
		t.Errorf("the page's context does not cost the call's %d tokens", call.Tokens)
	}
	for _, text := range sent {
		if !strings.Contains(string(page), template.HTMLEscapeString(text)) {
			t.Errorf("the page does not show %.80q, which was sent", text)
		}
	}
}

// anthropicWire returns the texts of an Anthropic body's messages (text
// blocks and tool results).
func anthropicWire(t *testing.T, body []byte) []string {
	t.Helper()
	msgs, err := proxytest.AnthropicMessages(body)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		for _, p := range m.Content {
			if p.Text != "" && len(p.Text) < 200 {
				out = append(out, p.Text)
			}
		}
	}
	return out
}
