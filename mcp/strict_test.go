package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// lossyCalls are tool calls whose raw arguments encoding/json would
// decode with a loss (invalid UTF-8 or a lone surrogate escape turned into
// U+FFFD, a repeated key of which the last wins), and the path the
// refusal must name.
var lossyCalls = []struct {
	name, args, path string
}{
	{"invalid UTF-8", "{\"session_id\":\"s\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}", "messages[0].content"},
	{"lone surrogate", `{"session_id":"s","messages":[{"role":"user","content":"\ud800 x"}]}`, "messages[0].content"},
	{"repeated key", `{"session_id":"s","session_id":"t","messages":[{"role":"user","content":"hi"}]}`, "session_id"},
	{"repeated nested key", `{"session_id":"s","messages":[{"role":"user","content":"a","content":"b"}]}`, "messages[0].content"},
}

// rpcCall is a JSON-RPC tools/call request with raw arguments.
func rpcCall(id int, tool, args string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id+1) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
}

// rpcResponse is the part of a JSON-RPC response the tests read.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// checkRefused fails unless resp is a JSON-RPC invalid-params error that
// names path.
func checkRefused(t *testing.T, what string, resp rpcResponse, path string) {
	t.Helper()
	if resp.Error == nil {
		t.Errorf("%s: answered %+v, want a JSON-RPC error", what, resp.Result)
		return
	}
	if resp.Error.Code != -32602 || !strings.Contains(resp.Error.Message, path+" ") {
		t.Errorf("%s: error %d %q, want -32602 naming %s", what, resp.Error.Code, resp.Error.Message, path)
	}
}

// checkUntouched fails unless session s of st has no entries.
func checkUntouched(t *testing.T, st *store.Store) {
	t.Helper()
	s, err := st.Get(context.Background(), "", "s")
	if err != nil || s.LastSeq != 0 {
		t.Errorf("session s after the refused calls: %+v, %v", s, err)
	}
}

// TestLossyArgumentsOverHTTP: over streamable HTTP, tool arguments that
// would be decoded with a loss are refused with a JSON-RPC error, and
// nothing is stored.
func TestLossyArgumentsOverHTTP(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	if _, err := st.Create(context.Background(), store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.New(mcp.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer hs.Close()
	post := func(body []byte) rpcResponse {
		t.Helper()
		req, err := http.NewRequest("POST", hs.URL, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		var out rpcResponse
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("status %d, body %q: %v", res.StatusCode, data, err)
		}
		return out
	}
	for i, c := range lossyCalls {
		checkRefused(t, c.name, post(rpcCall(i, mcp.ToolAppend, c.args)), c.path)
	}
	checkUntouched(t, st)
	// The same call with clean arguments goes through.
	if resp := post(rpcCall(9, mcp.ToolAppend, `{"session_id":"s","messages":[{"role":"user","content":"café"}]}`)); resp.Error != nil || resp.Result == nil || resp.Result.IsError {
		t.Errorf("a clean call: %+v %+v", resp.Error, resp.Result)
	}
}

// TestLossyArgumentsOverStdio: over the stdio transport (agentmem mcp),
// the same arguments are refused with a JSON-RPC error the client reads,
// the connection stays up, and nothing is stored.
func TestLossyArgumentsOverStdio(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	if _, err := st.Create(context.Background(), store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.New(mcp.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clientOut, serverIn := io.Pipe()
	serverOut, clientIn := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, &sdk.IOTransport{Reader: clientOut, Writer: clientIn}) }()
	lines := bufio.NewScanner(serverOut)
	lines.Buffer(nil, 1<<20)
	send := func(msg []byte) {
		t.Helper()
		if _, err := serverIn.Write(append(msg, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	receive := func() rpcResponse {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the server closed the connection: %v", lines.Err())
		}
		var out rpcResponse
		if err := json.Unmarshal(lines.Bytes(), &out); err != nil {
			t.Fatalf("%q: %v", lines.Bytes(), err)
		}
		return out
	}
	send([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	if resp := receive(); resp.Error != nil {
		t.Fatalf("initialize: %+v", resp.Error)
	}
	send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	for i, c := range lossyCalls {
		send(rpcCall(i, mcp.ToolAppend, c.args))
		checkRefused(t, c.name, receive(), c.path)
	}
	checkUntouched(t, st)
	send(rpcCall(9, mcp.ToolAppend, `{"session_id":"s","messages":[{"role":"user","content":"café"}]}`))
	if resp := receive(); resp.Error != nil || resp.Result == nil || resp.Result.IsError {
		t.Errorf("a clean call: %+v %+v", resp.Error, resp.Result)
	}
	serverIn.Close()
	if err := <-done; err != nil && err != io.EOF {
		t.Errorf("Run: %v", err)
	}
}
