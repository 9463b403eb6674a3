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

	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/tokenizer"
)

// env is an agentmem server with the proxy in front of a stand-in
// upstream.
type env struct {
	*proxytest.Env
	up  *proxytest.Upstream
	srv *httptest.Server
	svc *sessions.Service
}

// newEnv starts an env; cfg may change the proxy's and the server's
// configuration (proxytest.Start).
func newEnv(t *testing.T, cfg func(*proxy.Config, *server.Config)) *env {
	t.Helper()
	pe, err := proxytest.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pe.Close)
	return &env{Env: pe, up: pe.Upstream, srv: pe.Server, svc: pe.Sessions}
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
	msgs, err := e.Held(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return render.OpenAIRequest(msgs)
}

// lastSeq returns a session's LastSeq.
func (e *env) lastSeq(t *testing.T, id string) int64 {
	t.Helper()
	sess, err := e.svc.Get(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return sess.LastSeq
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

// cl100k is the tokenizer of gpt-4.
func cl100k(t *testing.T) tokenizer.Counter {
	t.Helper()
	c, err := tokenizer.Get(tokenizer.CL100kBase)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
