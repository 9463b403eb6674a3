package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	agentmcp "github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/proxy/proxytest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// extractionScript answers the fact extractor's requests: a turn in which
// the user lives in Paris adds "Lives in Paris.", any other is ignored.
func extractionScript(_ string, _ int, messages []any) proxytest.Reply {
	if len(messages) < 2 {
		return proxytest.Reply{Text: "?"}
	}
	user, _ := messages[1].(map[string]any)
	content, _ := user["content"].(string)
	if strings.Contains(content, "I live in Paris") {
		return proxytest.Reply{Text: `{"decisions":[{"action":"add","text":"Lives in Paris."}]}`}
	}
	return proxytest.Reply{Text: `{"decisions":[{"action":"ignore"}]}`}
}

// TestServeFactExtraction: with --llm-base-url, serve learns facts from a
// turn sent to POST /v1/users/{user}/facts/extract or to the extract_facts
// tool of /mcp, and, in the
// background, from the turns of the sessions with a user that
// --extract-facts and their "extract_facts" setting select: every one
// but those that opt out with the flag, only those that opt in without.
func TestServeFactExtraction(t *testing.T) {
	up := proxytest.New()
	defer up.Close()
	up.Script = extractionScript
	for _, flag := range []bool{true, false} {
		args := []string{"--addr", "127.0.0.1:0", "--store", "mem://", "--llm-base-url", up.OpenAIBaseURL(), "--llm-model", "m"}
		if flag {
			args = append(args, "--extract-facts")
		}
		s := serve(t, nil, args...)
		base := "http://" + s.addr
		code, body := call(t, http.DefaultClient, "POST", base+"/v1/users/alice/facts/extract", "",
			`{"messages":[{"role":"user","content":"I live in Paris."},{"role":"assistant","content":"Nice."}]}`)
		if code != 200 || !strings.Contains(body, `"outcome":"added"`) || !strings.Contains(body, "Lives in Paris.") {
			t.Fatalf("extract: %d %s", code, body)
		}
		// /mcp offers the extract_facts tool with the same model.
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).
			Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ex agentmcp.ExtractFactsOutput
		mcpCall(context.Background(), t, cs, agentmcp.ToolExtractFacts, map[string]any{"user_id": "dora", "messages": []map[string]any{
			{"role": "user", "content": "I live in Paris."}, {"role": "assistant", "content": "Nice."}}}, &ex)
		cs.Close()
		if len(ex.Decisions) != 1 || ex.Decisions[0].Outcome != "added" || ex.Decisions[0].Fact == nil || ex.Decisions[0].Fact.Text != "Lives in Paris." {
			t.Fatalf("extract_facts over /mcp: %+v", ex)
		}
		// Skipped, then learnt from: carol's session says no (or leaves
		// it to a default that is off), bob's yes (or the default).
		skip, learn := `{"id":"s0","user_id":"carol","extract_facts":false}`, `{"id":"s1","user_id":"bob"}`
		if !flag {
			skip, learn = `{"id":"s0","user_id":"carol"}`, `{"id":"s1","user_id":"bob","extract_facts":true}`
		}
		for _, create := range []string{skip, learn} {
			if code, body := call(t, http.DefaultClient, "POST", base+"/v1/sessions", "", create); code != 201 {
				t.Fatalf("create: %d %s", code, body)
			}
		}
		for _, id := range []string{"s0", "s1"} {
			if code, body := call(t, http.DefaultClient, "POST", base+"/v1/sessions/"+id+"/messages", "",
				`[{"role":"user","content":"Hi, I live in Paris."},{"role":"assistant","content":"Bonjour!"}]`); code != 201 {
				t.Fatalf("append: %d %s", code, body)
			}
		}
		// The background extraction has no read-your-writes over HTTP:
		// wait for bob's fact, up to a deadline. The feed is read in
		// order, so carol's turn was passed over by then.
		deadline := time.Now().Add(20 * time.Second)
		for _, user := range []string{"bob", "carol"} {
			want := 1
			if user == "carol" {
				want = 0
			}
			for {
				code, body := call(t, http.DefaultClient, "GET", base+"/v1/users/"+user+"/facts", "", "")
				var got struct{ Facts []struct{ Text string } }
				if code != 200 || json.Unmarshal([]byte(body), &got) != nil {
					t.Fatalf("facts: %d %s", code, body)
				}
				if len(got.Facts) == want && (want == 0 || got.Facts[0].Text == "Lives in Paris.") {
					break
				}
				if len(got.Facts) > want || time.Now().After(deadline) {
					t.Fatalf("--extract-facts=%v: %s's facts: %s\nlog:\n%s", flag, user, body, s.log.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		// The server that extracted holds the extraction's lease.
		if code, body := call(t, http.DefaultClient, "GET", base+"/readyz", "", ""); code != 200 ||
			!strings.Contains(body, `"fact_extraction":{"running":true`) || !strings.Contains(body, `"lease":{"held":true`) {
			t.Fatalf("readyz: %d %s", code, body)
		}
	}
}
