package facts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/llm"
)

// chatRequest is what the test server reads of a chat-completions request.
type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []llm.Message   `json:"messages"`
	ResponseFormat json.RawMessage `json:"response_format"`
	Temperature    *float64        `json:"temperature"`
}

// chatServer is a local OpenAI-compatible chat-completions endpoint whose
// answers a test computes from each request.
type chatServer struct {
	t      *testing.T
	mu     sync.Mutex
	reqs   []chatRequest
	answer func(n int, req chatRequest) (status int, content string)
}

// newChatServer starts a server and returns a real llm.Client for it.
func newChatServer(t *testing.T, answer func(n int, req chatRequest) (int, string)) (*llm.Client, *chatServer) {
	t.Helper()
	s := &chatServer{t: t, answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "test-model", MaxRetries: -1, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

func (s *chatServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	n := len(s.reqs)
	s.mu.Unlock()
	status, content := s.answer(n, req)
	w.Header().Set("Content-Type", "application/json")
	if status != http.StatusOK {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, content)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprint("chatcmpl-", n), "model": req.Model, "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
}

func (s *chatServer) requests() []chatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]chatRequest(nil), s.reqs...)
}

// extractionInput decodes the user message LLMExtractor sends.
func extractionInput(t *testing.T, req chatRequest) (known []wireFact, turn []wireMessage) {
	var in struct {
		Known []wireFact    `json:"known_facts"`
		Turn  []wireMessage `json:"turn"`
	}
	if len(req.Messages) < 2 {
		t.Errorf("extraction request has %d messages", len(req.Messages))
		return nil, nil
	}
	if err := json.Unmarshal([]byte(req.Messages[1].Content.String()), &in); err != nil {
		t.Errorf("extraction input is not JSON: %v", err)
	}
	return in.Known, in.Turn
}

// idOf returns the short id of the known fact with the text.
func idOf(known []wireFact, text string) string {
	for _, k := range known {
		if k.Text == text {
			return k.ID
		}
	}
	return "missing"
}

