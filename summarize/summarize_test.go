package summarize_test

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

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/summarize"
	"github.com/agentmem/agentmem/tokenizer"
)

// fakeModel is an OpenAI-compatible chat endpoint that records the
// requests it gets and answers with reply(request).
type fakeModel struct {
	mu       sync.Mutex
	requests []map[string]any
	reply    func(user string) (int, string)
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, body)
	f.mu.Unlock()
	msgs := body["messages"].([]any)
	user := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	status, text := f.reply(user)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if status != 200 {
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, text)
		return
	}
	fmt.Fprintf(w, `{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, text)
}

func client(t *testing.T, h http.Handler) *llm.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "test-model", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func steps() []agentmem.Step {
	return []agentmem.Step{
		&agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 2}, ModelOutput: "read the config",
			ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"cfg.yaml"}`}},
			Results:   []agentmem.ToolResult{{CallID: "c1", Content: "port: 8080\nhost: db.internal"}}},
		&agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 3}, Error: "connection refused to db.internal:5432"},
		&agentmem.ScratchpadStep{StepInfo: agentmem.StepInfo{Number: 4}, Content: "the db host is wrong in staging"},
	}
}

func request(prev string, s []agentmem.Step) agentmem.SummaryRequest {
	var msgs []agentmem.Message
	for _, st := range s {
		msgs = append(msgs, st.Messages(agentmem.RenderOptions{SummaryMode: true})...)
	}
	return agentmem.SummaryRequest{Previous: prev, Steps: s, Messages: msgs, MaxTokens: 200}
}

func TestLLMSummarizerSendsTranscript(t *testing.T) {
	fm := &fakeModel{reply: func(string) (int, string) { return 200, "  The agent found the DB host is wrong.  " }}
	s := summarize.NewLLM(client(t, fm), summarize.LLMOptions{})
	got, err := s.Summarize(context.Background(), request("Earlier: cloned the repo.", steps()))
	if err != nil {
		t.Fatal(err)
	}
	if got != "The agent found the DB host is wrong." {
		t.Fatalf("summary = %q", got)
	}
	req := fm.requests[0]
	if req["model"] != "test-model" {
		t.Fatalf("model = %v", req["model"])
	}
	msgs := req["messages"].([]any)
	if msgs[0].(map[string]any)["role"] != "system" || !strings.Contains(msgs[0].(map[string]any)["content"].(string), "working memory") {
		t.Fatalf("system prompt = %v", msgs[0])
	}
	user := msgs[1].(map[string]any)["content"].(string)
	for _, want := range []string{"Earlier: cloned the repo.", `→ read_file({"path":"cfg.yaml"})`, "← read_file: port: 8080", "connection refused", "Scratchpad noted", "under 200 tokens"} {
		if !strings.Contains(user, want) {
			t.Errorf("prompt lacks %q:\n%s", want, user)
		}
	}
}

func TestLLMSummarizerCondenseAndErrors(t *testing.T) {
	fm := &fakeModel{reply: func(user string) (int, string) {
		if strings.Contains(user, "more concisely") {
			return 200, "short"
		}
		return 200, ""
	}}
	s := summarize.NewLLM(client(t, fm), summarize.LLMOptions{})
	got, err := s.Summarize(context.Background(), agentmem.SummaryRequest{Previous: "a long summary", MaxTokens: 10, Condense: true})
	if err != nil || got != "short" {
		t.Fatalf("condense = %q, %v", got, err)
	}
	if _, err := s.Summarize(context.Background(), request("", steps())); !errors.Is(err, summarize.ErrEmptySummary) {
		t.Fatalf("empty answer: %v", err)
	}
	bad := summarize.NewLLM(client(t, &fakeModel{reply: func(string) (int, string) { return 400, "bad model" }}), summarize.LLMOptions{})
	_, err = bad.Summarize(context.Background(), request("", steps()))
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("API error: %v", err)
	}
}

