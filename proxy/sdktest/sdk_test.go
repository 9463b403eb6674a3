package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/shared"
)

const (
	systemPrompt = "You are a careful research agent. Use the lookup tool."
	firstTask    = "Find out everything about the history of the transistor."
	budget       = 3000
	requests     = 30
)

// bigResult is a large tool result.
func bigResult(n int) string {
	return strings.Repeat(fmt.Sprintf("Result line %d of the lookup: some long text about transistors. ", n), 60)
}

func start(t *testing.T) *proxytest.Env {
	t.Helper()
	e, err := proxytest.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// check verifies every request the upstream received (with the first
// task kept second unless task is empty: see proxytest.Check) and that
// the session holds the client's history exactly once (want: the history
// as canonical messages).
func check(t *testing.T, e *proxytest.Env, session, task string, want []agentmem.Message) {
	t.Helper()
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.Upstream.Received()
	if len(rec) != requests {
		t.Fatalf("the upstream received %d requests, want %d", len(rec), requests)
	}
	for n, r := range rec {
		if _, err := proxytest.Check(r, budget, c, systemPrompt, task); err != nil {
			t.Errorf("request %d: %v", n, err)
		}
	}
	held, err := e.Held(context.Background(), "", session)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(render.OpenAIRequest(held))
	exp, _ := json.Marshal(render.OpenAIRequest(want))
	if string(got) != string(exp) {
		t.Errorf("the session holds\n%s\nthe client's history is\n%s", got, exp)
	}
}

// TestOpenAIGo: the official Go SDK of OpenAI, unmodified, runs a
// 30-request tool-using conversation through agentmem, resending its
// whole history each time, streamed and not, in a session that pins its
// first task (X-Agentmem-Pinning, a JSON header the SDK passes as it is).
func TestOpenAIGo(t *testing.T) {
	e := start(t)
	const session = "openai-go"
	client := openai.NewClient(option.WithBaseURL(e.Server.URL+"/v1"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0),
		option.WithHeader(proxy.HeaderSession, session), option.WithHeader(proxy.HeaderBudget, strconv.Itoa(budget)),
		option.WithHeader(proxy.HeaderPinning, `{"system_prompts":true,"first_task":true,"summary":true}`))
	params := openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(systemPrompt), openai.UserMessage(firstTask)},
		Tools: []openai.ChatCompletionToolParam{{Function: shared.FunctionDefinitionParam{Name: "lookup",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}}}}},
	}
	ctx := context.Background()
	for n := range requests {
		var msg openai.ChatCompletionMessage
		if n%2 == 1 {
			stream := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("request %d: %v", n, err)
			}
			msg = acc.Choices[0].Message
		} else {
			comp, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatalf("request %d: %v", n, err)
			}
			msg = comp.Choices[0].Message
		}
		if want := e.Upstream.Replies()[n].Text; msg.Content != want {
			t.Fatalf("request %d: the client got %q, the upstream said %q", n, msg.Content, want)
		}
		params.Messages = append(params.Messages, msg.ToParam())
		if len(msg.ToolCalls) > 0 {
			for _, tc := range msg.ToolCalls {
				params.Messages = append(params.Messages, openai.ToolMessage(bigResult(n), tc.ID))
			}
		} else {
			params.Messages = append(params.Messages, openai.UserMessage(fmt.Sprintf("Good. Now question %d.", n)))
		}
	}
	body, err := json.Marshal(params.Messages[:len(params.Messages)-1])
	if err != nil {
		t.Fatal(err)
	}
	want, err := render.DecodeOpenAIMessages(body)
	if err != nil {
		t.Fatal(err)
	}
	check(t, e, session, firstTask, want)
}

// TestAnthropicGo: the official Go SDK of Anthropic, likewise, in a
// session of the proxy's default pinning (a chat's: the first question
// need not be kept).
func TestAnthropicGo(t *testing.T) {
	e := start(t)
	const session = "anthropic-go"
	client := anthropic.NewClient(aoption.WithBaseURL(e.Server.URL), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0),
		aoption.WithHeader(proxy.HeaderSession, session), aoption.WithHeader(proxy.HeaderBudget, strconv.Itoa(budget)))
	params := anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 1024,
		System:   []anthropic.TextBlockParam{{Text: systemPrompt}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(firstTask))},
		Tools:    []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: map[string]any{"query": map[string]any{"type": "string"}}}, "lookup")},
	}
	ctx := context.Background()
	for n := range requests {
		var msg anthropic.Message
		if n%2 == 0 {
			stream := client.Messages.NewStreaming(ctx, params)
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("request %d: %v", n, err)
			}
		} else {
			m, err := client.Messages.New(ctx, params)
			if err != nil {
				t.Fatalf("request %d: %v", n, err)
			}
			msg = *m
		}
		var text strings.Builder
		var results []anthropic.ContentBlockParamUnion
		for _, b := range msg.Content {
			switch b.Type {
			case "text":
				text.WriteString(b.Text)
			case "tool_use":
				results = append(results, anthropic.NewToolResultBlock(b.ID, bigResult(n), false))
			}
		}
		if want := e.Upstream.Replies()[n].Text; text.String() != want {
			t.Fatalf("request %d: the client got %q, the upstream said %q", n, text.String(), want)
		}
		params.Messages = append(params.Messages, msg.ToParam())
		if len(results) > 0 {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
		} else {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("Now question %d.", n))))
		}
	}
	body, err := json.Marshal(map[string]any{"system": params.System, "messages": params.Messages[:len(params.Messages)-1]})
	if err != nil {
		t.Fatal(err)
	}
	want, err := proxy.DecodeAnthropicRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	check(t, e, session, "", want)
}
