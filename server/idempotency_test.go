package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/store"
)

// An Idempotency-Key names one request whatever the route: the same
// request again is answered as it was and stores nothing; another request
// with the key, on any route (the MCP append tool included), is 409
// idempotency_key_reused and stores nothing.

// withMCP mounts the MCP endpoint over the server's store.
func withMCP(t *testing.T) func(*Config) {
	return func(c *Config) {
		msrv, err := mcp.New(mcp.Config{Store: c.Store, Clock: c.Clock})
		if err != nil {
			t.Fatal(err)
		}
		c.MCP = mcp.NewHTTPHandler(msrv, func(r *http.Request) (string, error) { return Tenant(r), nil })
	}
}

// keyedResult is what a keyed write answered: its seqs, or that it was
// refused for reusing the key (and anything else, as the failure).
type keyedResult struct {
	seqs    []int64
	reused  bool
	failure string
}

// keyedRoute sends a request with content text and an Idempotency-Key to
// session id through one route.
type keyedRoute struct {
	name string
	send func(e *env, id, key, text string) keyedResult
}

// httpResult reads the answer of an append route.
func httpResult(t *testing.T, r *response) keyedResult {
	t.Helper()
	switch r.code {
	case http.StatusCreated:
		var ar api.AppendResponse
		r.json(t, &ar)
		return keyedResult{seqs: ar.Seqs}
	case http.StatusConflict:
		if ae := r.apiErr(t); ae.Code == api.CodeIdempotencyKeyReused && ae.Field == "Idempotency-Key" {
			return keyedResult{reused: true}
		}
	}
	return keyedResult{failure: fmt.Sprintf("%d %s", r.code, r.body)}
}

func keyedRoutes(t *testing.T) []keyedRoute {
	post := func(path, body string) func(e *env, id, key, text string) keyedResult {
		return func(e *env, id, key, text string) keyedResult {
			return httpResult(t, e.do("POST", "/v1/sessions/"+id+path, strings.ReplaceAll(body, "TEXT", text), "Idempotency-Key", key))
		}
	}
	return []keyedRoute{
		{"one step", post("/steps", `{"type":"task","task":"TEXT"}`)},
		{"a list of steps", post("/steps", `[{"type":"task","task":"TEXT"},{"type":"task","task":"TEXT, again"}]`)},
		{"messages", post("/messages", `[{"role":"user","content":"TEXT"},{"role":"assistant","content":"On it."}]`)},
		{"items", post("/items", `{"items":[{"role":"user","content":"TEXT"}]}`)},
		{"MCP append", func(e *env, id, key, text string) keyedResult {
			out := e.mcpCall("append", map[string]any{"session_id": id, "idempotency_key": key,
				"messages": []map[string]string{{"role": "user", "content": text}}})
			switch {
			case !out.IsError:
				return keyedResult{seqs: out.Structured.Seqs}
			case strings.Contains(out.text(), "was already used for a different append"):
				return keyedResult{reused: true}
			}
			return keyedResult{failure: out.text()}
		}},
	}
}

// mcpResult is the result of an MCP tool call.
type mcpResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	Structured struct {
		Seqs []int64 `json:"seqs"`
	} `json:"structuredContent"`
}

