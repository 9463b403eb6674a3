package server

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
)

// forgetWorld fills two tenants with the same two users, each with two
// sessions (one a branch of the other) with a turn and a memory block,
// a memory block, two facts and a recall document of their own.
func forgetWorld(t *testing.T, e *authEnv) map[string]string {
	keys := map[string]string{"acme": e.key("acme"), "globex": e.key("globex")}
	for tenant, k := range keys {
		for _, user := range []string{"alice", "bob"} {
			sid := user + "-chat"
			e.mustAs(201, k, "POST", "/v1/sessions", fmt.Sprintf(`{"id":%q,"user_id":%q}`, sid, user))
			e.mustAs(201, k, "POST", "/v1/sessions/"+sid+"/messages", fmt.Sprintf(`{"role":"user","content":"zebra notes of %s in %s"}`, user, tenant))
			e.mustAs(201, k, "POST", "/v1/sessions/"+sid+"/fork", fmt.Sprintf(`{"id":%q}`, sid+"-branch"))
			e.mustAs(201, k, "POST", "/v1/sessions/"+sid+"-branch/messages", `{"role":"user","content":"zebra branch turn"}`)
			for _, path := range []string{"/v1/sessions/" + sid + "/blocks/task", "/v1/sessions/" + sid + "-branch/blocks/task", "/v1/users/" + user + "/blocks/human"} {
				e.mustAs(201, k, "PUT", path, `{"value":"zebra block"}`)
			}
			for _, text := range []string{"Likes zebras.", "Lives in Lyon."} {
				e.mustAs(201, k, "POST", "/v1/users/"+user+"/facts", fmt.Sprintf(`{"text":%q}`, text))
			}
			e.mustAs(200, k, "POST", "/v1/recall", fmt.Sprintf(`{"documents":[{"id":"note-%s","text":"zebra note","metadata":{"user":%q}}]}`, user, user))
		}
	}
	return keys
}

// userHolds counts what the tenant holds of the user through the API:
// sessions, facts, recall documents (a fresh search) and the user's
// blocks.
func userHolds(t *testing.T, e *authEnv, key, user string) [4]int {
	t.Helper()
	var ss api.ListSessionsResponse
	e.mustAs(200, key, "GET", "/v1/sessions?user_id="+user, "").json(t, &ss)
	var fs api.FactsResponse
	e.mustAs(200, key, "GET", "/v1/users/"+user+"/facts?include_superseded=true", "").json(t, &fs)
	var rs api.RecallSearchResponse
	e.mustAs(200, key, "GET", "/v1/recall/search?q=zebra&k=50&fresh=true&filter=user:"+user, "").json(t, &rs)
	var bs api.BlocksResponse
	e.mustAs(200, key, "GET", "/v1/users/"+user+"/blocks", "").json(t, &bs)
	return [4]int{len(ss.Sessions), len(fs.Facts), len(rs.Hits), len(bs.Blocks)}
}