func TestLLMExtractorEndToEnd(t *testing.T) {
	ctx := context.Background()
	now := t0
	mem := New(NewMemStore(), Options{Clock: func() time.Time { return now }})
	berlin, err := mem.Remember(ctx, RememberRequest{UserID: "alice", Text: "Lives in Berlin."})
	if err != nil {
		t.Fatal(err)
	}
	tea, err := mem.Remember(ctx, RememberRequest{UserID: "alice", Text: "Drinks green tea."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Remember(ctx, RememberRequest{UserID: "bob", Text: "Lives in Rome."}); err != nil {
		t.Fatal(err)
	}
	client, srv := newChatServer(t, func(_ int, req chatRequest) (int, string) {
		known, turn := extractionInput(t, req)
		if len(turn) != 2 || turn[0].Role != "user" || !strings.Contains(turn[0].Content, "Paris") {
			t.Errorf("turn = %+v", turn)
		}
		// A model reads the ids it was shown; it never sees the real ones.
		return http.StatusOK, fmt.Sprintf("```json\n{\"decisions\":[{\"action\":\"supersede\",\"id\":%q,\"text\":\"Lives in Paris.\",\"confidence\":0.9},"+
			"{\"action\":\"reinforce\",\"id\":%q},{\"action\":\"add\",\"text\":\"Is vegetarian.\"},{\"action\":\"ignore\"}]}\n```",
			idOf(known, "Lives in Berlin."), idOf(known, "Drinks green tea."))
	})
	now = now.Add(time.Hour)
	ex, err := mem.Extract(ctx, &LLMExtractor{Client: client}, Turn{
		UserID: "alice", Source: Source{SessionID: "s1", StepSeq: 4, Agent: "assistant"},
		Messages: []agentmem.Message{
			{Role: agentmem.RoleUser, Content: agentmem.Text("I moved to Paris last month! Still on green tea, and I've gone vegetarian.")},
			{Role: agentmem.RoleAssistant, Content: agentmem.Text("Congratulations on the move!")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if string(reqs[0].ResponseFormat) != `{"type":"json_object"}` || reqs[0].Temperature == nil || *reqs[0].Temperature != 0 ||
		!strings.Contains(reqs[0].Messages[0].Content.String(), string(DecisionSchema)) {
		t.Fatalf("request = %+v", reqs[0])
	}
	if known, _ := extractionInput(t, reqs[0]); len(known) != 2 {
		t.Fatalf("the extractor was shown %d facts, want alice's 2 (never bob's): %+v", len(known), known)
	}
	want := []Outcome{OutcomeSuperseded, OutcomeReinforced, OutcomeAdded}
	if len(ex.Results) != len(want) {
		t.Fatalf("results = %+v", ex.Results)
	}
	for i, o := range want {
		if ex.Results[i].Outcome != o {
			t.Fatalf("result %d = %s, want %s", i, ex.Results[i].Outcome, o)
		}
	}
	if ex.Decisions[0].FactID != berlin.Fact.ID || ex.Decisions[1].FactID != tea.Fact.ID {
		t.Fatalf("decisions did not map the short ids back: %+v", ex.Decisions)
	}
	h, err := mem.History(ctx, "", berlin.Fact.ID)
	if err != nil || len(h) != 2 || h[1].Text != "Lives in Paris." || h[1].Source.SessionID != "s1" || h[1].Confidence != 0.9 {
		t.Fatalf("history = %+v, %v", h, err)
	}
	valid, _ := mem.List(ctx, "", "alice", false)
	if len(valid) != 3 {
		t.Fatalf("valid facts = %+v, want tea, Paris, vegetarian", valid)
	}
}

func TestLLMExtractorRetriesOnce(t *testing.T) {
	ctx := context.Background()
	mem := New(NewMemStore(), Options{Clock: func() time.Time { return t0 }})
	client, srv := newChatServer(t, func(n int, req chatRequest) (int, string) {
		if n == 1 {
			return http.StatusOK, `{"decisions":[{"action":"reinforce","id":"f7"}]}`
		}
		return http.StatusOK, `{"decisions":[{"action":"add","text":"Speaks Japanese."}]}`
	})
	ex, err := mem.Extract(ctx, &LLMExtractor{Client: client}, Turn{UserID: "u", Messages: []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("日本語を話します")}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Results) != 1 || ex.Results[0].Fact.Text != "Speaks Japanese." {
		t.Fatalf("results = %+v", ex.Results)
	}
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	retry := reqs[1].Messages
	if len(retry) != 4 || retry[2].Role != "assistant" || !strings.Contains(retry[2].Content.String(), `"f7"`) ||
		!strings.Contains(retry[3].Content.String(), "not the id of a known fact") {
		t.Fatalf("retry messages = %+v", retry)
	}
}

func TestLLMExtractorGivesUp(t *testing.T) {
	ctx := context.Background()
	mem := New(NewMemStore(), Options{})
	bad := []string{
		`Sure! Here are the facts: the user likes cats.`,
		`{"decisions":[{"action":"add","text":""}]}`,
	}
	client, srv := newChatServer(t, func(n int, _ chatRequest) (int, string) { return http.StatusOK, bad[n-1] })
	_, err := mem.Extract(ctx, &LLMExtractor{Client: client}, Turn{UserID: "u", Messages: []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("I like cats")}}})
	var ee *ExtractionError
	if !errors.As(err, &ee) || !errors.Is(err, ErrExtraction) || !errors.Is(err, agentmem.ErrInvalid) || ee.Attempts != 2 || !strings.Contains(ee.Output, `"text":""`) {
		t.Fatalf("err = %v (%+v), want an *ExtractionError after 2 attempts", err, ee)
	}
	if n := len(srv.requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if fs, _ := mem.List(ctx, "", "u", true); len(fs) != 0 {
		t.Fatalf("a failed extraction wrote %+v", fs)
	}
}

func TestLLMExtractorAPIError(t *testing.T) {
	client, srv := newChatServer(t, func(int, chatRequest) (int, string) { return http.StatusBadRequest, "model not loaded" })
	e := &LLMExtractor{Client: client}
	_, err := e.Extract(context.Background(), ExtractRequest{Messages: []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text("hi")}}})
	var ee *ExtractionError
	var api *llm.APIError
	if !errors.As(err, &ee) || !errors.As(err, &api) || api.StatusCode != 400 || ee.Attempts != 1 {
		t.Fatalf("err = %v, want an *ExtractionError wrapping the API error", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Fatalf("%d requests, want 1: a 400 is not retried", n)
	}
}

func TestDecodeDecisions(t *testing.T) {
	ids := map[string]string{"f1": "real-1", "f2": "real-2"}
	good := []struct {
		in   string
		want []Decision
	}{
		{`{"decisions":[]}`, nil},
		{` {"decisions":[{"action":"ignore"}]} `, nil},
		{`{"decisions":[{"action":"add","text":"  Likes jazz. ","confidence":0.4}]}`, []Decision{{Op: OpAdd, Text: "Likes jazz.", Confidence: 0.4}}},
		{"```json\n{\"decisions\":[{\"action\":\"reinforce\",\"id\":\"f2\",\"text\":\"restated\"}]}\n```", []Decision{{Op: OpReinforce, FactID: "real-2"}}},
		{`{"decisions":[{"action":"supersede","id":"f1","text":"Lives in Oslo."}]}`, []Decision{{Op: OpSupersede, FactID: "real-1", Text: "Lives in Oslo."}}},
	}
	for _, c := range good {
		got, err := decodeDecisions(c.in, ids, 4)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("decode(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	bad := []string{
		``, `null`, `[]`, `{}`, `{"decisions":null}`, `{"decisions":{}}`,
		`{"decisions":[]} trailing`, `{"decisions":[],"notes":"x"}`,
		`{"decisions":[{"action":"delete","id":"f1"}]}`,
		`{"decisions":[{"text":"no action"}]}`,
		`{"decisions":[{"action":"add"}]}`,
		`{"decisions":[{"action":"add","text":"   "}]}`,
		`{"decisions":[{"action":"add","text":"x","id":"f1"}]}`,
		`{"decisions":[{"action":"reinforce","id":"f3"}]}`,
		`{"decisions":[{"action":"reinforce"}]}`,
		`{"decisions":[{"action":"supersede","id":"f1"}]}`,
		`{"decisions":[{"action":"supersede","id":"f1","text":"a"},{"action":"supersede","id":"f1","text":"b"}]}`,
		`{"decisions":[{"action":"add","text":"x","confidence":1.5}]}`,
		`{"decisions":[{"action":"add","text":"x","confidence":"high"}]}`,
		`{"decisions":[{"action":"add","text":"x","why":"y"}]}`,
		`{"decisions":[{"action":"add","text":"a"},{"action":"add","text":"b"},{"action":"add","text":"c"},{"action":"add","text":"d"},{"action":"add","text":"e"}]}`,
		`{"decisions":[{"action":"add","text":"` + strings.Repeat("x", MaxTextBytes+1) + `"}]}`,
	}
	for _, in := range bad {
		if got, err := decodeDecisions(in, ids, 4); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("decode(%.80q) = %+v, %v; want ErrInvalid", in, got, err)
		}
	}
}