func (r mcpResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// mcpCall calls an MCP tool through the server's /mcp endpoint.
func (e *env) mcpCall(tool string, args map[string]any) mcpResult {
	e.t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		e.t.Fatal(err)
	}
	r := e.must(200, "POST", MCPPath, body, "Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-06-18")
	var rpc struct {
		Result *mcpResult      `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	r.json(e.t, &rpc)
	if rpc.Result == nil {
		e.t.Fatalf("MCP %s: %s", tool, r.body)
	}
	return *rpc.Result
}

// TestIdempotencyKeyAcrossRoutes sends a request with a key through each
// route, then another request with the key through each route: it is
// refused and stores nothing (the single step and MCP append took their
// keys to other step IDs, and a list, items or messages with the key
// replaced steps of another request before); the first request again is
// answered with its seqs and stores nothing.
func TestIdempotencyKeyAcrossRoutes(t *testing.T) {
	e := newEnv(t, withMCP(t))
	routes := keyedRoutes(t)
	for i, first := range routes {
		for j, then := range routes {
			id := fmt.Sprintf("s%d%d", i, j)
			e.create(id)
			what := first.name + " then " + then.name
			orig := first.send(e, id, "k", "List the files.")
			if orig.failure != "" || orig.reused || len(orig.seqs) == 0 {
				t.Fatalf("%s: the first request: %+v", what, orig)
			}
			before := e.dump()
			if got := then.send(e, id, "k", "Delete the files."); !got.reused {
				t.Errorf("%s with the same key and other content: %+v, want 409 idempotency_key_reused", what, got)
			}
			if e.dump() != before {
				t.Errorf("%s: the refused request changed the store", what)
			}
			if got := first.send(e, id, "k", "List the files."); got.failure != "" || !slices.Equal(got.seqs, orig.seqs) {
				t.Errorf("%s: the first request again: %+v, want seqs %v", what, got, orig.seqs)
			}
			if e.dump() != before {
				t.Errorf("%s: the retry changed the store", what)
			}
		}
	}
}

// TestIdempotencyKeySameRequest: one step sent alone or as a list of one
// is the same request, and so are a message sent to POST /messages and
// to the MCP append tool: the second is a retry.
func TestIdempotencyKeySameRequest(t *testing.T) {
	e := newEnv(t, withMCP(t))
	e.create("s")
	first := e.appendSteps("s", `{"type":"task","task":"List the files."}`, "Idempotency-Key", "one")
	again := e.appendSteps("s", `[{"type":"task","task":"List the files."}]`, "Idempotency-Key", "one")
	if !slices.Equal(first.Seqs, []int64{1}) || !slices.Equal(again.Seqs, first.Seqs) || again.LastSeq != 1 {
		t.Fatalf("one step, then as a list: %+v then %+v", first, again)
	}
	out := e.mcpCall("append", map[string]any{"session_id": "s", "idempotency_key": "two", "messages": []map[string]string{{"role": "user", "content": "Thanks."}}})
	if out.IsError || !slices.Equal(out.Structured.Seqs, []int64{2}) {
		t.Fatalf("MCP append: %+v", out)
	}
	if ar := e.appendMessages("s", `{"role":"user","content":"Thanks."}`, "Idempotency-Key", "two"); !slices.Equal(ar.Seqs, []int64{2}) || ar.LastSeq != 2 {
		t.Fatalf("the MCP append's message to POST /messages: %+v", ar)
	}
}

// TestIdempotencyKeyPartRetry: a request with the key that sends only a
// part of the first request (a message, a step or an item dropped) is
// another request: refused, not answered as a retry.
func TestIdempotencyKeyPartRetry(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ path, whole, part string }{
		{"messages", `[{"role":"user","content":"List the files."},{"role":"assistant","content":"a.go"}]`, `[{"role":"user","content":"List the files."}]`},
		{"steps", `[{"type":"task","task":"List the files."},{"type":"task","task":"Then read them."}]`, `[{"type":"task","task":"List the files."}]`},
		{"items", itemsBody(`{"role":"user","content":"List the files."}`, `{"role":"user","content":"Then read them."}`), itemsBody(`{"role":"user","content":"List the files."}`)},
	} {
		e.create(c.path)
		e.must(201, "POST", "/v1/sessions/"+c.path+"/"+c.path, c.whole, "Idempotency-Key", "k")
		before := e.dump()
		r := e.do("POST", "/v1/sessions/"+c.path+"/"+c.path, c.part, "Idempotency-Key", "k")
		if r.code != http.StatusConflict || r.apiErr(t).Code != api.CodeIdempotencyKeyReused {
			t.Errorf("%s: a part of the request with its key: %d %s", c.path, r.code, r.body)
		}
		if e.dump() != before {
			t.Errorf("%s: the refused part changed the store", c.path)
		}
	}
}

// TestStepsFingerprintPinned pins the fingerprint the server records with
// the Idempotency-Key of an append of steps: a retry sent after an
// upgrade must still be recognized. A key-only check with the pinned
// fingerprint, straight to the store, is answered as a retry; any other
// fingerprint would be refused.
func TestStepsFingerprintPinned(t *testing.T) {
	e := newEnv(t)
	for i, c := range []struct{ body, want string }{
		{`{"type":"task","task":"List the files."}`,
			"1436de54bf2426d609f4a9aad3766a25ca5c1c5572b6b61c98ed48ec8f878e43"},
		{`{"type":"action","number":7,"time":"2026-01-02T03:04:05.5+01:00","metadata":{"b":"<&>","a":"1"},"thought":"look","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\"dir\":\".\"}"}}],"results":[{"call_id":"c1","content":"a.go\nb.go \u2028"}],"usage":{"input_tokens":5,"output_tokens":2}}`,
			"07999344b8b79d59e31a005ceb787c9ab7b64c056c36c6d29236cb13b5c5c01d"},
		{`[{"type":"system_prompt","content":"Be brief."},{"type":"task","id":"own \"id\"","task":"Go."}]`,
			"0e058a142bdbd738ce75c3eed1d206edb9a799c96d9719a66839fa9b8ac23b2c"},
		{`{"steps":[{"type":"summary","summary":"so far","covers":[{"from":1,"to":1}]}],"compaction":{"working":[1,-1]}}`,
			"4f5a081d074723b932082fa4fdc92adabf517c3fa5da8e35118fc6c0bd6b8c09"},
	} {
		id := fmt.Sprintf("s%d", i)
		e.create(id)
		if i == 3 {
			e.appendSteps(id, `{"type":"task","task":"first"}`)
		}
		e.must(201, "POST", "/v1/sessions/"+id+"/steps", c.body, "Idempotency-Key", "k")
		for _, fp := range []string{c.want, "other"} {
			_, err := store.New(e.mem).Append(context.Background(), store.AppendRequest{SessionID: id, Idempotency: &store.Idempotency{Key: "k", Fingerprint: fp}})
			if fp == c.want && err != nil {
				t.Errorf("%s: the pinned fingerprint %s: %v", c.body, fp, err)
			}
			if fp != c.want && !errors.Is(err, store.ErrIDReused) {
				t.Errorf("%s: another fingerprint: %v, want ErrIDReused", c.body, err)
			}
		}
	}
}
