package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/bench/proxybench"
	"github.com/agentmem/agentmem/internal/cli/clitest"
)

// TestBenchProxy runs agentmem-bench proxy on a small run of each mode:
// every request succeeds both ways, and the report adds up.
func TestBenchProxy(t *testing.T) {
	for _, mode := range []string{"whole", "new"} {
		code, stdout, stderr := runCLI(t, nil, "", "proxy", "--clients", "2", "--turns", "20", "--requests", "3", "--mode", mode)
		if code != 0 || stderr != "" {
			t.Fatalf("%s: exit %d, stderr %q", mode, code, stderr)
		}
		res := clitest.DecodeLine[proxybench.Result](t, stdout)
		if res.Clients != 2 || res.Turns != 20 || res.Mode != mode || res.ProxyP50 <= 0 || res.DirectP50 <= 0 ||
			res.OverheadP50 != res.ProxyP50-res.DirectP50 || res.BodyKB <= 0 {
			t.Errorf("%s: %+v", mode, res)
		}
	}
	// An upstream that takes 20 ms: every call, direct or proxied, takes
	// at least that.
	code, stdout, stderr := runCLI(t, nil, "", "proxy", "--clients", "2", "--turns", "20", "--requests", "3", "--upstream-delay", "20ms")
	var res proxybench.Result
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil {
		t.Fatalf("--upstream-delay: exit %d, %s %s", code, stdout, stderr)
	}
	if res.UpstreamDelayMS != 20 || res.DirectP50 < 20 || res.ProxyP50 < 20 {
		t.Errorf("--upstream-delay 20ms: %+v", res)
	}
	if code, _, stderr := runCLI(t, nil, "", "proxy", "--mode", "some"); code == 0 || !strings.Contains(stderr, "--mode") {
		t.Errorf("a bad mode: exit %d, %q", code, stderr)
	}
}
