// Package proxybench measures what agentmem's proxy routes add to a call:
// the same requests sent straight to a stand-in upstream and through the
// proxy of a server in this process, by concurrent clients
// (agentmem-bench proxy).
package proxybench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// Result is what a run measures (agentmem-bench proxy prints it as JSON).
type Result struct {
	Clients  int    `json:"clients"`
	Turns    int    `json:"turns"`
	Requests int    `json:"requests"`
	Mode     string `json:"mode"`
	Budget   int    `json:"budget"`
	// UpstreamDelayMS is how long the stand-in upstream took to answer.
	UpstreamDelayMS float64 `json:"upstream_delay_ms"`
	// Latencies of the same requests sent straight to the stand-in
	// upstream and through the proxy, and the proxy's overhead (the
	// difference of the percentiles), in milliseconds.
	DirectP50   float64 `json:"direct_p50_ms"`
	DirectP99   float64 `json:"direct_p99_ms"`
	ProxyP50    float64 `json:"proxy_p50_ms"`
	ProxyP99    float64 `json:"proxy_p99_ms"`
	OverheadP50 float64 `json:"overhead_p50_ms"`
	OverheadP99 float64 `json:"overhead_p99_ms"`
	// BodyKB is the mean size of a request body the client sent.
	BodyKB     float64 `json:"body_kb"`
	GOMAXPROCS int     `json:"gomaxprocs"`
}

// benchHistory is a session's history of turns, as a client holds it.
func benchHistory(turns int) []any {
	h := []any{map[string]any{"role": "system", "content": "You are a helpful agent. Answer briefly."}}
	filler := strings.Repeat("some words of the conversation ", 6)
	for i := range turns {
		h = append(h, map[string]any{"role": "user", "content": fmt.Sprintf("Question %d: %s", i, filler)})
		if i%5 == 4 {
			id := fmt.Sprintf("call_%d", i)
			h = append(h, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function",
				"function": map[string]any{"name": "lookup", "arguments": fmt.Sprintf(`{"q":"question %d"}`, i)}}}})
			h = append(h, map[string]any{"role": "tool", "tool_call_id": id, "content": strings.Repeat(fmt.Sprintf("result %d ", i), 100)})
		}
		h = append(h, map[string]any{"role": "assistant", "content": fmt.Sprintf("Answer %d: %s", i, filler)})
	}
	return h
}

// Config is a run's shape.
type Config struct {
	// Clients send their requests concurrently, each on a session of its
	// own that holds Turns turns (a user message, then an assistant reply;
	// every fifth a tool call with a 1 KB result) before the measurement.
	Clients, Turns int
	// Requests is how many requests each client sends, each both ways.
	Requests int
	// Budget is X-Agentmem-Budget of the proxied requests (0: the model's
	// default).
	Budget int
	// Mode is "whole" (each request resends the history, as most agents
	// do) or "new" (only the new message).
	Mode string
	// UpstreamDelay is how long the stand-in upstream takes to answer.
	UpstreamDelay time.Duration
}

