package proxytest

import (
	"context"
	"net/http/httptest"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// Env is an agentmem server, over an in-memory store, whose proxy routes
// forward to a stand-in upstream. It is what a client pointed at agentmem
// talks to.
type Env struct {
	Upstream *Upstream
	// Server is the agentmem server; its URL is the base URL of an
	// Anthropic client, and URL+"/v1" that of an OpenAI client.
	Server   *httptest.Server
	Sessions *sessions.Service
	Store    *store.Store
	Proxy    *proxy.Proxy
}

// Start starts an Env. configure, when set, may change the proxy's and
// the server's configuration before they are built (the store and the
// upstreams are set already). Unless it sets the server's Sessions, the
// sessions service is built after it, with the server's Facts and Recall,
// and serves both.
func Start(configure func(*proxy.Config, *server.Config)) (*Env, error) {
	e := &Env{Upstream: New(), Store: memstore.New(memstore.Options{})}
	pc := proxy.Config{OpenAI: proxy.Upstream{BaseURL: e.Upstream.OpenAIBaseURL()}, Anthropic: proxy.Upstream{BaseURL: e.Upstream.URL}}
	sc := server.Config{Store: e.Store}
	if configure != nil {
		configure(&pc, &sc)
	}
	if sc.Sessions == nil {
		var err error
		if sc.Sessions, err = sessions.New(sessions.Config{Store: sc.Store, Facts: sc.Facts, Recall: sc.Recall}); err != nil {
			e.Upstream.Close()
			return nil, err
		}
	}
	e.Sessions = sc.Sessions
	if pc.Sessions == nil {
		pc.Sessions = sc.Sessions
	}
	p, err := proxy.New(pc)
	if err != nil {
		e.Upstream.Close()
		return nil, err
	}
	sc.Proxy, e.Proxy = p, p
	srv, err := server.New(sc)
	if err != nil {
		e.Upstream.Close()
		return nil, err
	}
	e.Server = httptest.NewServer(srv)
	return e, nil
}

// Close stops the servers.
func (e *Env) Close() {
	e.Server.Close()
	e.Upstream.Close()
}

// Held returns a session's working set as canonical messages, pending
// tool calls included: what a client resending its history sends back.
func (e *Env) Held(ctx context.Context, tenant, id string) ([]agentmem.Message, error) {
	h, err := e.Sessions.History(ctx, sessions.HistoryRequest{Tenant: tenant, SessionID: id})
	if err != nil {
		return nil, err
	}
	var msgs []agentmem.Message
	for _, s := range h.Steps {
		for _, m := range s.Messages(agentmem.RenderOptions{}) {
			msgs = append(msgs, agentmem.ChatRoles(m))
		}
	}
	return msgs, nil
}
