package server

import (
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/blocks"
)

// withBlocks gives the server in-memory memory blocks.
func withBlocks(c *Config) {
	c.Blocks = blocks.New(blocks.NewMemStore(), blocks.Options{Clock: c.Clock})
}

// TestBlocksRoutes: a block is created (201), read, listed, appended to,
// replaced in and rewritten (200), each change a new version that is the
// ETag, with a readable history; deleted, it is gone with its history.
// The same routes serve a session's blocks.
func TestBlocksRoutes(t *testing.T) {
	e := newEnv(t, withBlocks)
	e.create("s1")
	for _, base := range []string{"/v1/users/alice", "/v1/sessions/s1"} {
		t.Run(base, func(t *testing.T) {
			var b api.Block
			r := e.must(201, "PUT", base+"/blocks/human", `{"value":"Name: Alice.","limit":100,"description":"about the user"}`)
			r.json(t, &b)
			owner, id, _ := strings.Cut(strings.TrimPrefix(base, "/v1/"), "/")
			if b.Label != "human" || b.Owner != strings.TrimSuffix(owner, "s") || b.OwnerID != id || b.Value != "Name: Alice." || b.Limit != 100 || b.Chars != 12 ||
				b.Description != "about the user" || b.ReadOnly || b.Version != 1 || b.UpdatedBy != "api" || !b.CreatedAt.Equal(fixedNow) {
				t.Fatalf("created %+v", b)
			}
			if r.header.Get("ETag") != `"1"` || r.header.Get("Location") != base+"/blocks/human" {
				t.Fatalf("headers %v", r.header)
			}
			e.must(200, "POST", base+"/blocks/human/append", `{"text":"Likes tea.","by":"agent-7"}`).json(t, &b)
			if b.Value != "Name: Alice.\nLikes tea." || b.Version != 2 || b.UpdatedBy != "agent-7" {
				t.Fatalf("appended %+v", b)
			}
			r = e.must(200, "POST", base+"/blocks/human/replace", `{"old":"tea","new":"coffee"}`)
			r.json(t, &b)
			if b.Value != "Name: Alice.\nLikes coffee." || b.Version != 3 || r.header.Get("ETag") != `"3"` {
				t.Fatalf("replaced %+v", b)
			}
			e.must(200, "PUT", base+"/blocks/human", `{"value":"Alice."}`).json(t, &b)
			if b.Value != "Alice." || b.Version != 4 || b.Limit != 100 || b.Description != "about the user" {
				t.Fatalf("rewritten %+v", b)
			}
			e.must(201, "PUT", base+"/blocks/persona", `{"value":"","read_only":true}`)
			r = e.must(200, "GET", base+"/blocks/human", nil)
			var got api.Block
			r.json(t, &got)
			if got != b || r.header.Get("ETag") != `"4"` {
				t.Fatalf("get %+v", got)
			}
			var list api.BlocksResponse
			e.must(200, "GET", base+"/blocks", nil).json(t, &list)
			if len(list.Blocks) != 2 || list.Blocks[0].Label != "human" || list.Blocks[1].Label != "persona" || !list.Blocks[1].ReadOnly {
				t.Fatalf("list %+v", list)
			}
			var h api.BlockHistoryResponse
			e.must(200, "GET", base+"/blocks/human/history", nil).json(t, &h)
			actions := []string{}
			for _, c := range h.Changes {
				actions = append(actions, c.Action)
			}
			if strings.Join(actions, ",") != "created,appended,replaced,set" || h.Changes[1].By != "agent-7" || h.Changes[2].Before != "Name: Alice.\nLikes tea." || h.Changes[2].After != "Name: Alice.\nLikes coffee." {
				t.Fatalf("history %+v", h)
			}
			e.must(204, "DELETE", base+"/blocks/human", nil)
			e.must(404, "GET", base+"/blocks/human", nil)
			e.must(404, "GET", base+"/blocks/human/history", nil)
		})
	}
}