// TestForgetUser: DELETE /v1/users/{user} erases the user's sessions
// (branches too) with their blocks, facts, recall documents (indexed
// turns and documents put with the user's metadata) and blocks in the
// caller's tenant, and nothing of another user or tenant; it answers
// the counts, and a repeat erases nothing more.
func TestForgetUser(t *testing.T) {
	now := fixedNow
	var bm *blocks.Memory
	var fm *facts.Memory
	e := newAuthEnv(t, true, withLongTerm(&now), withBlocks, func(c *Config) { bm, fm = c.Blocks, c.Facts })
	keys := forgetWorld(t, e)
	// Each user: 2 sessions, 2 facts, 4 documents (a turn of each session,
	// the turn the branch inherited, and the note), 1 user block.
	full := [4]int{2, 2, 4, 1}
	for tenant, k := range keys {
		for _, user := range []string{"alice", "bob"} {
			if got := userHolds(t, e, k, user); got != full {
				t.Fatalf("%s/%s before: %v, want %v", tenant, user, got, full)
			}
		}
	}

	var out api.ForgetUserResponse
	e.mustAs(200, keys["acme"], "DELETE", "/v1/users/alice?reason=erasure+request", "").json(t, &out)
	if want := (api.ForgetUserResponse{Sessions: 2, Facts: 2, Documents: 4, Blocks: 3}); out != want {
		t.Fatalf("forget = %+v, want %+v", out, want)
	}
	if got := userHolds(t, e, keys["acme"], "alice"); got != [4]int{} {
		t.Fatalf("acme/alice after: %v, want nothing", got)
	}
	for _, sid := range []string{"alice-chat", "alice-chat-branch"} {
		e.mustAs(404, keys["acme"], "GET", "/v1/sessions/"+sid, "")
		if bs, err := bm.List(context.Background(), "acme", blocks.Session(sid)); err != nil || len(bs) != 0 {
			t.Fatalf("blocks of the deleted session %s: %v, %v", sid, bs, err)
		}
	}
	// The facts' audit log says who forgot them and why, without their
	// text.
	au, err := fm.Audit(context.Background(), "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	forgotten := 0
	for _, x := range au {
		if x.Action == facts.ActionForgotten && x.Reason == "erasure request" {
			forgotten++
		}
		if x.After != nil || x.Before != nil {
			t.Fatalf("audit entry keeps a forgotten text: %+v", x)
		}
	}
	if forgotten != 2 {
		t.Fatalf("audit: %+v", au)
	}
	for _, c := range []struct{ tenant, user string }{{"acme", "bob"}, {"globex", "alice"}, {"globex", "bob"}} {
		if got := userHolds(t, e, keys[c.tenant], c.user); got != full {
			t.Errorf("%s/%s after forgetting acme/alice: %v, want %v", c.tenant, c.user, got, full)
		}
		for _, sid := range []string{c.user + "-chat", c.user + "-chat-branch"} {
			if bs, err := bm.List(context.Background(), c.tenant, blocks.Session(sid)); err != nil || len(bs) != 1 {
				t.Errorf("blocks of %s/%s: %v, %v", c.tenant, sid, bs, err)
			}
		}
	}

	e.mustAs(200, keys["acme"], "DELETE", "/v1/users/alice", "").json(t, &out)
	if out != (api.ForgetUserResponse{}) {
		t.Fatalf("forget again = %+v, want nothing", out)
	}
	// A user the tenant never had: nothing to erase, not an error.
	e.mustAs(200, keys["globex"], "DELETE", "/v1/users/carol", "")
	if r := e.as(keys["acme"], "DELETE", "/v1/users/bob?reason="+strings.Repeat("x", MaxReasonBytes+1), ""); r.code != 400 || r.apiErr(t).Field != "reason" {
		t.Fatalf("a long reason: %d %s", r.code, r.body)
	}
}

// failingFacts is a facts store whose Update fails while fail is set.
type failingFacts struct {
	facts.Store
	fail atomic.Bool
}

func (f *failingFacts) Update(ctx context.Context, tenant, userID string, fn func([]facts.Fact) (facts.Changes, error)) error {
	if f.fail.Load() {
		return fmt.Errorf("facts store down: %w", agentmem.ErrUnavailable)
	}
	return f.Store.Update(ctx, tenant, userID, fn)
}

// TestForgetUserRetry: a forget that fails part way answers the error,
// and a retry erases what is left, counting only that. A recall index
// that does not follow the log in time answers 503 index_behind before
// anything is erased.
func TestForgetUserRetry(t *testing.T) {
	now := fixedNow
	ff := &failingFacts{Store: facts.NewMemStore()}
	e := newEnv(t, withLongTerm(&now), withBlocks, func(c *Config) {
		c.Facts = facts.New(ff, facts.Options{Clock: func() time.Time { return now }})
		c.IndexWait = 200 * time.Millisecond
	})
	e.must(201, "POST", "/v1/sessions", `{"id":"s1","user_id":"alice"}`)
	e.must(201, "POST", "/v1/sessions/s1/messages", `{"role":"user","content":"zebra"}`)
	e.must(201, "POST", "/v1/users/alice/facts", `{"text":"Likes zebras."}`)
	e.must(201, "PUT", "/v1/users/alice/blocks/human", `{"value":"zebra"}`)

	ff.fail.Store(true)
	r := e.do("DELETE", "/v1/users/alice", nil)
	if r.code != 503 || r.apiErr(t).Code != api.CodeUnavailable {
		t.Fatalf("forget with the facts store down: %d %s", r.code, r.body)
	}
	e.must(404, "GET", "/v1/sessions/s1", nil) // erased before the facts
	ff.fail.Store(false)
	var out api.ForgetUserResponse
	e.must(200, "DELETE", "/v1/users/alice", nil).json(t, &out)
	if want := (api.ForgetUserResponse{Facts: 1, Blocks: 1}); out != want {
		t.Fatalf("retry = %+v, want %+v (what the first call left)", out, want)
	}

	e.must(201, "POST", "/v1/sessions", `{"id":"s2","user_id":"bob"}`)
	e.stopIndex()
	e.must(201, "POST", "/v1/sessions/s2/messages", `{"role":"user","content":"zebra"}`)
	r = e.do("DELETE", "/v1/users/bob", nil)
	if r.code != 503 || r.header.Get("Retry-After") == "" || r.apiErr(t).Code != api.CodeIndexBehind {
		t.Fatalf("forget with the index stopped: %d %s", r.code, r.body)
	}
	e.must(200, "GET", "/v1/sessions/s2", nil) // nothing erased yet
}
