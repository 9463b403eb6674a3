package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/testenv"
)

// The end-to-end test builds the real agentmem binary, starts
// `agentmem serve` on a free loopback port with a temporary SQLite file,
// drives the API over HTTP, and stops it with SIGTERM while a request is
// in flight.

// The binary is built once per test run, into a directory removed when
// the tests end (TestMain).
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	binErr    error
)

// buildBinary builds cmd/agentmem (once) and returns its path.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping: -short (the test builds and runs the agentmem binary)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipping: the go tool is not on PATH, so the binary cannot be built")
	}
	buildOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "agentmem-server-e2e-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "agentmem")
		out, err := exec.Command(gobin, "build", "-o", binPath, "github.com/agentmem/agentmem/cmd/agentmem").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	// Every response the tests make the server write is encoded by
	// encoding/json too, and must be the same bytes.
	var (
		mu         sync.Mutex
		mismatches []string
		checked    int
	)
	encodeCheck = func(v any, got []byte) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		err := enc.Encode(v)
		mu.Lock()
		defer mu.Unlock()
		checked++
		if err != nil || !bytes.Equal(got, want.Bytes()) {
			mismatches = append(mismatches, fmt.Sprintf("%T:\n got %.2000s\nwant %.2000s (%v)", v, got, want.Bytes(), err))
		}
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	mu.Lock()
	if len(mismatches) > 0 {
		fmt.Fprintf(os.Stderr, "%d of %d responses were not encoded as encoding/json encodes them; the first:\n%s\n", len(mismatches), checked, mismatches[0])
		code = 1
	}
	mu.Unlock()
	os.Exit(code)
}

// process is a running agentmem serve.
type process struct {
	cmd    *exec.Cmd
	addr   string
	stderr *syncBuffer
	done   chan error
}