// TestLLMSummarizationEndToEnd drives a memory whose policy summarizes
// through the real client against a local server: the summary replaces
// old steps, keeps recent ones, and the second summary extends the first.
func TestLLMSummarizationEndToEnd(t *testing.T) {
	var n int
	fm := &fakeModel{reply: func(user string) (int, string) {
		n++
		if n == 2 && !strings.Contains(user, "summary #1") {
			return 200, "second summary did not see the first"
		}
		return 200, fmt.Sprintf("summary #%d", n)
	}}
	sum := summarize.NewLLM(client(t, fm), summarize.LLMOptions{})
	mem := agentmem.New(agentmem.Options{
		Counter: tokenizer.NewHeuristic(),
		Policy:  &agentmem.Policy{MaxSteps: 10, Strategy: agentmem.Summarize(sum, agentmem.SummarizeOptions{KeepRecent: 3, Trigger: 6})},
	})
	ctx := context.Background()
	if err := mem.AddMessage(ctx, agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("sys")}); err != nil {
		t.Fatal(err)
	}
	_ = mem.AddUser(ctx, "the task")
	for i := range 20 {
		id := fmt.Sprintf("c%d", i)
		_ = mem.AddAssistant(ctx, agentmem.Message{Content: agentmem.Text("step"), ToolCalls: []agentmem.ToolCall{{ID: id, Name: "f", Arguments: "{}"}}})
		if err := mem.AddToolResult(ctx, id, "result", false); err != nil {
			t.Fatal(err)
		}
	}
	if n < 2 {
		t.Fatalf("summarizer called %d times", n)
	}
	if got := mem.Summary(); got != fmt.Sprintf("summary #%d", n) {
		t.Fatalf("Summary() = %q", got)
	}
	steps := mem.Steps()
	if steps[0].Kind() != agentmem.KindSystemPrompt || steps[1].Kind() != agentmem.KindTask || steps[2].Kind() != agentmem.KindSummary {
		t.Fatalf("working set:\n%s", mem.Visualize())
	}
	if mem.Len() > 10 {
		t.Fatalf("policy not held: %d steps", mem.Len())
	}
	cov := steps[2].(*agentmem.SummaryStep).Covers
	if cov[0].From != 2 {
		t.Fatalf("summary covers %v, want from step 2", cov)
	}
}

func TestExtractiveIsBoundedAndKeepsWhatMatters(t *testing.T) {
	e := summarize.Extractive{}
	full, err := e.Summarize(context.Background(), request("#1 task: deploy the service", steps()))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#1 task: deploy the service", `#2 read_file {"path":"cfg.yaml"} → port: 8080 host: db.internal`, "#3 error: connection refused", "#4 note: the db host is wrong"} {
		if !strings.Contains(full, want) {
			t.Errorf("digest lacks %q:\n%s", want, full)
		}
	}
	var many []agentmem.Step
	for i := range 200 {
		id := fmt.Sprint(i)
		many = append(many, &agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: i}, ToolCalls: []agentmem.ToolCall{{ID: id, Name: "grep", Arguments: "{}"}}, Results: []agentmem.ToolResult{{CallID: id, Content: strings.Repeat("match ", 30)}}})
	}
	many = append(many, &agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 200}, Error: "disk full"})
	req := request("", many)
	req.MaxTokens = 150
	short, _ := e.Summarize(context.Background(), req)
	if c := tokenizer.NewHeuristic().Count(short); c > 150+20 {
		t.Fatalf("digest costs %d tokens, want about 150", c)
	}
	if !strings.Contains(short, "#200 error: disk full") {
		t.Fatalf("the error was dropped before plain tool calls:\n%s", short)
	}
}

