package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// IndexLag is how far the server's recall index, which follows the
// session log in the background, was behind the appends of a run, as the
// server reports it. It has the distribution of the per-change indexing
// lag (agentmem_recall_index_lag_seconds in /metrics) of the changes
// indexed from the start of the measured period until the index caught
// up after it, so the changes still waiting at its end count too. That is a histogram, so the percentiles are the upper bounds
// of their buckets, and -1 when above the largest, 60 s. It also has the
// largest lag /readyz showed while sampling it every 100ms, and how long
// after the run a fresh=true search took (the index catching up with the
// last appends).
type IndexLag struct {
	Changes    int64   `json:"changes"`
	P50        float64 `json:"p50_ms_at_most"`
	P99        float64 `json:"p99_ms_at_most"`
	MaxBehind  float64 `json:"max_behind_ms"`
	CatchUpMs  float64 `json:"catch_up_ms"`
	SampleNote string  `json:"note,omitempty"`
}

// lagHistogram is the cumulative bucket counts of the lag histogram, by
// upper bound in seconds (+Inf included).
type lagHistogram map[float64]int64

const lagMetric = "agentmem_recall_index_lag_seconds_bucket"

// readLagHistogram reads the lag histogram from the server's /metrics; a
// server without a recall index that follows the log has none (nil).
func (l *loadRun) readLagHistogram(ctx context.Context) lagHistogram {
	h := lagHistogram{}
	l.metricLines(ctx, func(line string) {
		if !strings.HasPrefix(line, lagMetric+"{") {
			return
		}
		_, rest, ok := strings.Cut(line, `le="`)
		if !ok {
			return
		}
		le, rest, ok := strings.Cut(rest, `"`)
		if !ok {
			return
		}
		bound := math.Inf(1)
		if le != "+Inf" {
			var err error
			if bound, err = strconv.ParseFloat(le, 64); err != nil {
				return
			}
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(rest[strings.LastIndex(rest, " ")+1:]), 64)
		if err != nil {
			return
		}
		h[bound] = int64(n)
	})
	if len(h) == 0 {
		return nil
	}
	return h
}

// lagBetween summarizes the changes indexed between two readings.
func lagBetween(before, after lagHistogram) (n int64, p50, p99 float64) {
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 {
		return 0, 0, 0
	}
	quantile := func(q float64) float64 {
		want := int64(math.Ceil(q * float64(total)))
		for _, b := range bounds {
			if after[b]-before[b] >= want {
				if math.IsInf(b, 1) {
					return -1 // above the largest bucket (JSON has no infinity)
				}
				return b * 1000
			}
		}
		return -1
	}
	return total, quantile(0.5), quantile(0.99)
}

// sampler calls a function at once and then every interval, in a
// goroutine of its own, until stopped: it samples the server during a
// run. Once stop has returned, what the function wrote is the caller's to
// read.
type sampler struct {
	stop chan struct{}
	done chan struct{}
}

func startSampler(ctx context.Context, every time.Duration, sample func()) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			sample()
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// halt stops the sampler and waits for its last sample.
func (s *sampler) halt() {
	close(s.stop)
	<-s.done
}

// behindSampler keeps the largest recall_index.lag_seconds of /readyz,
// sampled every 100ms, in milliseconds.
type behindSampler struct {
	s   *sampler
	max float64
}

func (l *loadRun) sampleBehind(ctx context.Context) *behindSampler {
	b := &behindSampler{}
	b.s = startSampler(ctx, 100*time.Millisecond, func() {
		code, data, err := l.do(ctx, "GET", "/readyz", nil)
		if err != nil || code != http.StatusOK {
			return
		}
		var r struct {
			RecallIndex *struct {
				LagSeconds float64 `json:"lag_seconds"`
			} `json:"recall_index"`
		}
		if json.Unmarshal(data, &r) == nil && r.RecallIndex != nil {
			b.max = max(b.max, r.RecallIndex.LagSeconds*1000)
		}
	})
	return b
}

func (b *behindSampler) finish() float64 {
	b.s.halt()
	return b.max
}

// metricLines reads the server's /metrics and calls each with every line;
// false when it cannot be read.
func (l *loadRun) metricLines(ctx context.Context, each func(line string)) bool {
	code, data, err := l.do(ctx, "GET", "/metrics", nil)
	if err != nil || code != http.StatusOK {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		each(sc.Text())
	}
	return true
}

// readCPU reads process_cpu_seconds_total, the server process's CPU
// time, from /metrics; false when the server does not report it.
func (l *loadRun) readCPU(ctx context.Context) (seconds float64, ok bool) {
	l.metricLines(ctx, func(line string) {
		if v, found := strings.CutPrefix(line, "process_cpu_seconds_total "); found {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			seconds, ok = f, err == nil
		}
	})
	return seconds, ok
}

// catchUp times a fresh=true recall search made right after the run: how
// long the index took to reach the last appends.
func (l *loadRun) catchUp(ctx context.Context) (float64, bool) {
	t0 := time.Now()
	code, _, err := l.do(ctx, "GET", "/v1/recall/search?q=bench&k=1&fresh=true", nil)
	if err != nil || code != http.StatusOK {
		return 0, false
	}
	return roundTo(float64(time.Since(t0).Microseconds())/1000, 2), true
}

// waitIndexed waits until the server's recall index has every write made
// so far (fresh searches, each bounded by the server, for at most two
// minutes) and says how long it took. It returns false for a server
// without such an index (or one that does not know fresh=true).
func (l *loadRun) waitIndexed(ctx context.Context) (float64, bool) {
	t0 := time.Now()
	for time.Since(t0) < 2*time.Minute && ctx.Err() == nil {
		code, _, err := l.do(ctx, "GET", "/v1/recall/search?q=bench&k=1&fresh=true", nil)
		switch {
		case err != nil:
			return 0, false
		case code == http.StatusOK:
			return roundTo(float64(time.Since(t0).Microseconds())/1000, 1), true
		case code != http.StatusServiceUnavailable: // 400 (no fresh), 501 (no recall)
			return 0, false
		}
	}
	return 0, false
}