// startServe starts `agentmem serve args...` with the environment env
// and waits for it to say where it listens.
func startServe(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	p := &process{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrRE := regexp.MustCompile(`msg="agentmem serving" addr=(\S+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			p.stderr.Write([]byte(line + "\n"))
			if m := addrRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { p.done <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case p.addr = <-found:
	case err := <-p.done:
		t.Fatalf("agentmem serve exited early: %v\n%s", err, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("agentmem serve did not start:\n%s", p.stderr)
	}
	return p
}

// e2eClient bounds every request, so that a server that hangs fails the
// test quickly, with its log, instead of at the test binary's timeout.
var e2eClient = &http.Client{Timeout: 60 * time.Second}

// call sends a request to the process and decodes a JSON answer into out
// (if not nil), failing unless the status is want.
func (p *process) call(t *testing.T, want int, method, path, body string, out any, headers ...string) http.Header {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+p.addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e2eClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\nserver log:\n%s", method, path, err, p.stderr)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s\nserver log:\n%s", method, path, resp.StatusCode, want, data, p.stderr)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.Header
}

func TestEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "agentmem.db")
	storeURL := "sqlite://" + db
	p := startServe(t, bin, nil, "--addr", "127.0.0.1:0", "--store", storeURL, "--log-level", "debug")
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("the SQLite file: %v", err)
	}
	exercise(t, bin, p, storeURL)
}

// TestEndToEndPostgres runs the same routes against PostgreSQL, then
// checks two server processes on one database: each sees what the other
// appended and compacted, at once.
func TestEndToEndPostgres(t *testing.T) {
	endToEndShared(t, postgresStoreURL(t, "server_e2e"))
}

// TestEndToEndCitus is TestEndToEndPostgres on a Citus cluster.
func TestEndToEndCitus(t *testing.T) {
	endToEndShared(t, citusStoreURL(t, "server_e2e"))
}

func endToEndShared(t *testing.T, storeURL string) {
	bin := buildBinary(t)
	p := startServe(t, bin, nil, "--addr", "127.0.0.1:0", "--store", storeURL)
	exercise(t, bin, p, storeURL)

	a := startServe(t, bin, nil, "--addr", "127.0.0.1:0", "--store", storeURL)
	b := startServe(t, bin, nil, "--addr", "127.0.0.1:0", "--store", storeURL)
	a.call(t, 201, "POST", "/v1/sessions", `{"id":"shared"}`, nil)
	var ar api.AppendResponse
	a.call(t, 201, "POST", "/v1/sessions/shared/steps", "["+sysStep+","+taskStep+"]", &ar)
	var c api.ContextResponse
	b.call(t, 200, "GET", "/v1/sessions/shared/context", "", &c) // b caches it
	for i := 1; i <= 5; i++ {
		a.call(t, 201, "POST", "/v1/sessions/shared/steps", actionStep(i, "from a"), &ar)
		b.call(t, 200, "GET", "/v1/sessions/shared/context", "", &c)
		if c.LastSeq != ar.LastSeq || len(c.Steps) != 2+i {
			t.Fatalf("b is behind a: context last %d steps %v, append last %d", c.LastSeq, c.Steps, ar.LastSeq)
		}
	}
	a.call(t, 200, "GET", "/v1/sessions/shared/context", "", &c) // a caches it
	var cr api.CompactResponse
	b.call(t, 200, "POST", "/v1/sessions/shared/compact", `{"strategy":"keep_last_n","n":2}`, &cr)
	a.call(t, 200, "GET", "/v1/sessions/shared/context", "", &c)
	if fmt.Sprint(c.Steps) != "[1 2 6 7]" || c.LastSeq != cr.LastSeq {
		t.Errorf("a after b's compaction: %v (last %d, compaction %d)", c.Steps, c.LastSeq, cr.LastSeq)
	}
	b.call(t, 204, "DELETE", "/v1/sessions/shared", "", nil)
	a.call(t, 404, "GET", "/v1/sessions/shared/context", "", nil)
	for _, p := range []*process{a, b} {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if err := <-p.done; err != nil {
			t.Errorf("exit: %v", err)
		}
	}
}

// postgresStoreURL returns the URL of the test PostgreSQL (skipping the
// test without one, outside CI) with a schema of its own, named from
// prefix.
func postgresStoreURL(t *testing.T, prefix string) string {
	t.Helper()
	return schemaURL(t, testenv.PostgresURL(t), prefix)
}

// citusStoreURL is postgresStoreURL for the test Citus cluster.
func citusStoreURL(t *testing.T, prefix string) string {
	t.Helper()
	return schemaURL(t, testenv.CitusURL(t), prefix)
}

// schemaURL returns base with a schema of its own, named from prefix.
func schemaURL(t *testing.T, base, prefix string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano()))
	u.RawQuery = q.Encode()
	return u.String()
}

// exercise drives every route of a running server, stops it with SIGTERM
// during a request, and checks a new process on the same store has the
// data.
func exercise(t *testing.T, bin string, p *process, storeURL string) {

	p.call(t, 200, "GET", "/healthz", "", nil)
	p.call(t, 200, "GET", "/readyz", "", nil)
	var doc map[string]any
	p.call(t, 200, "GET", "/v1/openapi.json", "", &doc)

	var sess struct {
		ID      string `json:"id"`
		LastSeq int64  `json:"last_seq"`
	}
	p.call(t, 201, "POST", "/v1/sessions", `{"id":"e2e","user_id":"u1","agent":"coder"}`, &sess)
	p.call(t, 409, "POST", "/v1/sessions", `{"id":"e2e"}`, nil)
	var list api.ListSessionsResponse
	p.call(t, 200, "GET", "/v1/sessions?user_id=u1", "", &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != "e2e" {
		t.Errorf("list: %+v", list)
	}

	var ar api.AppendResponse
	h := p.call(t, 201, "POST", "/v1/sessions/e2e/steps", "["+sysStep+","+taskStep+"]", &ar, "Idempotency-Key", "setup")
	if ar.LastSeq != 2 || h.Get("ETag") != `"2"` {
		t.Errorf("append: %+v %v", ar, h)
	}
	p.call(t, 201, "POST", "/v1/sessions/e2e/steps", "["+sysStep+","+taskStep+"]", &ar, "Idempotency-Key", "setup")
	if ar.LastSeq != 2 {
		t.Errorf("retried append stored again: %+v", ar)
	}
	for i := 1; i <= 30; i++ {
		p.call(t, 201, "POST", "/v1/sessions/e2e/steps", actionStep(i, strings.Repeat(fmt.Sprintf("output %d\n", i), 40)), &ar, "If-Match", fmt.Sprint(ar.LastSeq))
	}
	p.call(t, 409, "POST", "/v1/sessions/e2e/steps", taskStep, nil, "If-Match", `"1"`)
	p.call(t, 201, "POST", "/v1/sessions/e2e/messages",
		`[{"role":"assistant","tool_calls":[{"id":"m1","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool","tool_call_id":"m1","content":"a.go"}]`, &ar)
	// Item by item: the calls first, pending, then their result.
	p.call(t, 201, "POST", "/v1/sessions/e2e/messages", `{"role":"assistant","tool_calls":[{"id":"m2","type":"function","function":{"name":"ls","arguments":"{}"}}]}`, nil)
	p.call(t, 201, "POST", "/v1/sessions/e2e/messages", `{"role":"tool","tool_call_id":"m2","content":"b.go"}`, &ar)
	if len(ar.Updated) != 1 || ar.CompactionSeq != ar.LastSeq {
		t.Errorf("the result of a pending call: %+v", ar)
	}

	var c api.ContextResponse
	p.call(t, 200, "GET", "/v1/sessions/e2e/context?budget=2000&format=anthropic", "", &c)
	if c.Tokens > 2000 || c.DroppedSteps == 0 || c.LastSeq != ar.LastSeq {
		t.Errorf("context: %d tokens, %d dropped, last %d", c.Tokens, c.DroppedSteps, c.LastSeq)
	}
	p.call(t, 422, "GET", "/v1/sessions/e2e/context?budget=3", "", nil)
	p.call(t, 400, "GET", "/v1/sessions/e2e/context?format=xml", "", nil)

	var cr api.CompactResponse
	p.call(t, 200, "POST", "/v1/sessions/e2e/compact", `{"strategy":"summarize","keep_recent":4}`, &cr)
	if !cr.Changed || len(cr.Added) != 1 {
		t.Errorf("compact: %+v", cr)
	}
	p.call(t, 200, "GET", "/v1/sessions/e2e/context?budget=8000", "", &c)
	if len(c.Summarized) == 0 || len(c.Steps) != 2+1+4 {
		t.Errorf("context after compaction: steps %v summarized %v", c.Steps, c.Summarized)
	}
	var rs readSteps
	p.call(t, 200, "GET", "/v1/sessions/e2e/steps?last=5", "", &rs)
	if len(rs.Steps)+len(rs.Compactions) != 5 {
		t.Errorf("last=5: %d steps, %d compactions", len(rs.Steps), len(rs.Compactions))
	}
	var branch struct {
		ID      string `json:"id"`
		ForkSeq int64  `json:"fork_seq"`
	}
	p.call(t, 201, "POST", "/v1/sessions/e2e/fork", `{"at_seq":10,"id":"e2e-branch"}`, &branch)
	if branch.ForkSeq != 10 {
		t.Errorf("fork: %+v", branch)
	}
	p.call(t, 200, "GET", "/v1/sessions/e2e-branch/context", "", &c)
	if len(c.Steps) != 10 {
		t.Errorf("branch context: %v", c.Steps)
	}
	// Recall: every appended turn is indexed; documents of one's own.
	var rsr api.RecallSearchResponse
	p.call(t, 200, "GET", "/v1/recall/search?q=output+17&k=3&scope=session:e2e&before=1&fresh=true", "", &rsr)
	if len(rsr.Hits) == 0 || rsr.Hits[0].SessionID != "e2e" || rsr.Hits[0].Step == 0 || len(rsr.Hits[0].Window) == 0 {
		t.Errorf("recall search: %+v", rsr.Hits)
	}
	p.call(t, 200, "POST", "/v1/recall", `{"documents":[{"id":"runbook","text":"Restart the parser worker with make restart"}]}`, nil)
	p.call(t, 200, "GET", "/v1/recall/runbook", "", nil)
	p.call(t, 400, "GET", "/v1/recall/search?q=x&scope=planet:earth", "", nil)
	p.call(t, 400, "POST", "/v1/recall", `{"documents":[{"id":"x","text":"a","metadata":{"k":7}}]}`, nil)
	p.call(t, 204, "DELETE", "/v1/recall/runbook", "", nil)
	p.call(t, 404, "GET", "/v1/recall/runbook", "", nil)
	// Facts: remember, reinforce, search, forget.
	var rem api.RememberResponse
	p.call(t, 201, "POST", "/v1/users/u1/facts", `{"text":"Prefers table-driven tests","confidence":0.8}`, &rem)
	p.call(t, 200, "POST", "/v1/users/u1/facts", `{"text":"prefers table driven tests"}`, nil)
	var fr api.FactsResponse
	p.call(t, 200, "GET", "/v1/users/u1/facts?q=tests&k=3", "", &fr)
	if len(fr.Facts) != 1 || fr.Facts[0].ID != rem.Fact.ID || fr.Facts[0].Reinforcements != 1 {
		t.Errorf("facts search: %+v", fr.Facts)
	}
	p.call(t, 400, "POST", "/v1/users/u1/facts", `{"text":"x","confidence":7}`, nil)
	p.call(t, 404, "GET", "/v1/users/u2/facts/"+rem.Fact.ID, "", nil)
	p.call(t, 204, "DELETE", "/v1/users/u1/facts/"+rem.Fact.ID+"?reason=e2e", "", nil)
	p.call(t, 404, "GET", "/v1/users/u1/facts/"+rem.Fact.ID, "", nil)
	// The inspector and the MCP endpoint are mounted.
	if resp, err := e2eClient.Get("http://" + p.addr + "/sessions/e2e"); err != nil || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("inspector: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// The MCP endpoint is stateless: initialize, then list the tools,
	// the long-term ones included.
	for _, rpc := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`, `"serverInfo"`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, `"name":"search_memory"`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`, `"name":"remember"`},
	} {
		mreq, _ := http.NewRequest("POST", "http://"+p.addr+"/mcp", strings.NewReader(rpc.body))
		mreq.Header.Set("Content-Type", "application/json")
		mreq.Header.Set("Accept", "application/json, text/event-stream")
		mreq.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if resp, err := e2eClient.Do(mreq); err != nil || resp.StatusCode != 200 {
			t.Errorf("mcp %s: %v %v", rpc.body, resp, err)
		} else {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), rpc.want) {
				t.Errorf("mcp %s: no %s in %s", rpc.body, rpc.want, body)
			}
		}
	}

	// Error paths over the wire.
	p.call(t, 400, "GET", "/v1/sessions/a%0Ab", "", nil)
	p.call(t, 404, "GET", "/v1/sessions/..%2Fetc", "", nil) // any text is an ID: this one names no session
	p.call(t, 404, "GET", "/v1/sessions/missing/context", "", nil)
	p.call(t, 415, "POST", "/v1/sessions/e2e/steps", "", nil)
	p.call(t, 400, "POST", "/v1/sessions/e2e/steps", `{"type":"thought"}`, nil)
	p.call(t, 413, "POST", "/v1/sessions/e2e/steps", `{"type":"task","task":"`+strings.Repeat("x", 9<<20)+`"}`, nil)
	p.call(t, 405, "PUT", "/v1/sessions/e2e", "", nil)
	p.call(t, 204, "DELETE", "/v1/sessions/e2e-branch", "", nil)
	p.call(t, 404, "GET", "/v1/sessions/e2e-branch", "", nil)
	metrics := &bytes.Buffer{}
	resp, err := e2eClient.Get("http://" + p.addr + "/metrics")
	if err == nil {
		_, _ = io.Copy(metrics, resp.Body)
		resp.Body.Close()
	}
	if !strings.Contains(metrics.String(), `agentmem_http_requests_total{method="POST",route="POST /v1/sessions/{id}/steps",status="201"}`) {
		t.Error("metrics lack the appends")
	}

	// SIGTERM with a request in flight: the server finishes it, then
	// exits cleanly.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", "http://"+p.addr+"/v1/sessions/e2e/steps", pr)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "in-flight")
	var wg sync.WaitGroup
	wg.Add(1)
	var inflight *http.Response
	var inflightErr error
	go func() {
		defer wg.Done()
		inflight, inflightErr = e2eClient.Do(req)
	}()
	half := `{"type":"task","task":"sent across the shutdown"}`
	if _, err := pw.Write([]byte(half[:10])); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the request is being read
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := pw.Write([]byte(half[10:])); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	wg.Wait()
	if inflightErr != nil {
		t.Fatalf("the in-flight request failed: %v", inflightErr)
	}
	inflight.Body.Close()
	if inflight.StatusCode != 201 {
		t.Errorf("the in-flight request: %d", inflight.StatusCode)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("exit: %v\n%s", err, p.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit after SIGTERM:\n%s", p.stderr)
	}
	logs := p.stderr.String()
	if !strings.Contains(logs, "shutting down") || !strings.Contains(logs, "msg=stopped") {
		t.Errorf("logs: %s", logs)
	}

	// The data survived: a new process on the same file has it all.
	p2 := startServe(t, bin, nil, "--addr", "127.0.0.1:0", "--store", storeURL)
	p2.call(t, 200, "GET", "/v1/sessions/e2e/steps?last=1", "", &rs)
	if len(rs.Steps) != 1 || !strings.Contains(fmt.Sprint(rs.Steps[0]), "sent across the shutdown") {
		t.Errorf("after restart: %v", rs.Steps)
	}
	_ = p2.cmd.Process.Signal(syscall.SIGINT)
	if err := <-p2.done; err != nil {
		t.Errorf("exit after SIGINT: %v", err)
	}
}

func TestServeDefaultsAndRefusals(t *testing.T) {
	bin := buildBinary(t)
	// With no --store, the SQLite file goes to the data directory.
	data := t.TempDir()
	p := startServe(t, bin, []string{"XDG_DATA_HOME=" + data, "AGENTMEM_ADDR=127.0.0.1:0"})
	want := filepath.Join(data, "agentmem", "agentmem.db")
	if _, err := os.Stat(want); err != nil {
		t.Errorf("default store: %v", err)
	}
	if !strings.Contains(p.stderr.String(), want) {
		t.Errorf("the startup log does not say where the data is: %s", p.stderr)
	}
	p.call(t, 201, "POST", "/v1/sessions", `{}`, nil)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-p.done; err != nil {
		t.Errorf("exit: %v", err)
	}

	// A non-loopback address requires API keys: with a mem:// store,
	// which keeps none, the server refuses to start.
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		cmd := exec.Command(bin, "serve", "--addr", addr, "--store", "mem://")
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "API key") || !strings.Contains(string(out), "mem://") {
			t.Errorf("--addr %s: %v\n%s", addr, err, out)
		}
	}
	// The binary's keys command, then the key against the binary's
	// server on the same default store: once a key exists, anonymous
	// requests are refused.
	keysCmd := exec.Command(bin, "keys", "create", "--tenant", "acme")
	keysCmd.Env = append(os.Environ(), "XDG_DATA_HOME="+data)
	out, err := keysCmd.Output()
	key := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(key, "am_") {
		t.Fatalf("keys create: %v %q", err, out)
	}
	p = startServe(t, bin, []string{"XDG_DATA_HOME=" + data, "AGENTMEM_ADDR=127.0.0.1:0"})
	p.call(t, 401, "GET", "/v1/sessions", "", nil)
	var l api.ListSessionsResponse
	p.call(t, 200, "GET", "/v1/sessions", "", &l, "Authorization", "Bearer "+key)
	if len(l.Sessions) != 0 {
		t.Errorf("acme sees the default tenant's sessions: %+v", l.Sessions)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-p.done; err != nil {
		t.Errorf("exit: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err = exec.CommandContext(ctx, bin, "serve", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--require-keys") || !strings.Contains(string(out), "--tls-cert") || !strings.Contains(string(out), "--store") {
		t.Errorf("--help: %v\n%s", err, out)
	}
}
