package inspector_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
)

// The inspector is an http.Handler over a store, mounted at "/". Here it
// shows what the model saw at step 3 of a session: the call that produced
// the agent's first action.
func ExampleNew() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	m, err := store.CreateMemory(ctx, st, store.CreateRequest{ID: "demo", UserID: "alice", Agent: "coder"},
		agentmem.Options{Counter: tokenizer.NewHeuristic()})
	if err != nil {
		log.Fatal(err)
	}
	_, _ = m.Add(ctx, &agentmem.SystemPromptStep{Content: "You are helpful."})
	_, _ = m.Add(ctx, &agentmem.TaskStep{Task: "What is in main.go?"})
	_, _ = m.Add(ctx, &agentmem.ActionStep{
		ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"main.go"}`}},
		Results:   []agentmem.ToolResult{{CallID: "c1", Content: "package main"}},
	})

	insp, err := inspector.New(inspector.Config{
		Store: st,
		// The server passes the tenant of the request's API key here.
		Tenant: func(*http.Request) (string, error) { return "", nil },
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", insp) // the JSON API keeps /v1/

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/sessions/demo/context?at=3&budget=100&tokenizer=heuristic", nil))
	body := rec.Body.String()
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	fmt.Println(strings.Contains(body, "What the model saw at step #3"))
	fmt.Println(strings.Count(body, `<li class="msg `), "messages sent")
	// Output:
	// 200 text/html; charset=utf-8
	// true
	// 2 messages sent
}
