// Package proxytest is a stand-in for the providers behind the proxy. It
// is an HTTP server that speaks OpenAI's Chat Completions API and
// Anthropic's Messages API on the wire, whole and streamed (server-sent
// events, tool calls included). It answers as a scripted tool-using model,
// and records every request body it receives. The proxy's tests, its SDK
// tests and its latency benchmark run against it.
package proxytest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
)

// Reply is what the scripted model answers: text, tool calls, or both.
type Reply struct {
	Text  string
	Calls []Call
}

// Call is a tool call of a reply.
type Call struct {
	ID, Name string
	// Args is the arguments as JSON text (an object).
	Args string
}

// Failure makes the upstream answer an error instead of a reply.
type Failure struct {
	Status int
	Header http.Header
	Body   string
}

// Received is a request the upstream received.
type Received struct {
	// API is "openai" or "anthropic".
	API    string
	Path   string
	Header http.Header
	Body   []byte
}

// Upstream is the stand-in provider. Its fields may be set before the
// requests they affect; it is safe for concurrent use.
type Upstream struct {
	*httptest.Server

	mu       sync.Mutex
	received []Received
	replies  []Reply // what each answer said, in order
	calls    int

	// Script decides a reply from the request's messages (decoded JSON);
	// nil means DefaultScript.
	Script func(api string, n int, messages []any) Reply
	// Fail, when it returns non-nil for the n-th request (from 0), makes
	// that request fail so.
	Fail func(n int) *Failure
	// CutAfter, when positive, makes streamed answers stop (the
	// connection closed) after that many events.
	CutAfter int
	// Chunk is the size of the text pieces streamed; 0 means 7 bytes.
	Chunk int
	// Fixed, when set, is the reply to every request, a whole answer given
	// without decoding the request or keeping it. It is for latency
	// measurements, where the upstream's own work should not depend on the
	// body.
	Fixed *Reply
	// Delay is how long the upstream takes to answer each request after
	// reading it, as a model takes to answer. It is for latency
	// measurements: with an upstream that answers at once, concurrent
	// clients measure the machine's CPU rather than the latency the proxy
	// adds.
	Delay time.Duration
	// Hold, when set, is called before each event of a stream is sent, with
	// the request and the event's number (from 0). A test may block in it to
	// act while a stream is under way.
	Hold func(r *http.Request, event int)
}

