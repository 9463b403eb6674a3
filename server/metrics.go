package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/agentmem/agentmem/recall"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics.
type metrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	storeErrors *prometheus.CounterVec
	cache       *prometheus.CounterVec
	// cacheBytes and cacheSessions are the session cache's accounted size
	// and the number of sessions it holds.
	cacheBytes    prometheus.Gauge
	cacheSessions prometheus.Gauge
	handler       http.Handler
	reg           prometheus.Registerer
}

// newMetrics registers the server's metrics with reg, or with a registry
// of its own (with the Go and process collectors) when reg is nil.
func newMetrics(reg prometheus.Registerer, gather prometheus.Gatherer) (*metrics, error) {
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg, gather = r, r
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_http_requests_total",
			Help: "HTTP requests served, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentmem_http_request_duration_seconds",
			Help:    "Time to serve HTTP requests, by route pattern, method and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method", "status"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_store_errors_total",
			Help: "Store calls that failed for a reason other than the request (the store was unreachable or broken), by operation.",
		}, []string{"op"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_session_cache_total",
			Help: "Session memory cache events: hit, miss (loaded from the store), catchup (applied entries another writer appended), reload (rebuilt after a compaction), evict (dropped to stay within the cache's bytes) and too_large (a session larger than the whole cache, served without being kept).",
		}, []string{"event"}),
		cacheBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agentmem_session_cache_bytes",
			Help: "The accounted size of the session memories the context cache holds (bounded by --cache-bytes): their steps' JSON and the rendered forms they keep, estimated high.",
		}),
		cacheSessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agentmem_session_cache_sessions",
			Help: "The number of session memories the context cache holds.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.storeErrors, m.cache, m.cacheBytes, m.cacheSessions} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	if gather == nil {
		if g, ok := reg.(prometheus.Gatherer); ok {
			gather = g
		} else {
			gather = prometheus.DefaultGatherer
		}
	}
	m.handler = promhttp.HandlerFor(gather, promhttp.HandlerOpts{})
	m.reg = reg
	return m, nil
}

// watchIndex registers the metrics of a recall index that follows the
// store's log, and observes the batches it indexes.
func (m *metrics) watchIndex(f *recall.Follower) error {
	lag := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "agentmem_recall_index_lag_seconds",
		Help:    "For each change to the log (an appended entry, a fork, a deletion), how long after its commit the recall index had applied it.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	})
	batches := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "agentmem_recall_index_batch_changes",
		Help:    "Changes of the log applied to the recall index per batch.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 7),
	})
	behind := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "agentmem_recall_index_behind_seconds",
		Help: "How long the oldest change the recall index has read but not yet applied has waited (0: caught up with what it read).",
	}, func() float64 { return f.Status().Lag.Seconds() })
	errs := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "agentmem_recall_index_errors_total",
		Help: "Failures of the recall index's follower (reading the log or indexing); each is retried or, for a change that can never be indexed, skipped.",
	}, func() float64 { return float64(f.Status().Errors) })
	for _, c := range []prometheus.Collector{lag, batches, behind, errs} {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	f.Observe(func(b recall.BatchInfo) {
		batches.Observe(float64(b.Changes))
		for _, d := range b.Lags {
			lag.Observe(d.Seconds())
		}
	})
	return nil
}

// observe records one request.
func (m *metrics) observe(route, method string, status int, d time.Duration) {
	s := strconv.Itoa(status)
	m.requests.WithLabelValues(route, method, s).Inc()
	m.latency.WithLabelValues(route, method, s).Observe(d.Seconds())
}

// CacheEvent implements sessions.Observer: agentmem_session_cache_total.
func (m *metrics) CacheEvent(event string) { m.cache.WithLabelValues(event).Inc() }

// CacheSize implements sessions.Observer: agentmem_session_cache_bytes and
// agentmem_session_cache_sessions.
func (m *metrics) CacheSize(bytes int64, sessions int) {
	m.cacheBytes.Set(float64(bytes))
	m.cacheSessions.Set(float64(sessions))
}
