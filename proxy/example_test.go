package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store/memstore"
)

// The proxy mounted on an agentmem server: a client (here plain HTTP)
// whose base URL is the server's gets its conversation recorded in the
// session it names, and the provider (here a stand-in) is sent the
// session's context.
func Example() {
	provider := proxytest.New() // stands for https://api.openai.com
	defer provider.Close()

	st := memstore.New(memstore.Options{})
	svc, _ := sessions.New(sessions.Config{Store: st})
	p, err := proxy.New(proxy.Config{Sessions: svc, OpenAI: proxy.Upstream{BaseURL: provider.OpenAIBaseURL(), APIKey: "sk-..."}})
	if err != nil {
		panic(err)
	}
	srv, _ := server.New(server.Config{Store: st, Sessions: svc, Proxy: p})
	agentmem := httptest.NewServer(srv)
	defer agentmem.Close()

	req, _ := http.NewRequest("POST", agentmem.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}]}`))
	req.Header.Set("X-Agentmem-Session", "alice-chat")
	req.Header.Set("X-Agentmem-Budget", "8000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("X-Agentmem-Session-Created"), resp.Header.Get("X-Agentmem-History"),
		resp.Header.Get("X-Agentmem-Appended"), resp.Header.Get("X-Agentmem-Steps-Kept"))
	// Output: 200 true new 2 2
}
