package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
)

// TestScaleOutPostgres runs two server processes on one PostgreSQL
// database, the way a deployment scales out, with API keys of two
// tenants. 64 concurrent clients, half on each process, append to shared
// sessions (with Idempotency-Key, retrying a request whose answer was
// lost) and read their context; then every step acknowledged must be in
// its session exactly once, nothing else may be, and no request may have
// failed. Finally tenant B probes every route of both processes with
// tenant A's IDs and gets 404 for each.
// resultRE matches the result texts of the scale-out test's steps.
var resultRE = regexp.MustCompile(`client-[0-9]+-round-[0-9]+`)

func TestScaleOutPostgres(t *testing.T) { scaleOut(t, postgresStoreURL(t, "server_scaleout")) }

// TestScaleOutCitus is TestScaleOutPostgres on a Citus cluster: the
// tenants' sessions, keys and feed are spread over its workers.
func TestScaleOutCitus(t *testing.T) { scaleOut(t, citusStoreURL(t, "server_scaleout")) }

func scaleOut(t *testing.T, storeURL string) {
	bin := buildBinary(t)

	key := func(tenant string) string {
		t.Helper()
		out, err := exec.Command(bin, "keys", "create", "--tenant", tenant, "--store", storeURL).Output()
		k := strings.TrimSpace(string(out))
		if err != nil || !strings.HasPrefix(k, "am_") {
			t.Fatalf("keys create --tenant %s: %v %q", tenant, err, out)
		}
		return k
	}
	keyA, keyB := key("tenant-a"), key("tenant-b")
	procs := []*process{
		startServe(t, bin, nil, "--addr", "127.0.0.1:0", "--store", storeURL),
		startServe(t, bin, nil, "--addr", "127.0.0.1:0", "--store", storeURL),
	}
	authA := []string{"Authorization", "Bearer " + keyA}
	authB := []string{"Authorization", "Bearer " + keyB}

	const (
		sessions = 8
		clients  = 64
		rounds   = 12
	)
	for i := range sessions {
		id := fmt.Sprintf("shared-%d", i)
		procs[i%2].call(t, 201, "POST", "/v1/sessions", `{"id":"`+id+`","user_id":"u1"}`, nil, authA...)
		procs[(i+1)%2].call(t, 201, "POST", "/v1/sessions/"+id+"/steps", "["+sysStep+","+taskStep+"]", nil, authA...)
	}

	// Each client appends rounds steps, each with a unique result text,
	// alternating with context reads, through its process.
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	send := func(p *process, method, path, body string, headers ...string) (int, []byte, error) {
		req, err := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return resp.StatusCode, data, err
	}
	var (
		mu     sync.Mutex
		failed []string
		acked  = map[string]int{} // unique result -> session index
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failed) < 20 {
			failed = append(failed, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := procs[c%2]
			for r := range rounds {
				s := (c + r) % sessions
				id := fmt.Sprintf("shared-%d", s)
				result := fmt.Sprintf("client-%d-round-%d", c, r)
				ikey := []string{"Idempotency-Key", result}
				// A transport error loses the answer, not necessarily the
				// write: retry with the same key, as a client must.
				var code int
				var body []byte
				var err error
				for attempt := 0; attempt < 3; attempt++ {
					code, body, err = send(p, "POST", "/v1/sessions/"+id+"/steps", actionStep(1000*c+r, result), append(ikey, authA...)...)
					if err == nil {
						break
					}
				}
				if err != nil || code != 201 {
					fail("append %s by client %d: %d %v %s", id, c, code, err, body)
					continue
				}
				mu.Lock()
				acked[result] = s
				mu.Unlock()
				code, body, err = send(p, "GET", "/v1/sessions/"+id+"/context?budget=8000", "", authA...)
				if err != nil || code != 200 {
					fail("context %s by client %d: %d %v %s", id, c, code, err, body)
					continue
				}
				var cr api.ContextResponse
				if err := json.Unmarshal(body, &cr); err != nil || len(cr.Steps) == 0 || cr.Tokens <= 0 || cr.Tokens > 8000 {
					fail("context %s by client %d: %v: %.300s", id, c, err, body)
				}
			}
		}()
	}
	wg.Wait()
	for _, f := range failed {
		t.Error(f)
	}
	if len(acked) != clients*rounds {
		t.Fatalf("%d appends acknowledged, want %d", len(acked), clients*rounds)
	}

	// Every acknowledged step is in its session exactly once, read from
	// either process.
	total := 0
	for s := range sessions {
		id := fmt.Sprintf("shared-%d", s)
		var rs readSteps
		procs[s%2].call(t, 200, "GET", "/v1/sessions/"+id+"/steps?limit=10000", "", &rs, authA...)
		// The steps holding each result text (a step may repeat its
		// result, e.g. as its observation).
		holding := map[string]int{}
		for _, st := range rs.Steps {
			raw, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range resultRE.FindAllString(string(raw), -1) {
				holding[m]++
			}
			seen := map[string]bool{}
			for _, m := range resultRE.FindAllString(string(raw), -1) {
				if seen[m] {
					holding[m]--
				}
				seen[m] = true
			}
		}
		want := 2
		for result, in := range acked {
			if in != s {
				continue
			}
			want++
			if n := holding[result]; n != 1 {
				t.Errorf("%s: step %q stored %d times", id, result, n)
			}
		}
		if len(rs.Steps) != want || rs.LastSeq != int64(want) {
			t.Errorf("%s: %d steps, last seq %d; want %d", id, len(rs.Steps), rs.LastSeq, want)
		}
		if len(holding) != want-2 {
			t.Errorf("%s: %d distinct results stored, want %d", id, len(holding), want-2)
		}
		for i, st := range rs.Steps {
			if n := st.Info().Number; n != i+1 {
				t.Errorf("%s: step %d has number %d: a gap or a duplicate", id, i+1, n)
				break
			}
		}
		total += len(rs.Steps) - 2
	}
	if total != clients*rounds {
		t.Errorf("%d steps stored, want %d", total, clients*rounds)
	}

	// Tenant A's session, a branch and a fact to aim at.
	procs[0].call(t, 201, "POST", "/v1/sessions/shared-0/fork", `{"at_seq":3,"id":"shared-0-branch"}`, nil, authA...)
	var rem api.RememberResponse
	procs[1].call(t, 201, "POST", "/v1/users/u1/facts", `{"text":"Owns the SECRET-ZEBRA account"}`, &rem, authA...)
	procs[0].call(t, 201, "POST", "/v1/sessions", `{"id":"b1"}`, nil, authB...)
	var before readSteps
	procs[0].call(t, 200, "GET", "/v1/sessions/shared-0/steps?limit=10000", "", &before, authA...)

	// The cross-tenant probe: every route that takes an ID, with B's key
	// and A's IDs, on both processes, is 404, as for an ID nobody has.
	for _, p := range procs {
		for pattern, pr := range probes("shared-0") {
			for _, id := range []string{"shared-0", "shared-0-branch"} {
				path := strings.Replace(pr.path, "/shared-0", "/"+id, 1)
				code, body, err := send(p, pr.method, path, pr.body, append(append([]string{}, pr.headers...), authB...)...)
				if err != nil || code != 404 {
					t.Errorf("%s (%s %s) with B's key: %d %v %s", pattern, pr.method, path, code, err, body)
				}
			}
		}
		for _, pr := range [][2]string{
			{"GET", "/v1/recall/" + url.PathEscape("shared-0#3")},
			{"DELETE", "/v1/recall/" + url.PathEscape("shared-0#3")},
			{"GET", "/v1/users/u1/facts/" + rem.Fact.ID},
			{"DELETE", "/v1/users/u1/facts/" + rem.Fact.ID},
		} {
			code, body, err := send(p, pr[0], pr[1], "", authB...)
			if err != nil || code != 404 {
				t.Errorf("%s %s with B's key: %d %v %s", pr[0], pr[1], code, err, body)
			}
		}
		for _, path := range []string{"/v1/sessions", "/v1/recall/search?q=client", "/v1/users/u1/facts?q=SECRET-ZEBRA"} {
			code, body, err := send(p, "GET", path, "", authB...)
			if err != nil || code != 200 || strings.Contains(string(body), "shared-") || strings.Contains(string(body), "ZEBRA") {
				t.Errorf("GET %s with B's key: %d %v %.300s", path, code, err, body)
			}
		}
	}
	// Nothing B tried changed A's data; A still reaches it.
	var after readSteps
	procs[1].call(t, 200, "GET", "/v1/sessions/shared-0/steps?limit=10000", "", &after, authA...)
	if after.LastSeq != before.LastSeq || len(after.Steps) != len(before.Steps) {
		t.Errorf("B's probes changed shared-0: last seq %d -> %d", before.LastSeq, after.LastSeq)
	}
	procs[0].call(t, 200, "GET", "/v1/sessions/shared-0-branch", "", nil, authA...)
	procs[0].call(t, 200, "GET", "/v1/users/u1/facts/"+rem.Fact.ID, "", nil, authA...)
	procs[1].call(t, 200, "GET", "/v1/recall/"+url.PathEscape("shared-0#3"), "", nil, authA...)

	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if err := <-p.done; err != nil {
			t.Errorf("exit: %v\n%s", err, p.stderr)
		}
	}
}
