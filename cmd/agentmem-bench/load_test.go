package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/agentmem/agentmem/internal/bench/load"
	"github.com/agentmem/agentmem/internal/cli/clitest"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views/recallview"
)

// benchServer serves the real API over a memory store, with a recall
// index that follows it, and counts the requests by route.
func benchServer(t *testing.T) (*httptest.Server, *store.Store, *atomic.Int64) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	follower, stop := recallview.Start(st, st, &recallview.Indexer{Index: ix, Store: st}, recallview.FollowerOptions{})
	t.Cleanup(stop)
	// The process collector reports this test process's CPU time as the
	// server's, which the run reads from /metrics.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv, err := server.New(server.Config{Store: st, Recall: ix, RecallFollower: follower, Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	var contexts atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/context") {
			contexts.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, st, &contexts
}

func TestBenchLoad(t *testing.T) {
	for _, op := range []string{"append", "context", "loop", "mixed"} {
		t.Run(op, func(t *testing.T) {
			ts, st, contexts := benchServer(t)
			code, stdout, stderr := runCLI(t, nil, "", "load", "--server", ts.URL, "--op", op,
				"--clients", "3", "--sessions", "2", "--steps", "40", "--duration", "300ms", "--warmup", "50ms", "--budget", "2000")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			res := clitest.DecodeLine[load.Result](t, stdout)
			if res.Op != op || res.Clients != 3 || res.Sessions != 2 || res.Steps != 40 || res.Failed != 0 || len(res.Errors) != 0 {
				t.Errorf("result: %+v", res)
			}
			if res.Requests < 1 || res.RequestsPerSecond <= 0 || res.Latency.P50 <= 0 || res.Latency.P99 < res.Latency.P50 || res.Latency.Max < res.Latency.P99 {
				t.Errorf("figures: %+v", res)
			}
			if op != "context" && (res.IndexLag == nil || res.IndexLag.Changes < 1 || res.IndexLag.P99 < res.IndexLag.P50) {
				t.Errorf("index lag: %+v", res.IndexLag)
			}
			// The server (this process) spent CPU on the run's requests.
			if res.ServerCPU == nil || res.ServerCPU.Seconds <= 0 || res.ServerCPU.MsPerOp <= 0 {
				t.Errorf("server CPU: %+v", res.ServerCPU)
			}
			if op == "mixed" && (len(res.Ops) < 4 || res.Ops["append"] < 1) {
				t.Errorf("mixed ops: %+v", res.Ops)
			}
			if op != "append" && op != "mixed" && (res.ContextTokens <= 0 || res.ContextTokens > 2000 || res.ContextSteps < 2 || contexts.Load() < res.Requests) {
				t.Errorf("context figures: %+v, %d context requests served", res, contexts.Load())
			}
			// The seeded sessions are deleted at the end.
			l, err := st.List(t.Context(), store.ListRequest{})
			if err != nil || len(l.Sessions) != 0 {
				t.Errorf("sessions left: %+v %v", l, err)
			}
		})
	}
}

func TestBenchLoadBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--server", "ftp://x"},
		{"--server", "http://127.0.0.1:1", "--op", "delete"},
		{"--server", "http://127.0.0.1:1", "--clients", "0"},
		{"--server", "http://127.0.0.1:1", "--steps", "1"},
		{"--server", "http://127.0.0.1:1", "--format", "xml"},
		{"--server", "http://127.0.0.1:1", "--duration", "0s"},
	} {
		code, _, stderr := runCLI(t, nil, "", append([]string{"load"}, args...)...)
		if code != 2 || stderr == "" {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
	// A server that is not there is a failure (1), not a usage error.
	code, _, stderr := runCLI(t, nil, "", "load", "--server", "http://127.0.0.1:1", "--duration", "100ms")
	if code != 1 || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("no server: exit %d: %s", code, stderr)
	}
}