// TestBlocksErrors: every refusal is a typed error naming the field, and
// nothing changes.
func TestBlocksErrors(t *testing.T) {
	e := newEnv(t, withBlocks)
	base := "/v1/users/alice/blocks/"
	e.must(201, "PUT", base+"human", `{"value":"tea and tea","limit":12}`)
	e.must(201, "PUT", base+"persona", `{"value":"Be kind.","read_only":true}`)
	cases := []struct {
		method, path, body string
		header             []string
		status             int
		code, field        string
	}{
		{"POST", base + "human/append", `{"text":"milk"}`, nil, 422, api.CodeOverLimit, "text"},
		{"PUT", base + "human", `{"value":"1234567890123"}`, nil, 422, api.CodeOverLimit, "value"},
		{"PUT", base + "human", `{"value":"tea and tea","limit":5}`, nil, 422, api.CodeOverLimit, "limit"},
		{"POST", base + "human/replace", `{"old":"and","new":"and also"}`, nil, 422, api.CodeOverLimit, "new"},
		{"POST", base + "human/replace", `{"old":"tea","new":"coffee"}`, nil, 422, api.CodeNoMatch, "old"},
		{"POST", base + "human/replace", `{"old":"milk","new":"coffee"}`, nil, 422, api.CodeNoMatch, "old"},
		{"POST", base + "human/replace", `{"old":"","new":"x"}`, nil, 400, api.CodeInvalid, "old"},
		{"POST", base + "human/append", `{"text":""}`, nil, 400, api.CodeInvalid, "text"},
		{"POST", base + "persona/append", `{"text":"Be rude."}`, nil, 409, api.CodeReadOnly, "label"},
		{"POST", base + "persona/replace", `{"old":"kind","new":"rude"}`, nil, 409, api.CodeReadOnly, "label"},
		{"PUT", base + "human", `{"value":"x"}`, []string{"If-Match", `"7"`}, 409, api.CodeConflict, "If-Match"},
		{"DELETE", base + "human", ``, []string{"If-Match", `"2"`}, 409, api.CodeConflict, "If-Match"},
		{"PUT", base + "human", `{"value":"x"}`, []string{"If-Match", `abc`}, 400, api.CodeInvalid, "If-Match"},
		{"PUT", base + "human", `{"limit":10}`, nil, 400, api.CodeInvalid, "value"},
		{"PUT", base + "human", `{"value":"x","colour":"red"}`, nil, 400, api.CodeInvalid, "colour"},
		{"PUT", base + "human", `{"value":"x","limit":100001}`, nil, 400, api.CodeInvalid, "limit"},
		{"PUT", base + "9lives", `{"value":"x"}`, nil, 400, api.CodeInvalid, "label"},
		{"PUT", base + "a.b", `{"value":"x"}`, nil, 400, api.CodeInvalid, "label"},
		{"GET", base + "nothing", ``, nil, 404, api.CodeNotFound, ""},
		{"POST", base + "nothing/append", `{"text":"x"}`, nil, 404, api.CodeNotFound, ""},
		{"GET", "/v1/sessions/nosuch/blocks", ``, nil, 404, api.CodeNotFound, ""},
		{"PUT", "/v1/sessions/nosuch/blocks/human", `{"value":"x"}`, nil, 404, api.CodeNotFound, ""},
	}
	for _, c := range cases {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := e.do(c.method, c.path, body, c.header...)
		if r.code != c.status {
			t.Errorf("%s %s %s: status %d, want %d: %s", c.method, c.path, c.body, r.code, c.status, r.body)
			continue
		}
		if ae := r.apiErr(t); ae.Code != c.code || ae.Field != c.field {
			t.Errorf("%s %s %s: %+v, want code %s field %q", c.method, c.path, c.body, ae, c.code, c.field)
		}
	}
	var b api.Block
	r := e.must(200, "GET", base+"human", nil)
	r.json(t, &b)
	if b.Value != "tea and tea" || b.Version != 1 {
		t.Fatalf("after refusals: %+v", b)
	}
	// The conflict's ETag is the block's version, and it then applies.
	if r := e.do("PUT", base+"human", `{"value":"x"}`, "If-Match", `"7"`); r.header.Get("ETag") != `"1"` {
		t.Fatalf("a conflict's ETag: %q", r.header.Get("ETag"))
	}
	e.must(200, "PUT", base+"human", `{"value":"x"}`, "If-Match", `"1"`)
	// The application may write a read-only block.
	e.must(200, "PUT", base+"persona", `{"value":"Be very kind."}`)
}

// TestBlocksTenants: blocks are per tenant, and another tenant's session
// is not found.
func TestBlocksTenants(t *testing.T) {
	e := newAuthEnv(t, true, withBlocks)
	acme, other := e.key("acme"), e.key("other")
	if r := e.as(acme, "POST", "/v1/sessions", `{"id":"s1"}`); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	for _, p := range []string{"/v1/users/alice/blocks/human", "/v1/sessions/s1/blocks/task"} {
		if r := e.as(acme, "PUT", p, `{"value":"acme's"}`); r.code != 201 {
			t.Fatalf("put %s: %d %s", p, r.code, r.body)
		}
	}
	if r := e.as(other, "GET", "/v1/users/alice/blocks/human", ""); r.code != 404 {
		t.Fatalf("another tenant's user block: %d %s", r.code, r.body)
	}
	if r := e.as(other, "GET", "/v1/users/alice/blocks", ""); r.code != 200 || !strings.Contains(string(r.body), `"blocks":[]`) {
		t.Fatalf("another tenant's list: %d %s", r.code, r.body)
	}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		if r := e.as(other, m, "/v1/sessions/s1/blocks/task", `{"value":"x"}`); r.code != 404 {
			t.Fatalf("%s another tenant's session block: %d %s", m, r.code, r.body)
		}
	}
}

// TestBlocksNotConfigured: without blocks the routes answer 501.
func TestBlocksNotConfigured(t *testing.T) {
	e := newEnv(t)
	if ae := e.must(501, "GET", "/v1/users/alice/blocks", nil).apiErr(t); ae.Code != api.CodeNotConfigured {
		t.Fatalf("%+v", ae)
	}
}

// TestContextShowsBlocksRoute: the context route shows the blocks after
// the system prompt and names them.
func TestContextShowsBlocksRoute(t *testing.T) {
	e := newEnv(t, withBlocks)
	e.create("s") // user u1
	e.must(201, "POST", "/v1/sessions/s/messages", `[{"role":"system","content":"You are kind."},{"role":"user","content":"hi"}]`)
	e.must(201, "PUT", "/v1/users/u1/blocks/human", `{"value":"Name: Uma."}`)
	var c struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Blocks []api.ContextBlock `json:"blocks"`
	}
	e.must(200, "GET", "/v1/sessions/s/context?budget=1000", nil).json(t, &c)
	if c.Messages[0].Content != "You are kind.\n\n"+blocks.Header+"\n<human chars=\"10/5000\">\nName: Uma.\n</human>" {
		t.Fatalf("system prompt %q", c.Messages[0].Content)
	}
	if len(c.Blocks) != 1 || c.Blocks[0] != (api.ContextBlock{Label: "human", Owner: "user", Version: 1}) {
		t.Fatalf("blocks %+v", c.Blocks)
	}
	if ae := e.must(422, "GET", "/v1/sessions/s/context?budget=20", nil).apiErr(t); ae.Code != api.CodeBudgetTooSmall {
		t.Fatalf("%+v", ae)
	}
}
