package main

import (
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestServeSaysWhereThingsAre: the start-up log names the URLs of the API,
// the inspector, MCP and the proxy routes that are on, and the data file.
func TestServeSaysWhereThingsAre(t *testing.T) {
	db := filepath.Join(t.TempDir(), "data.db")
	s := serve(t, nil, "--addr", "127.0.0.1:0", "--store", "sqlite://"+db,
		"--upstream-base-url", "http://127.0.0.1:1/v1")
	// The endpoints line comes before the serving line serve waited for.
	line := regexp.MustCompile(`msg=endpoints .*\n`).FindString(s.log.String())
	base := "http://" + s.addr
	for _, want := range []string{
		"api=" + base + "/v1 ", "inspector=" + base + "/ ", "mcp=" + base + "/mcp ",
		"openai_proxy=" + base + "/v1/chat/completions ", "data=" + db,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("the endpoints line lacks %q:\n%s", want, s.log)
		}
	}
	if strings.Contains(line, "anthropic_proxy") {
		t.Errorf("names the Anthropic route, which is off: %s", line)
	}
}

func TestEndpoints(t *testing.T) {
	attrs := endpoints(&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, true, false, true, "postgres://u:secret@db/agentmem")
	got := map[string]string{}
	for i := 0; i+1 < len(attrs); i += 2 {
		got[attrs[i].(string)] = attrs[i+1].(string)
	}
	want := map[string]string{
		"api": "https://localhost:8080/v1", "inspector": "https://localhost:8080/", "mcp": "https://localhost:8080/mcp",
		"anthropic_proxy": "https://localhost:8080/v1/messages",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["openai_proxy"]; ok {
		t.Errorf("names the OpenAI route, which is off: %v", got)
	}
	if strings.Contains(got["data"], "secret") || !strings.Contains(got["data"], "db/agentmem") {
		t.Errorf("data = %q, want the store's URL without its password", got["data"])
	}
}
