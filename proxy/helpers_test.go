package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
)

// env is an agentmem server with the proxy in front of a stand-in
// upstream.
type env struct {
	up  *proxytest.Upstream
	srv *httptest.Server
	svc *sessions.Service
	st  store.Store
}

// newEnv starts an env; cfg may change the proxy's configuration (its
// Sessions and upstreams are set for it).
func newEnv(t *testing.T, cfg func(*proxy.Config, *server.Config)) *env {
	t.Helper()
	e := &env{up: proxytest.New(), st: memstore.New(memstore.Options{})}
	t.Cleanup(e.up.Close)
	var err error
	if e.svc, err = sessions.New(sessions.Config{Store: e.st}); err != nil {
		t.Fatal(err)
	}
	pc := proxy.Config{Sessions: e.svc, OpenAI: proxy.Upstream{BaseURL: e.up.OpenAIBaseURL()}, Anthropic: proxy.Upstream{BaseURL: e.up.URL}}
	sc := server.Config{Store: e.st, Sessions: e.svc}
	if cfg != nil {
		cfg(&pc, &sc)
	}
	p, err := proxy.New(pc)
	if err != nil {
		t.Fatal(err)
	}
	sc.Proxy = p
	srv, err := server.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(srv)
	t.Cleanup(e.srv.Close)
	return e
}

// response is an answer of the proxy.
type response struct {
	status int
	header http.Header
	body   []byte
}

// post sends a request to the proxy.
func (e *env) post(t *testing.T, path string, header map[string]string, body any) response {
	t.Helper()
	b, ok := body.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest("POST", e.srv.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, out}
}

// events splits a server-sent event stream into its events' names and
// data.
func events(t *testing.T, body []byte) (names []string, data [][]byte) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<24)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			name = ""
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			names = append(names, name)
			data = append(data, []byte(strings.TrimPrefix(line, "data: ")))
		}
	}
	return names, data
}

// held returns the session's working set in OpenAI wire form, pending
// actions included.
func (e *env) held(t *testing.T, id string) []render.OpenAIMessage {
	t.Helper()
	h, err := e.svc.History(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []agentmem.Message
	for _, s := range h.Steps {
		msgs = append(msgs, agentmem.OpenAI.StepMessages(s, agentmem.RenderOptions{})...)
	}
	return render.OpenAIRequest(msgs)
}

// wire returns messages in OpenAI wire form, as JSON, for comparison.
func wire(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// canonicalOpenAI decodes OpenAI request messages and renders them again
// in wire form (dropping what agentmem does not record, as names of tool
// messages).
func canonicalOpenAI(t *testing.T, msgs any) []render.OpenAIMessage {
	t.Helper()
	m, err := render.DecodeOpenAIMessages([]byte(wire(t, msgs)))
	if err != nil {
		t.Fatal(err)
	}
	return render.OpenAIRequest(m)
}

// o200k is the tokenizer of gpt-4o.
func o200k(t *testing.T) tokenizer.Counter {
	t.Helper()
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
