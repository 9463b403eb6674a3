package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"

	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/store/memstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP client (here the SDK's, over in-memory transports) creates a
// session, appends a turn with a tool call, and reads the context back.
func ExampleNew() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	srv, err := mcp.New(mcp.Config{Store: st})
	if err != nil {
		log.Fatal(err)
	}
	// Over stdio this is srv.Run(ctx, &sdk.StdioTransport{}).
	clientT, serverT := sdk.NewInMemoryTransports()
	if _, err := srv.SDK().Connect(ctx, serverT, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	callTool := func(name string, args map[string]any) string {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			log.Fatal(err)
		}
		out, _ := json.Marshal(res.StructuredContent)
		if res.IsError {
			return "error: " + res.Content[0].(*sdk.TextContent).Text
		}
		return string(out)
	}
	callTool("create_session", map[string]any{"id": "demo", "user_id": "alice"})
	fmt.Println(callTool("append", map[string]any{"session_id": "demo", "messages": []map[string]any{
		{"role": "system", "content": "You are helpful."},
		{"role": "user", "content": "What is in main.go?"},
		{"role": "assistant", "tool_calls": []map[string]any{{"id": "c1", "name": "read_file", "arguments": `{"path":"main.go"}`}}},
		{"role": "tool", "tool_call_id": "c1", "content": "package main"},
	}}))
	var c mcp.ContextOutput
	_ = json.Unmarshal([]byte(callTool("get_context", map[string]any{"session_id": "demo", "budget": 8000})), &c)
	fmt.Println(c.Steps, c.Tokens <= 8000, c.DroppedSteps)
	fmt.Println(callTool("get_context", map[string]any{"session_id": "elsewhere"}))
	// Output:
	// {"last_seq":3,"seqs":[1,2,3]}
	// [1 2 3] true 0
	// error: get_context of session "elsewhere": not found: session "elsewhere" does not exist (list_sessions shows the sessions there are; create_session makes one)
}

// The HTTP server mounts the same tools at /mcp; the tenant of each
// request comes from its API key.
func ExampleNewHTTPHandler() {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	srv, err := mcp.New(mcp.Config{Store: st})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, func(r *http.Request) (string, error) {
		return tenantOf(r) // for example: the tenant of the request's API key
	}))
	_ = mux // http.ListenAndServe("127.0.0.1:8080", mux)
}