// New starts a stand-in upstream serving POST /v1/chat/completions (and
// /chat/completions) and POST /v1/messages.
func New() *Upstream {
	u := &Upstream{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", u.openAI)
	mux.HandleFunc("POST /chat/completions", u.openAI)
	mux.HandleFunc("POST /v1/messages", u.anthropic)
	mux.HandleFunc("POST /_proxytest/check", u.check)
	mux.HandleFunc("GET /_proxytest/replies", u.listReplies)
	u.Server = httptest.NewServer(mux)
	return u
}

// CheckRequest asks the upstream to Check every request it received. It is
// for tests in other languages, which drive a client against a standalone
// stand-in (see cmd/standin).
type CheckRequest struct {
	Budget    int    `json:"budget"`
	Tokenizer string `json:"tokenizer"`
	System    string `json:"system"`
	Task      string `json:"task"`
}

// CheckResult is the Check of one request received.
type CheckResult struct {
	API   string `json:"api"`
	Cost  int    `json:"cost"`
	Error string `json:"error,omitempty"`
}

// check serves POST /_proxytest/check: Check on every request received.
func (u *Upstream) check(w http.ResponseWriter, r *http.Request) {
	var req CheckRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c, err := tokenizer.Get(req.Tokenizer)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out := []CheckResult{}
	for _, rec := range u.Received() {
		cost, err := Check(rec, req.Budget, c, req.System, req.Task)
		res := CheckResult{API: rec.API, Cost: cost}
		if err != nil {
			res.Error = err.Error()
		}
		out = append(out, res)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// listReplies serves GET /_proxytest/replies: the replies answered, in
// order.
func (u *Upstream) listReplies(w http.ResponseWriter, _ *http.Request) {
	out := []map[string]any{}
	for _, r := range u.Replies() {
		calls := []map[string]string{}
		for _, c := range r.Calls {
			calls = append(calls, map[string]string{"id": c.ID, "name": c.Name, "args": c.Args})
		}
		out = append(out, map[string]any{"text": r.Text, "calls": calls})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// OpenAIBaseURL is the base URL an OpenAI client (or the proxy) takes.
func (u *Upstream) OpenAIBaseURL() string { return u.URL + "/v1" }

// Received returns the requests received so far.
func (u *Upstream) Received() []Received {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Received(nil), u.received...)
}

// Replies returns the replies answered so far (complete or not).
func (u *Upstream) Replies() []Reply {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Reply(nil), u.replies...)
}

// DefaultScript is a tool-using model. To a user message it answers with a
// call of the tool "lookup" (and a word). To a tool result it answers with
// text that quotes the start of the result. Every third turn it answers a
// user message with text alone.
func DefaultScript(api string, n int, messages []any) Reply {
	last, _ := messages[len(messages)-1].(map[string]any)
	isResult := last["role"] == "tool"
	if blocks, ok := last["content"].([]any); ok && last["role"] == "user" {
		for _, b := range blocks {
			if m, _ := b.(map[string]any); m["type"] == "tool_result" {
				isResult = true
			}
		}
	}
	if isResult {
		return Reply{Text: fmt.Sprintf("Answer %d: the lookup says what it says.", n)}
	}
	if n%3 == 2 {
		return Reply{Text: fmt.Sprintf("Reply %d without tools.", n)}
	}
	id := fmt.Sprintf("call_%d", n)
	if api == "anthropic" {
		id = fmt.Sprintf("toolu_%d", n)
	}
	return Reply{Text: "Let me look that up.", Calls: []Call{{ID: id, Name: "lookup", Args: fmt.Sprintf(`{"query":"question %d","limit":3}`, n)}}}
}

// begin records a request and returns its number, messages and whether
// it streams, or false after answering a failure.
func (u *Upstream) begin(w http.ResponseWriter, r *http.Request, api string) (int, map[string]any, []any, bool) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	n := u.calls
	u.calls++
	fail, fixed, delay := u.Fail, u.Fixed, u.Delay
	if fixed == nil { // a measurement keeps nothing
		u.received = append(u.received, Received{API: api, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	}
	u.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return n, nil, nil, false
		}
	}
	if fail != nil {
		if f := fail(n); f != nil {
			for k, vs := range f.Header {
				w.Header()[k] = vs
			}
			w.WriteHeader(f.Status)
			_, _ = io.WriteString(w, f.Body)
			return n, nil, nil, false
		}
	}
	if fixed != nil {
		// Not even the stream flag: a whole answer.
		return n, map[string]any{"model": "fixed"}, []any{map[string]any{"role": "user"}}, true
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return n, nil, nil, false
	}
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		http.Error(w, `{"error":{"message":"messages: at least one is required"}}`, http.StatusBadRequest)
		return n, nil, nil, false
	}
	return n, req, msgs, true
}

func (u *Upstream) reply(api string, n int, msgs []any) Reply {
	if u.Fixed != nil {
		return *u.Fixed // not kept either
	}
	script := u.Script
	if script == nil {
		script = DefaultScript
	}
	rep := script(api, n, msgs)
	u.mu.Lock()
	u.replies = append(u.replies, rep)
	u.mu.Unlock()
	return rep
}

func (u *Upstream) pieces(s string) []string {
	size := u.Chunk
	if size <= 0 {
		size = 7
	}
	var out []string
	for len(s) > size {
		// A provider streams whole characters.
		n := size
		for n > 1 && !utf8.RuneStart(s[n]) {
			n--
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// sse writes server-sent events, counting them against CutAfter.
type sse struct {
	w     http.ResponseWriter
	r     *http.Request
	rc    *http.ResponseController
	n     int
	limit int
	hold  func(*http.Request, int)
}

// send writes one event. Once CutAfter events are sent, it aborts the
// connection, as a provider whose stream breaks does.
func (s *sse) send(event string, data any) bool {
	if s.limit > 0 && s.n >= s.limit {
		panic(http.ErrAbortHandler)
	}
	if s.hold != nil {
		s.hold(s.r, s.n)
	}
	s.n++
	b, _ := json.Marshal(data)
	if raw, ok := data.(string); ok {
		b = []byte(raw)
	}
	if event != "" {
		fmt.Fprintf(s.w, "event: %s\n", event)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	_ = s.rc.Flush()
	return true
}

func (u *Upstream) stream(w http.ResponseWriter, r *http.Request) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	u.mu.Lock()
	limit, hold := u.CutAfter, u.Hold
	u.mu.Unlock()
	return &sse{w: w, r: r, rc: http.NewResponseController(w), limit: limit, hold: hold}
}

func (u *Upstream) openAI(w http.ResponseWriter, r *http.Request) {
	n, req, msgs, ok := u.begin(w, r, "openai")
	if !ok {
		return
	}
	rep := u.reply("openai", n, msgs)
	id := fmt.Sprintf("chatcmpl-%d", n)
	model, _ := req["model"].(string)
	created := time.Now().Unix()
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
	}
	w.Header().Set("X-Request-Id", fmt.Sprintf("req_%d", n))
	if stream, _ := req["stream"].(bool); !stream {
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
		if rep.Text != "" {
			msg["content"] = rep.Text
		}
		if len(rep.Calls) > 0 {
			var tcs []any
			for _, c := range rep.Calls {
				tcs = append(tcs, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}})
			}
			msg["tool_calls"] = tcs
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
		return
	}
	s := u.stream(w, r)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
	}
	if !s.send("", chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)) {
		return
	}
	for _, p := range u.pieces(rep.Text) {
		if !s.send("", chunk(map[string]any{"content": p}, nil)) {
			return
		}
	}
	for i, c := range rep.Calls {
		first := map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}}}
		if !s.send("", chunk(first, nil)) {
			return
		}
		for _, p := range u.pieces(c.Args) {
			if !s.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil)) {
				return
			}
		}
	}
	if !s.send("", chunk(map[string]any{}, finish)) {
		return
	}
	if opts, _ := req["stream_options"].(map[string]any); opts["include_usage"] == true {
		if !s.send("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}) {
			return
		}
	}
	s.send("", "[DONE]")
}