func ExampleExtractive() {
	s := summarize.Extractive{}
	text, _ := s.Summarize(context.Background(), agentmem.SummaryRequest{
		Steps: []agentmem.Step{
			&agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 5},
				ToolCalls: []agentmem.ToolCall{{ID: "a", Name: "run_tests", Arguments: `{"pkg":"./..."}`}},
				Results:   []agentmem.ToolResult{{CallID: "a", Content: "FAIL TestLogin (0.02s)"}}},
			&agentmem.ScratchpadStep{StepInfo: agentmem.StepInfo{Number: 6}, Content: "login fails only with an empty password"},
		},
		MaxTokens: 200,
	})
	fmt.Println(text)
	// Output:
	// #5 run_tests {"pkg":"./..."} → FAIL TestLogin (0.02s)
	// #6 note: login fails only with an empty password
}

// TestLLMSummarizerSeesBothSidesOfAChat: the transcript the model is
// asked to summarize holds the assistant's replies of a chat, not only
// the user's turns (issue 13 item 1).
func TestLLMSummarizerSeesBothSidesOfAChat(t *testing.T) {
	fm := &fakeModel{reply: func(string) (int, string) { return 200, "they discussed the weather" }}
	mem := agentmem.New(agentmem.Options{Counter: tokenizer.NewHeuristic()})
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		if err := mem.AddUser(ctx, fmt.Sprintf("question %d", i)); err != nil {
			t.Fatal(err)
		}
		if err := mem.AddAssistant(ctx, agentmem.Message{Content: agentmem.Text(fmt.Sprintf("answer %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mem.Summarize(ctx, summarize.NewLLM(client(t, fm), summarize.LLMOptions{}), 1); err != nil {
		t.Fatal(err)
	}
	user := fm.requests[0]["messages"].([]any)[1].(map[string]any)["content"].(string)
	// Turn 3 is kept whole: its question is not summarized.
	want := "ASSISTANT: answer 1\n\nUSER: question 2\n\nASSISTANT: answer 2"
	if !strings.Contains(user, "<transcript>\n"+want+"\n</transcript>") {
		t.Fatalf("the model was asked to summarize:\n%s\nwant the transcript:\n%s", user, want)
	}
	if mem.Summary() != "they discussed the weather" {
		t.Fatalf("Summary() = %q", mem.Summary())
	}
}

// TestExtractiveNeverRepeats: a correction the user gave in ten turns, and
// summaries of summaries that carry it, are said once in the digest.
func TestExtractiveNeverRepeats(t *testing.T) {
	ctx := context.Background()
	mem := agentmem.New(agentmem.Options{Counter: tokenizer.NewHeuristic(), Pinning: &agentmem.ChatPinning})
	var summaries []string
	sum := agentmem.SummarizerFunc(func(ctx context.Context, req agentmem.SummaryRequest) (string, error) {
		text, err := summarize.Extractive{}.Summarize(ctx, req)
		summaries = append(summaries, text)
		return text, err
	})
	for i := range 10 {
		for _, msg := range []agentmem.Message{
			{Role: agentmem.RoleUser, Content: agentmem.Text("No, use metric units please.")},
			{Role: agentmem.RoleAssistant, Content: agentmem.Text(fmt.Sprintf("Sorry: it is %d degrees Celsius.", 10+i))},
		} {
			if err := mem.AddMessage(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
		if i%3 == 2 {
			if _, err := mem.Summarize(ctx, sum, 2); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(summaries) != 3 {
		t.Fatalf("%d summaries, want 3", len(summaries))
	}
	for _, text := range summaries {
		if n := strings.Count(text, "use metric units"); n != 1 {
			t.Fatalf("the correction is said %d times:\n%s", n, text)
		}
		seen := map[string]bool{}
		for _, l := range strings.Split(text, "\n") {
			if seen[l] {
				t.Fatalf("line %q repeated:\n%s", l, text)
			}
			seen[l] = true
		}
	}
	last := summaries[len(summaries)-1]
	if !strings.Contains(last, "#0, #2, #4") || !strings.Contains(last, "12 degrees") {
		t.Fatalf("the last summary lost what the first said:\n%s", last)
	}
}