// Run runs the benchmark; measuring is called when the measured requests
// start, and the function it returns when they end.
func Run(ctx context.Context, cfg Config, measuring func() (stop func() error, err error)) (*Result, error) {
	e, err := proxytest.Start(nil)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	e.Upstream.Fixed = &proxytest.Reply{Text: "ok"}
	e.Upstream.Delay = cfg.UpstreamDelay
	// The sessions, filled straight through the service.
	histories := make([][]any, cfg.Clients)
	for c := range cfg.Clients {
		histories[c] = benchHistory(cfg.Turns)
		raw, _ := json.Marshal(histories[c])
		var msgs []agentmem.Message
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return nil, err
		}
		id := "bench-" + strconv.Itoa(c)
		if _, err := e.Sessions.Create(ctx, store.CreateRequest{ID: id}); err != nil {
			return nil, err
		}
		for len(msgs) > 0 {
			n := min(len(msgs), 500)
			if _, err := e.Sessions.AppendMessages(ctx, sessions.MessagesRequest{SessionID: id, Messages: msgs[:n]}); err != nil {
				return nil, err
			}
			msgs = msgs[n:]
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * cfg.Clients}}
	post := func(url, session string, body []byte) (map[string]any, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		if err != nil {
			return nil, 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		if session != "" {
			req.Header.Set(proxy.HeaderSession, session)
			if cfg.Budget > 0 {
				req.Header.Set(proxy.HeaderBudget, strconv.Itoa(cfg.Budget))
			}
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return nil, 0, err
		}
		raw, err := io.ReadAll(resp.Body)
		d := time.Since(start)
		resp.Body.Close()
		if err != nil {
			return nil, 0, err
		}
		if resp.StatusCode != 200 {
			return nil, 0, fmt.Errorf("%s: %d %s", url, resp.StatusCode, raw)
		}
		var out struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 {
			return nil, 0, fmt.Errorf("%s: a completion without choices: %s", url, raw)
		}
		return out.Choices[0].Message, d, nil
	}
	// Each client's history as JSON, grown message by message as an SDK
	// re-encodes it (the same bytes each time).
	type benchClient struct {
		id   string
		hist []byte // without its closing bracket
	}
	cls := make([]*benchClient, cfg.Clients)
	for c := range cfg.Clients {
		hist, _ := json.Marshal(histories[c])
		cls[c] = &benchClient{id: "bench-" + strconv.Itoa(c), hist: hist[:len(hist)-1]}
	}
	// exchange sends a client's r-th request both ways and adds the reply
	// to its history.
	exchange := func(c *benchClient, r int) (dd, dp time.Duration, size int, err error) {
		add := func(m any) []byte {
			b, _ := json.Marshal(m)
			c.hist = append(append(c.hist, ','), b...)
			return b
		}
		request := func(msgs []byte) []byte {
			return append(append([]byte(`{"model":"gpt-4o","temperature":0,"messages":`), msgs...), ']', '}')
		}
		next := add(map[string]any{"role": "user", "content": fmt.Sprintf("New question %d.", r)})
		directBody := request(c.hist)
		body := directBody
		if cfg.Mode == "new" {
			body = request(append([]byte{'['}, next...))
		}
		if _, dd, err = post(e.Upstream.OpenAIBaseURL()+"/chat/completions", "", directBody); err != nil {
			return 0, 0, 0, err
		}
		reply, dp, err := post(e.Server.URL+"/v1/chat/completions", c.id, body)
		if err != nil {
			return 0, 0, 0, err
		}
		add(reply)
		return dd, dp, len(body), nil
	}
	var (
		mu             sync.Mutex
		direct, viaPxy []time.Duration
		bodyBytes      int64
		firstErr       error
	)
	// run runs fn for every client concurrently.
	run := func(fn func(c *benchClient) error) error {
		var wg sync.WaitGroup
		for _, c := range cls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(c); err != nil {
					mu.Lock()
					firstErr = cmp(firstErr, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return firstErr
	}
	// The first request of each session warms its caches (and the
	// proxy's memo of its history); all are done before the measurement
	// starts, so that none runs beside it.
	if err := run(func(c *benchClient) error {
		_, _, _, err := exchange(c, 0)
		return err
	}); err != nil {
		return nil, err
	}
	runtime.GC() // of the set-up's garbage
	stop, err := measuring()
	if err != nil {
		return nil, err
	}
	err = run(func(c *benchClient) error {
		for r := 1; r <= cfg.Requests; r++ {
			dd, dp, size, err := exchange(c, r)
			if err != nil {
				return err
			}
			mu.Lock()
			direct, viaPxy = append(direct, dd), append(viaPxy, dp)
			bodyBytes += int64(size)
			mu.Unlock()
		}
		return nil
	})
	if perr := stop(); err == nil {
		err = perr
	}
	if err != nil {
		return nil, err
	}
	pct := func(ds []time.Duration, p float64) float64 {
		slices.Sort(ds)
		i := min(len(ds)-1, int(p*float64(len(ds))))
		return float64(ds[i].Microseconds()) / 1000
	}
	res := &Result{Clients: cfg.Clients, Turns: cfg.Turns, Requests: cfg.Requests, Mode: cfg.Mode, Budget: cfg.Budget, UpstreamDelayMS: float64(cfg.UpstreamDelay) / float64(time.Millisecond), GOMAXPROCS: runtime.GOMAXPROCS(0),
		DirectP50: pct(direct, 0.5), DirectP99: pct(direct, 0.99), ProxyP50: pct(viaPxy, 0.5), ProxyP99: pct(viaPxy, 0.99),
		BodyKB: float64(bodyBytes) / float64(len(viaPxy)) / 1024}
	res.OverheadP50, res.OverheadP99 = res.ProxyP50-res.DirectP50, res.ProxyP99-res.DirectP99
	return res, nil
}

// cmp keeps the first error.
func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