func (u *Upstream) anthropic(w http.ResponseWriter, r *http.Request) {
	n, req, msgs, ok := u.begin(w, r, "anthropic")
	if !ok {
		return
	}
	rep := u.reply("anthropic", n, msgs)
	id := fmt.Sprintf("msg_%d", n)
	model, _ := req["model"].(string)
	stop := "end_turn"
	if len(rep.Calls) > 0 {
		stop = "tool_use"
	}
	w.Header().Set("Request-Id", fmt.Sprintf("req_%d", n))
	var content []any
	if rep.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": rep.Text})
	}
	for _, c := range rep.Calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Args)})
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5}
	if stream, _ := req["stream"].(bool); !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	s := u.stream(w, r)
	if !s.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}}) {
		return
	}
	if !s.send("ping", map[string]any{"type": "ping"}) {
		return
	}
	idx := 0
	if rep.Text != "" {
		if !s.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}}) {
			return
		}
		for _, p := range u.pieces(rep.Text) {
			if !s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": p}}) {
				return
			}
		}
		if !s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}) {
			return
		}
		idx++
	}
	for _, c := range rep.Calls {
		if !s.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}}) {
			return
		}
		for _, p := range u.pieces(c.Args) {
			if !s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}}) {
				return
			}
		}
		if !s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}) {
			return
		}
		idx++
	}
	if !s.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}}) {
		return
	}
	s.send("message_stop", map[string]any{"type": "message_stop"})
}

// String describes a reply: its text and its calls.
func (r Reply) String() string {
	var b strings.Builder
	b.WriteString(r.Text)
	for _, c := range r.Calls {
		fmt.Fprintf(&b, " [%s %s(%s)]", c.ID, c.Name, c.Args)
	}
	return b.String()
}

