package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/render"
)

// openAI is OpenAI's Chat Completions API.
type openAI struct{}

func (openAI) name() string                { return render.NameOpenAI }
func (openAI) upstream(c *Config) Upstream { return c.OpenAI }
func (openAI) path() string                { return "/chat/completions" }
func (openAI) route() string               { return "/v1/chat/completions" }
func (openAI) flag() string                { return "--upstream-base-url" }
func (openAI) stream(bu *budget) accumulator {
	return &openAIStream{bu: bu, calls: map[int]*streamCall{}}
}
func (openAI) outputTokens(body map[string]json.RawMessage) int {
	for _, k := range []string{"max_completion_tokens", "max_tokens"} {
		var n int
		if json.Unmarshal(body[k], &n) == nil && n > 0 {
			return n
		}
	}
	return DefaultOutputTokens
}

func (openAI) decode(body map[string]json.RawMessage) ([]agentmem.Message, error) {
	raw, ok := body["messages"]
	if !ok || isNull(raw) {
		return nil, invalid("messages", "is required")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, invalid("messages", "must be an array of messages")
	}
	msgs, err := openAI{}.decodeMessages(raws)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, invalid("messages", "is empty")
	}
	return msgs, nil
}

func (openAI) systemMember() bool { return false }

func (openAI) decodeMessages(raws []json.RawMessage) ([]agentmem.Message, error) {
	clean := make([]json.RawMessage, len(raws))
	for i, r := range raws {
		clean[i] = recordedFields(r)
	}
	return render.DecodeOpenAIMessages(joinArray(clean))
}

// messageFields are the members of an OpenAI message the proxy records;
// callFields and functionFields those of a tool call and its function.
var (
	messageFields  = []string{"role", "content", "name", "tool_calls", "tool_call_id", "refusal"}
	callFields     = []string{"id", "type", "function"}
	functionFields = []string{"name", "arguments"}
)

