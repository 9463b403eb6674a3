package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/agentmem/agentmem/api"
	chatproxy "github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/views"
	"github.com/agentmem/agentmem/views/recallview"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics.
type metrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	storeErrors *prometheus.CounterVec
	damaged     *prometheus.CounterVec
	cache       *prometheus.CounterVec
	// retries and contended count the writes that lost races with other
	// writers of a session (sessions.RetryObserver).
	retries   *prometheus.CounterVec
	contended *prometheus.CounterVec
	// cacheBytes and cacheSessions are the session cache's accounted size
	// and the number of sessions it holds.
	cacheBytes    prometheus.Gauge
	cacheSessions prometheus.Gauge
	proxy         proxyMetrics
	handler       http.Handler
	reg           prometheus.Registerer
}

// proxyMetrics are the metrics of the proxy routes (ProxyCall).
type proxyMetrics struct {
	requests *prometheus.CounterVec
	upstream *prometheus.HistogramVec
	overhead *prometheus.HistogramVec
	tokens   *prometheus.HistogramVec
	dropped  *prometheus.CounterVec
	recorded *prometheus.CounterVec
	// upstreamErrors counts the calls the upstream failed (by route and
	// error code): not the store's failures, whose counter is
	// storeErrors.
	upstreamErrors *prometheus.CounterVec
	// truncated counts the replies recorded cut short.
	truncated *prometheus.CounterVec
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
		damaged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_damaged_records_total",
			Help: "Damaged records (whose stored form does not decode) that reads of collections met and left out, by kind (session, document, fact): a record is counted each time a read meets it.",
		}, []string{"kind"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_session_cache_total",
			Help: "Session memory cache events: hit, miss (loaded from the store), append (steps appended through this server added as they were written), catchup (applied entries read from the log: another writer's, or amendments), reload (rebuilt after a compaction), evict (dropped to stay within the cache's bytes) and too_large (a session larger than the whole cache, served without being kept).",
		}, []string{"event"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_write_retries_total",
			Help: "Tries of writes that state no position in the log (tool results completing stored calls, compactions, pops and clears, appends without If-Match) that another writer of the session got ahead of and that the server made again, by operation: messages, items, append, pop, clear, compact, auto_compact, record (the proxy).",
		}, []string{"op"}),
		contended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_write_contended_total",
			Help: "Writes that state no position in the log that other writers of the session got ahead of on every try the server's bound allows, answered 503 with nothing stored, by operation (as agentmem_write_retries_total).",
		}, []string{"op"}),
		cacheBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agentmem_session_cache_bytes",
			Help: "The accounted size of the session memories the context cache holds (bounded by --cache-bytes): their steps' JSON and the rendered forms they keep, estimated high.",
		}),
		cacheSessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agentmem_session_cache_sessions",
			Help: "The number of session memories the context cache holds.",
		}),
	}
	m.proxy = proxyMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_proxy_requests_total",
			Help: "Calls through the proxy routes, by route, outcome (ok, upstream_error: the upstream's error relayed, cut: an answer cut off after it began, unreachable, redirect: the upstream answered with a redirect, not followed, refused: the proxy's own 4xx, failed: its own 5xx, canceled) and status class of the answer.",
		}, []string{"route", "outcome", "status"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentmem_proxy_upstream_duration_seconds",
			Help:    "Time from sending a call to the upstream provider until its answer ended (a stream relayed as it came), by route.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"route"}),
		overhead: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentmem_proxy_overhead_seconds",
			Help:    "Time the proxy adds to a call that reached the upstream, by route and phase: before (reading the request, recording its new messages, fitting the context, encoding the body sent) and after (recording the reply, writing the answer) the upstream's answer.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"route", "phase"}),
		tokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentmem_proxy_context_tokens",
			Help:    "Tokens of the messages sent to the upstream for a call that names a session (the context fitted to its budget, facts and recalled turns included), by route.",
			Buckets: prometheus.ExponentialBuckets(256, 4, 8),
		}, []string{"route"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_proxy_context_steps_dropped_total",
			Help: "Steps of the sessions left out of the contexts sent to the upstream (to fit the budget), by route.",
		}, []string{"route"}),
		recorded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_proxy_messages_recorded_total",
			Help: "Messages the proxy recorded in sessions, by route and source: request (the caller's new messages) or reply (the upstream's answer).",
		}, []string{"route", "source"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_proxy_upstream_errors_total",
			Help: "Calls through the proxy routes that failed because of the upstream provider, by route and code: upstream_unreachable (it could not be reached, or its answer broke off before it could be recorded) or upstream_redirect (it answered with a redirect, which the proxy does not follow).",
		}, []string{"route", "code"}),
		truncated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_proxy_replies_truncated_total",
			Help: "Replies the proxy recorded cut short, by route: larger than --proxy-max-reply-bytes (or than a step may be), relayed whole to the client.",
		}, []string{"route"}),
	}
	pm := m.proxy
	if err := registerAll(reg, m.requests, m.latency, m.storeErrors, m.damaged, m.cache, m.retries, m.contended, m.cacheBytes, m.cacheSessions,
		pm.requests, pm.upstream, pm.overhead, pm.tokens, pm.dropped, pm.recorded, pm.upstreamErrors, pm.truncated); err != nil {
		return nil, err
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
func (m *metrics) watchIndex(f *recallview.Follower) error {
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
	if err := registerAll(m.reg, lag, batches, behind, errs); err != nil {
		return err
	}
	f.Observe(func(b recallview.BatchInfo) {
		batches.Observe(float64(b.Changes))
		for _, d := range b.Lags {
			lag.Observe(d.Seconds())
		}
	})
	return nil
}

// watchExtraction registers the metrics of the fact extraction that
// follows the store's log. They say whether this server holds its lease,
// which makes it the one of the servers sharing the store that extracts.
// They say how far behind it is, and what it applied and failed.
func (m *metrics) watchExtraction(f *views.Follower) error {
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "agentmem_fact_extraction_lease_held",
		Help: "1 while this server holds the fact extraction's lease and extracts the turns of the sessions; 0 while another server sharing the store does (this one waits to take over).",
	}, func() float64 {
		if l := f.Status().Lease; l != nil && l.Held {
			return 1
		}
		return 0
	})
	behind := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "agentmem_fact_extraction_behind_seconds",
		Help: "How long the oldest change of the log the fact extraction has read but not yet applied has waited (0: caught up with what it read).",
	}, func() float64 { return f.Status().Lag.Seconds() })
	applied := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "agentmem_fact_extraction_changes_total",
		Help: "Changes of the log the fact extraction of this server applied (every change read, turn or not).",
	}, func() float64 { return float64(f.Status().Applied) })
	errs := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "agentmem_fact_extraction_errors_total",
		Help: "Failures of the fact extraction (the model or the store unavailable, a turn skipped, the lease lost); each is retried or, for a turn that can never be extracted, skipped.",
	}, func() float64 { return float64(f.Status().Errors) })
	return registerAll(m.reg, held, behind, applied, errs)
}

