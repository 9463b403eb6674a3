package proxy_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/server"
)

// TestUnauthorizedBeforeBody: a request without a key is answered 401 at
// once, without waiting for a body it announced and does not send (the
// server would otherwise hold the connection until the body came or its
// read timeout passed, and connections that never send their body would
// take every file descriptor). The connection is closed after the answer.
func TestUnauthorizedBeforeBody(t *testing.T) {
	keys := auth.NewKeys(auth.NewMemStore(), auth.KeysOptions{})
	e := newEnv(t, func(_ *proxy.Config, sc *server.Config) {
		sc.Auth = auth.NewAuthenticator(keys, auth.AuthenticatorOptions{Require: true, CacheTTL: -1})
	})
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/sessions"} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// The headers of a 1,000-byte body, and none of it.
		if _, err := conn.Write([]byte("POST " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		// A deadline, not a synchronisation: the answer must come
		// without the body, which never comes.
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: no answer without the body: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || !resp.Close {
			t.Errorf("%s: %d, close %v; want 401 and the connection closed", path, resp.StatusCode, resp.Close)
		}
	}
}
