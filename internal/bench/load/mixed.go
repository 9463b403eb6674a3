package load

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The mixed operation of agentmem-bench load: a soak of the traffic a
// server sees, each client drawing its next request at random:
//
//	45%  append one action step to a session (a seeded one or its own)
//	25%  read a session's context
//	 8%  create a session of its own
//	 7%  fork a session of its own (or a seeded one) at its last step
//	 7%  delete a session of its own
//	 8%  search recall (scoped to one of its sessions)
//
// A client keeps at most mixedOwnMax sessions of its own, deleting the
// oldest first. So the data grows with the appends to the seeded sessions
// and the sessions in flight, not without bound. With --op mixed the
// report also has the server's resident memory
// (process_resident_memory_bytes in /metrics), sampled every second of
// the measured period.

const mixedOwnMax = 8

// mixedClient is one client's state in a mixed run.
type mixedClient struct {
	l      *loadRun
	c      int
	rng    *rand.Rand
	seeded []string
	own    []string
	next   int
	tmpl   [][]byte
	counts map[string]int64
}

func (l *loadRun) newMixedClient(c int, seeded []string, templates [][]byte) *mixedClient {
	return &mixedClient{l: l, c: c, rng: rand.New(rand.NewPCG(l.f.Seed, uint64(c))), seeded: seeded, tmpl: templates, counts: map[string]int64{}}
}

// step runs one request and returns its status, the status it wanted,
// the response size and any transport error.
func (m *mixedClient) step(ctx context.Context, n int) (code, want, size int, err error) {
	pick := m.rng.IntN(100)
	switch {
	case pick < 45:
		id := m.session()
		key := fmt.Sprintf("bench-%s-%d-%d", m.l.run, m.c, n)
		body := bytes.ReplaceAll(m.tmpl[(m.c+n)%len(m.tmpl)], []byte(callPlaceholder), []byte("call_"+key))
		m.counts["append"]++
		code, size, err = m.l.request(ctx, "POST", "/v1/sessions/"+id+"/steps", body, key)
		return code, http.StatusCreated, size, err
	case pick < 70:
		m.counts["context"]++
		code, size, err = m.l.request(ctx, "GET", m.l.contextPath(m.session()), nil, "")
		return code, http.StatusOK, size, err
	case pick < 78 || len(m.own) == 0:
		return m.create(ctx, "", "")
	case pick < 85:
		parent := m.session()
		return m.create(ctx, parent, "/fork")
	case pick < 92:
		id := m.own[0]
		m.own = m.own[1:]
		m.counts["delete"]++
		code, size, err = m.l.request(ctx, "DELETE", "/v1/sessions/"+id, nil, "")
		return code, http.StatusNoContent, size, err
	default:
		m.counts["recall"]++
		path := "/v1/recall/search?k=5&q=" + []string{"error", "parser", "timeout", "config", "test"}[m.rng.IntN(5)] + "&scope=session:" + m.session()
		code, size, err = m.l.request(ctx, "GET", path, nil, "")
		return code, http.StatusOK, size, err
	}
}

// session picks a seeded session or one of the client's own.
func (m *mixedClient) session() string {
	if len(m.own) > 0 && m.rng.IntN(2) == 0 {
		return m.own[m.rng.IntN(len(m.own))]
	}
	return m.seeded[m.rng.IntN(len(m.seeded))]
}

// create creates a session of the client's own (a fork of parent when
// set), deleting its oldest one first when it has mixedOwnMax.
func (m *mixedClient) create(ctx context.Context, parent, fork string) (code, want, size int, err error) {
	id := fmt.Sprintf("bench-%s-c%d-%d", m.l.run, m.c, m.next)
	m.next++
	path, op, body := "/v1/sessions", "create", `{"id":"`+id+`","user_id":"bench"}`
	if fork != "" { // a branch has its parent's user
		path, op, body = "/v1/sessions/"+parent+fork, "fork", `{"id":"`+id+`"}`
	}
	m.counts[op]++
	code, size, err = m.l.request(ctx, "POST", path, []byte(body), "")
	if err == nil && code == http.StatusCreated {
		m.own = append(m.own, id)
		if len(m.own) > mixedOwnMax {
			old := m.own[0]
			m.own = m.own[1:]
			_, _, _ = m.l.request(ctx, "DELETE", "/v1/sessions/"+old, nil, "")
		}
	}
	return code, http.StatusCreated, size, err
}