// Check verifies a request the upstream received from the proxy. Its
// messages must cost at most budget tokens under agentmem's cost model
// with counter c (the exact tokenizer of OpenAI models). The first must be
// the system prompt system. Unless task is empty, the next must be the
// first task. Pass a task only for a session that pins it; a chat's
// pinning, the proxy's default, does not. Every tool call must have its
// result in the API's rules (render.Validate). It returns what the
// messages cost.
func Check(r Received, budget int, c tokenizer.Counter, system, task string) (int, error) {
	var msgs []agentmem.Message
	format := render.NameOpenAI
	if r.API == "anthropic" {
		format = render.NameAnthropic
		var err error
		if msgs, err = AnthropicMessages(r.Body); err != nil {
			return 0, err
		}
	} else {
		var body struct {
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			return 0, err
		}
		var err error
		if msgs, err = render.DecodeOpenAIMessages(body.Messages); err != nil {
			return 0, err
		}
	}
	cost := agentmem.RequestTokens(c, msgs)
	switch {
	case cost > budget:
		return cost, fmt.Errorf("the messages cost %d tokens, over the budget of %d", cost, budget)
	case len(msgs) < 2 || msgs[0].Role != agentmem.RoleSystem || msgs[0].Text() != system:
		return cost, fmt.Errorf("the system prompt was not kept first: %.300s", r.Body)
	case task != "" && (msgs[1].Role != agentmem.RoleUser || len(msgs[1].Content) == 0 || msgs[1].Content[0].Text != task):
		// (Anthropic's format merges the task with the next user
		// message when the turns between them were dropped.)
		return cost, fmt.Errorf("the first task was not kept second: %.300s", r.Body)
	}
	if err := render.Validate(format, msgs); err != nil {
		return cost, err
	}
	return cost, nil
}

// AnthropicMessages converts an Anthropic request body's system and
// messages back to agentmem messages in the Anthropic format's shape: a
// system message, then text, tool_use and tool_result parts.
// agentmem.RequestTokens counts their cost as the proxy counted the
// context it rendered.
func AnthropicMessages(body []byte) ([]agentmem.Message, error) {
	var req struct {
		System   string `json:"system"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []anthropicBlock `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	var out []agentmem.Message
	if req.System != "" {
		out = append(out, agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text(req.System)})
	}
	for _, m := range req.Messages {
		msg := agentmem.Message{Role: agentmem.Role(m.Role)}
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				msg.Content = append(msg.Content, agentmem.TextPart(b.Text))
			case "tool_use":
				msg.Content = append(msg.Content, agentmem.Part{Type: agentmem.PartToolUse, ToolCall: &agentmem.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)}})
			case "image":
				img, err := b.image()
				if err != nil {
					return nil, err
				}
				msg.Content = append(msg.Content, agentmem.ImagePart(img))
			case "tool_result":
				res := agentmem.Part{Type: agentmem.PartToolResult, ToolCallID: b.ToolUseID, IsError: b.IsError}
				if err := json.Unmarshal(b.Content, &res.Text); err != nil && len(b.Content) > 0 {
					var inner []anthropicBlock
					if err := json.Unmarshal(b.Content, &inner); err != nil {
						return nil, fmt.Errorf("a tool_result's content: %w", err)
					}
					for _, ib := range inner {
						switch ib.Type {
						case "text":
							if res.Text != "" {
								res.Text += "\n"
							}
							res.Text += ib.Text
						case "image":
							img, err := ib.image()
							if err != nil {
								return nil, err
							}
							res.Images = append(res.Images, img)
						default:
							return nil, fmt.Errorf("unexpected block %q in a tool_result", ib.Type)
						}
					}
				}
				msg.Content = append(msg.Content, res)
			default:
				return nil, fmt.Errorf("unexpected block %q", b.Type)
			}
		}
		out = append(out, msg)
	}
	return out, nil
}

// anthropicBlock is a content block of an Anthropic request.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // a string, or text and image blocks
	IsError   bool            `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		URL       string `json:"url"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// image returns an image block's image.
func (b anthropicBlock) image() (agentmem.Image, error) {
	switch {
	case b.Source == nil:
		return agentmem.Image{}, fmt.Errorf("an image block without a source")
	case b.Source.Type == "url":
		return agentmem.Image{URL: b.Source.URL}, nil
	}
	data, err := base64.StdEncoding.DecodeString(b.Source.Data)
	if err != nil {
		return agentmem.Image{}, fmt.Errorf("an image block's data: %w", err)
	}
	return agentmem.Image{MediaType: b.Source.MediaType, Data: data}, nil
}
