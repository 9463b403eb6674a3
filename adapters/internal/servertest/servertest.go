// Package servertest starts a real agentmem server in process for the
// tests and examples of the framework adapters (the modules under
// adapters/). It is the server's handler (package server) over a memstore,
// on an httptest server on a loopback port. As `agentmem serve` has them,
// it has a recall index that follows every append and a facts memory. The
// adapters reach it with the Go client (package client), over HTTP, as
// they reach a server started with `agentmem serve`.
package servertest

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views/recallview"
)

// Server is a running server and a client of it.
type Server struct {
	// URL is the server's base URL ("http://127.0.0.1:PORT").
	URL string
	// Client is a client of the server, closed by Close.
	Client *client.Client

	stop func()
}

// Start starts a server; Close stops it.
func Start() (*Server, error) {
	mem := memstore.New(memstore.Options{})
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	follower, stopIndex := recallview.Start(mem, mem, &recallview.Indexer{Index: ix, Store: mem}, recallview.FollowerOptions{})
	srv, err := server.New(server.Config{
		Store:          mem,
		Recall:         ix,
		RecallFollower: follower,
		Facts:          facts.New(facts.NewMemStore(), facts.Options{}),
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		stopIndex()
		ix.Close()
		mem.Close()
		return nil, err
	}
	ts := httptest.NewServer(srv)
	c, err := client.New(ts.URL)
	if err != nil {
		ts.Close()
		stopIndex()
		srv.Close()
		ix.Close()
		mem.Close()
		return nil, err
	}
	return &Server{URL: ts.URL, Client: c, stop: func() {
		_ = c.Close()
		ts.Close()
		stopIndex()
		srv.Close()
		ix.Close()
		mem.Close()
	}}, nil
}

// Close stops the server and closes its client.
func (s *Server) Close() { s.stop() }

// New starts a server for the test t and stops it when t ends.
func New(t testing.TB) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Seed writes what the adapters' retrievers are tried on. That is three
// documents in the recall index: "runbook-db" (with the metadata
// source=runbook), "runbook-deploy" and "faq-1". It also writes a session
// "chat-1" of two turns, a user's and the assistant's. The server indexes
// them as they are appended; search with Fresh to wait for them.
func Seed(ctx context.Context, c *client.Client) error {
	if _, err := c.UpsertRecall(ctx,
		api.RecallDocument{ID: "runbook-db", Text: "The staging database listens on port 5433.", Metadata: map[string]string{"source": "runbook"}},
		api.RecallDocument{ID: "runbook-deploy", Text: "Deploys happen on Tuesdays after the standup."},
		api.RecallDocument{ID: "faq-1", Text: "Refunds take five business days."},
	); err != nil {
		return err
	}
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "chat-1"}); err != nil {
		return err
	}
	_, err := c.AppendMessages(ctx, "chat-1", []api.OpenAIMessage{
		{Role: "user", Content: "My dog Rex is afraid of thunderstorms."},
		{Role: "assistant", Content: "Poor Rex! A quiet room helps during storms."},
	}, client.AppendOptions{})
	return err
}
