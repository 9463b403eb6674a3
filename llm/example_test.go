package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/llm"
)

// A fake OpenAI-compatible server: it asks for a tool call first, then
// answers with the tool's result.
func fakeServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []llm.Message `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			_, _ = io.WriteString(w, `{"id":"c2","model":"fake","choices":[{"index":0,"finish_reason":"stop",
				"message":{"role":"assistant","content":"It is 21°C in Paris."}}],
				"usage":{"prompt_tokens":40,"completion_tokens":8,"total_tokens":48}}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"c1","model":"fake","choices":[{"index":0,"finish_reason":"tool_calls",
			"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
			"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}]}`)
	}))
}

func Example() {
	srv := fakeServer()
	defer srv.Close()

	client, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "fake"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	weather := llm.NewTool("get_weather", "Current weather for a city.",
		json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`))
	messages := []llm.Message{{Role: "user", Content: llm.TextContent("Weather in Paris?")}}

	for {
		resp, err := client.Chat(ctx, llm.ChatRequest{Messages: messages, Tools: []llm.Tool{weather}})
		if err != nil {
			log.Fatal(err)
		}
		messages = append(messages, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			fmt.Println(resp.Message.Content.String())
			fmt.Println("tokens:", resp.Usage.TotalTokens)
			return
		}
		for _, call := range resp.Message.ToolCalls {
			fmt.Printf("call %s(%s)\n", call.Function.Name, call.Function.Arguments)
			messages = append(messages, llm.Message{Role: "tool", ToolCallID: call.ID, Content: llm.TextContent("21°C, sunny")})
		}
	}
	// Output:
	// call get_weather({"city":"Paris"})
	// It is 21°C in Paris.
	// tokens: 48
}

func ExampleClient_Embed() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		// Servers may list embeddings in any order; Embed sorts by index.
		_, _ = io.WriteString(w, `{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}]}`)
	}))
	defer srv.Close()

	client, err := llm.New(llm.Config{BaseURL: srv.URL, EmbeddingModel: "fake-embed"})
	if err != nil {
		log.Fatal(err)
	}
	vecs, err := client.Embed(context.Background(), []string{"cat", "dog"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(vecs)
	// Output: [[1 0] [0 1]]
}

func ExampleAPIError() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer srv.Close()

	client, _ := llm.New(llm.Config{BaseURL: srv.URL, Model: "m", APIKey: "wrong"})
	_, err := client.Chat(context.Background(), llm.ChatRequest{
		Messages: []llm.Message{{Role: "user", Content: llm.TextContent("hi")}},
	})
	var apiErr *llm.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code)
	}
	fmt.Println(err)
	// Output:
	// 401 invalid_api_key
	// llm: API error (HTTP 401, type invalid_request_error, code invalid_api_key): Incorrect API key provided
}

// A memory's context goes to the client with FromAgentmem, and the model's
// reply comes back with ToAgentmem, ready for Memory.AddMessage.
func ExampleFromAgentmem() {
	view := []agentmem.Message{
		{Role: agentmem.RoleSystem, Content: agentmem.Text("Be brief.")},
		{Role: agentmem.RoleUser, Content: agentmem.Text("Weather in Oslo?")},
	}
	body, _ := json.Marshal(llm.FromAgentmem(view))
	fmt.Println(string(body))

	reply := llm.Message{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "c1", Function: llm.FunctionCall{Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}}
	msgs, err := llm.ToAgentmem([]llm.Message{reply})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(msgs[0].Role, msgs[0].ToolCalls[0].Name, msgs[0].ToolCalls[0].Arguments)
	// Output:
	// [{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in Oslo?"}]
	// assistant get_weather {"city":"Oslo"}
}