// cleanup deletes the client's own sessions.
func (m *mixedClient) cleanup(ctx context.Context) {
	for _, id := range m.own {
		_, _, _ = m.l.request(ctx, "DELETE", "/v1/sessions/"+id, nil, "")
	}
}

// RSSReport is the server's resident memory over a run, in MiB. It holds
// the process's resident size (process_resident_memory_bytes), which
// counts the pages of files the process maps, such as a SQLite
// database's. It holds the Go heap in use (go_memstats_heap_inuse_bytes),
// which is what the context cache bounds.
type RSSReport struct {
	// HeapStart, HeapFirstHalfMax, HeapSecondHalfMax and HeapEnd are the
	// Go heap's samples, as the resident ones below.
	HeapStart         float64 `json:"heap_start_mib"`
	HeapFirstHalfMax  float64 `json:"heap_first_half_max_mib"`
	HeapSecondHalfMax float64 `json:"heap_second_half_max_mib"`
	HeapEnd           float64 `json:"heap_end_mib"`
	Start             float64 `json:"start_mib"`
	// FirstHalfMax and SecondHalfMax are the largest samples of each half
	// of the measured period: a server whose memory is bounded has the
	// second no larger than the first, give or take the GC.
	FirstHalfMax  float64 `json:"first_half_max_mib"`
	SecondHalfMax float64 `json:"second_half_max_mib"`
	End           float64 `json:"end_mib"`
	Samples       int     `json:"samples"`
}

// rssSampler keeps the server's resident size and Go heap, sampled
// every second.
type rssSampler struct {
	s       *sampler
	samples []float64
	heap    []float64
}

func (l *loadRun) sampleRSS(ctx context.Context) *rssSampler {
	r := &rssSampler{}
	r.s = startSampler(ctx, time.Second, func() {
		if v, h, ok := l.readRSS(ctx); ok {
			r.samples = append(r.samples, v)
			r.heap = append(r.heap, h)
		}
	})
	return r
}

// readRSS reads process_resident_memory_bytes and
// go_memstats_heap_inuse_bytes from /metrics, in MiB.
func (l *loadRun) readRSS(ctx context.Context) (rss, heap float64, ok bool) {
	var gotRSS, gotHeap bool
	l.metricLines(ctx, func(line string) {
		if v, found := strings.CutPrefix(line, "process_resident_memory_bytes "); found {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			rss, gotRSS = f/(1<<20), err == nil
		} else if v, found := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); found {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			heap, gotHeap = f/(1<<20), err == nil
		}
	})
	return rss, heap, gotRSS && gotHeap
}

func (s *rssSampler) finish() *RSSReport {
	s.s.halt()
	if len(s.samples) == 0 {
		return nil
	}
	n := len(s.samples)
	r := &RSSReport{Start: roundTo(s.samples[0], 1), End: roundTo(s.samples[n-1], 1), Samples: n,
		HeapStart: roundTo(s.heap[0], 1), HeapEnd: roundTo(s.heap[n-1], 1)}
	for i := range n {
		if i < n/2 {
			r.FirstHalfMax = max(r.FirstHalfMax, roundTo(s.samples[i], 1))
			r.HeapFirstHalfMax = max(r.HeapFirstHalfMax, roundTo(s.heap[i], 1))
		} else {
			r.SecondHalfMax = max(r.SecondHalfMax, roundTo(s.samples[i], 1))
			r.HeapSecondHalfMax = max(r.HeapSecondHalfMax, roundTo(s.heap[i], 1))
		}
	}
	return r
}
