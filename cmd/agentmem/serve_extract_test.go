package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/proxy/proxytest"
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
// turn sent to POST /v1/users/{user}/facts/extract; with --extract-facts
// too, from the turns of sessions with a user, in the background.
func TestServeFactExtraction(t *testing.T) {
	up := proxytest.New()
	defer up.Close()
	up.Script = extractionScript
	s := serve(t, nil, "--addr", "127.0.0.1:0", "--store", "mem://", "--llm-base-url", up.OpenAIBaseURL(), "--llm-model", "m", "--extract-facts")
	base := "http://" + s.addr
	code, body := call(t, http.DefaultClient, "POST", base+"/v1/users/alice/facts/extract", "",
		`{"messages":[{"role":"user","content":"I live in Paris."},{"role":"assistant","content":"Nice."}]}`)
	if code != 200 || !strings.Contains(body, `"outcome":"added"`) || !strings.Contains(body, "Lives in Paris.") {
		t.Fatalf("extract: %d %s", code, body)
	}
	if code, body := call(t, http.DefaultClient, "POST", base+"/v1/sessions", "", `{"id":"s1","user_id":"bob"}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, body := call(t, http.DefaultClient, "POST", base+"/v1/sessions/s1/messages", "",
		`[{"role":"user","content":"Hi, I live in Paris."},{"role":"assistant","content":"Bonjour!"}]`); code != 201 {
		t.Fatalf("append: %d %s", code, body)
	}
	// The background extraction has no read-your-writes over HTTP: wait
	// for bob's fact, up to a deadline.
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := call(t, http.DefaultClient, "GET", base+"/v1/users/bob/facts", "", "")
		var got struct{ Facts []struct{ Text string } }
		if code != 200 || json.Unmarshal([]byte(body), &got) != nil {
			t.Fatalf("facts: %d %s", code, body)
		}
		if len(got.Facts) == 1 && got.Facts[0].Text == "Lives in Paris." {
			break
		}
		if len(got.Facts) > 1 || time.Now().After(deadline) {
			t.Fatalf("bob's facts: %s\nlog:\n%s", body, s.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