// registerAll registers cs with reg, in order, up to the first failure.
func registerAll(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
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

var _ sessions.RetryObserver = (*metrics)(nil)

// WriteRetry implements sessions.RetryObserver:
// agentmem_write_retries_total and agentmem_write_contended_total.
func (m *metrics) WriteRetry(op string, retried bool) {
	if retried {
		m.retries.WithLabelValues(op).Inc()
	} else {
		m.contended.WithLabelValues(op).Inc()
	}
}

// ProxyCall implements proxy.Observer: the agentmem_proxy_* metrics. A
// call that returned an error is classified as the server answers it.
func (m *metrics) ProxyCall(st chatproxy.Stats) {
	route := "POST " + st.Route
	status, outcome := st.Status, "ok"
	switch {
	case st.Err != nil:
		e := apiError(st.Err)
		status = e.Status
		switch {
		case e.Code == api.CodeUpstreamUnreachable:
			outcome = "unreachable"
		case e.Code == api.CodeUpstreamRedirect:
			outcome = "redirect"
		case e.Code == api.CodeCanceled:
			outcome = "canceled"
		case status >= 500:
			outcome = "failed"
		default:
			outcome = "refused"
		}
	case st.Cut:
		outcome = "cut"
	case status < 200 || status > 299:
		outcome = "upstream_error"
	}
	p := m.proxy
	p.requests.WithLabelValues(route, outcome, statusClass(status)).Inc()
	if pe, ok := upstreamFailure(st.Err); ok {
		p.upstreamErrors.WithLabelValues(route, pe.Code).Inc()
	}
	if st.Err == nil && st.Status != 0 { // the upstream answered
		p.upstream.WithLabelValues(route).Observe(st.Upstream.Seconds())
		p.overhead.WithLabelValues(route, "before").Observe(st.Before.Seconds())
		p.overhead.WithLabelValues(route, "after").Observe(st.After.Seconds())
	}
	if st.Session && st.Err == nil {
		p.tokens.WithLabelValues(route).Observe(float64(st.ContextTokens))
		p.dropped.WithLabelValues(route).Add(float64(st.StepsDropped))
	}
	if st.Appended > 0 {
		p.recorded.WithLabelValues(route, "request").Add(float64(st.Appended))
	}
	if st.Reply {
		p.recorded.WithLabelValues(route, "reply").Inc()
		if st.ReplyTruncated {
			p.truncated.WithLabelValues(route).Inc()
		}
	}
}

// statusClass is a status's class, "2xx" to "5xx" ("4xx" for the 499 of
// a request the client canceled).
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}