// recordedFields returns a message with only the members the proxy
// records. A client sends back the messages its SDK returned, which carry
// more: the OpenAI SDK's parsed and parsed_arguments, annotations, audio,
// a provider's reasoning_content. The messages sent upstream are the
// session's context rendered anew, so those members are dropped. A message
// that is not an object is returned as it is, for the decoder to refuse.
func recordedFields(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return raw
	}
	keep(m, messageFields)
	if tc, ok := m["tool_calls"]; ok {
		var calls []map[string]json.RawMessage
		if json.Unmarshal(tc, &calls) == nil {
			for _, c := range calls {
				keep(c, callFields)
				var fn map[string]json.RawMessage
				if f, ok := c["function"]; ok && json.Unmarshal(f, &fn) == nil && fn != nil {
					keep(fn, functionFields)
					c["function"], _ = json.Marshal(fn)
				}
			}
			m["tool_calls"], _ = json.Marshal(calls)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// keep deletes the members of m not in names.
func keep(m map[string]json.RawMessage, names []string) {
	for k := range m {
		if !slices.Contains(names, k) {
			delete(m, k)
		}
	}
}

// joinArray makes a JSON array of raw elements.
func joinArray(raws []json.RawMessage) []byte {
	n := 2
	for _, r := range raws {
		n += len(r) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, r := range raws {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	return append(b, ']')
}

func (openAI) encode(body map[string]json.RawMessage, msgs []agentmem.Message) error {
	b, err := json.Marshal(render.OpenAIRequest(msgs))
	if err != nil {
		return err
	}
	body["messages"] = b
	return nil
}

// credentials: the configured key wins; otherwise the caller's
// Authorization is forwarded, unless it was an agentmem API key (which
// never leaves agentmem).
func (openAI) credentials(out, in *http.Request, key string) {
	if key != "" {
		out.Header.Set("Authorization", "Bearer "+key)
		return
	}
	if a := in.Header.Get("Authorization"); a != "" && !agentmemKey(in) {
		out.Header.Set("Authorization", a)
	}
}

// agentmemKey reports whether an agentmem API key authenticated the
// request (its Authorization header).
func agentmemKey(r *http.Request) bool {
	id, ok := auth.FromContext(r.Context())
	return ok && !id.Anonymous()
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// openAIReplyMessage is the assistant message of a completion, as much of
// it as is recorded.
type openAIReplyMessage struct {
	Content   json.RawMessage `json:"content"`
	Refusal   *string         `json:"refusal"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// reply returns the message of the answer's first choice.
func (openAI) reply(body []byte) (agentmem.Message, bool) {
	var resp struct {
		Choices []struct {
			Index   int                `json:"index"`
			Message openAIReplyMessage `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &resp) != nil {
		return agentmem.Message{}, false
	}
	for _, c := range resp.Choices {
		if c.Index != 0 {
			continue
		}
		m := c.Message
		text := contentText(m.Content)
		if text == "" && m.Refusal != nil {
			text = *m.Refusal
		}
		var calls []agentmem.ToolCall
		for _, tc := range m.ToolCalls {
			calls = append(calls, agentmem.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		return assistantMessage(text, calls)
	}
	return agentmem.Message{}, false
}

// contentText returns the text of an OpenAI content value: a string, or
// the text parts of an array.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// assistantMessage is a reply to record, or false when it says nothing.
func assistantMessage(text string, calls []agentmem.ToolCall) (agentmem.Message, bool) {
	if text == "" && len(calls) == 0 {
		return agentmem.Message{}, false
	}
	m := agentmem.Message{Role: agentmem.RoleAssistant, ToolCalls: calls}
	if text != "" {
		m.Content = agentmem.Text(text)
	}
	if m.Validate() != nil {
		return agentmem.Message{}, false
	}
	return m, true
}

// openAIStream accumulates a streamed completion's first choice, as much
// of it as its budget holds.
type openAIStream struct {
	bu            *budget
	text, refusal []byte
	calls         map[int]*streamCall
	finished      bool
}

// streamCall is a tool call being streamed.
type streamCall struct {
	id, name string
	args     []byte
}

func (s *openAIStream) event(_ string, data []byte) bool {
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		return true
	}
	var chunk struct {
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Content   *string `json:"content"`
				Refusal   *string `json:"refusal"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	if len(data) == 0 || json.Unmarshal(data, &chunk) != nil {
		return false
	}
	for _, c := range chunk.Choices {
		if c.Index != 0 {
			continue
		}
		if c.Delta.Content != nil {
			s.text = s.bu.add(s.text, *c.Delta.Content)
		}
		if c.Delta.Refusal != nil {
			s.refusal = s.bu.add(s.refusal, *c.Delta.Refusal)
		}
		for _, tc := range c.Delta.ToolCalls {
			sc := s.calls[tc.Index]
			if sc == nil {
				// A call begins with its ID; one the budget cannot
				// hold is left out, its later deltas with it.
				if tc.ID == "" || !s.bu.short(tc.ID, tc.Function.Name) {
					continue
				}
				sc = &streamCall{id: tc.ID}
				s.calls[tc.Index] = sc
			}
			if tc.Function.Name != "" && len(tc.Function.Name) <= shortString {
				sc.name = tc.Function.Name
			}
			sc.args = s.bu.add(sc.args, tc.Function.Arguments)
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			s.finished = true
		}
	}
	return false
}

func (s *openAIStream) missed()         { s.bu.miss() }
func (s *openAIStream) truncated() bool { return s.bu.cut }
func (s *openAIStream) held() int       { return s.bu.held() }

func (s *openAIStream) reply(bool) (agentmem.Message, bool) {
	if !s.finished {
		return agentmem.Message{}, false
	}
	text := string(s.text)
	if text == "" {
		text = string(s.refusal)
	}
	idx := make([]int, 0, len(s.calls))
	for i := range s.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var calls []agentmem.ToolCall
	for _, i := range idx {
		c := s.calls[i]
		if c.name == "" {
			s.bu.cut = true
			continue
		}
		calls = append(calls, agentmem.ToolCall{ID: c.id, Name: c.name, Arguments: string(c.args)})
	}
	return assistantMessage(text, calls)
}
