package remote_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/client/remote"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
)

// startServer starts what `agentmem serve` runs, on a loopback port, for
// the examples.
func startServer() *httptest.Server {
	srv, err := server.New(server.Config{Store: memstore.New(memstore.Options{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	return httptest.NewServer(srv)
}

// runAgent is code written against store.Store: it does not know whether
// its memory is in the process or on a server.
func runAgent(ctx context.Context, st *store.Store) {
	if _, err := st.Create(ctx, store.CreateRequest{ID: "run-1", Agent: "researcher"}); err != nil {
		log.Fatal(err)
	}
	m, err := store.OpenMemory(ctx, st, "run-1", agentmem.Options{Counter: tokenizer.NewHeuristic()})
	if err != nil {
		log.Fatal(err)
	}
	_, _ = m.Add(ctx, &agentmem.SystemPromptStep{Content: "You are a researcher."})
	_, _ = m.Add(ctx, &agentmem.TaskStep{Task: "Find the boiling point of water."})
	_, _ = m.Add(ctx, &agentmem.ActionStep{Thought: "search", Observation: "100 °C at sea level"})

	// Later, or in another process: resume from the session.
	resumed, err := store.OpenMemory(ctx, st, "run-1", agentmem.Options{Counter: tokenizer.NewHeuristic()})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range resumed.Steps() {
		fmt.Println(s.Info().Number, s.Kind())
	}
}

// The same program with an in-process store and with a server: only the
// constructor changes.
func Example() {
	ts := startServer() // `agentmem serve` elsewhere
	defer ts.Close()
	ctx := context.Background()

	// In process:
	//	st := memstore.New(memstore.Options{})
	// or st, err := store.Open(ctx, "sqlite:///path/to/file.db").
	//
	// Remote (store.Open(ctx, "http://127.0.0.1:8080") works too, with
	// this package imported):
	// Add client.WithAPIKey(key) for a server that wants a key (`agentmem
	// keys create`).
	c, err := client.New(ts.URL)
	if err != nil {
		log.Fatal(err)
	}
	st := remote.New(c)
	defer st.Close()

	runAgent(ctx, st)
	// Output:
	// 1 system_prompt
	// 2 task
	// 3 action
}
