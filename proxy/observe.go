package proxy

import (
	"net/http"
	"time"
)

// Observer watches the calls through a Proxy, for metrics (Proxy.Observe;
// the server's /metrics has them: see docs/operations.md).
type Observer interface {
	// ProxyCall reports a call when it has ended.
	ProxyCall(Stats)
}

// Stats is what one call through the proxy did.
type Stats struct {
	// Route is the route's path: /v1/chat/completions or /v1/messages.
	Route string
	// Err is the error the call returned, having written nothing; its caller
	// answers it. It is a refusal of the proxy, an unreachable upstream or a
	// failure of the store. Err is nil when the upstream's answer was
	// relayed, with its Status.
	Err    error
	Status int
	// Stream: the answer was streamed. Cut: it was cut off after it
	// began (by the upstream, or the client went away).
	Stream, Cut bool
	// Session: the request named a session. The rest is set only then.
	Session bool
	// Before is the time from the request's arrival until it was sent to the
	// upstream: reading, recording the new messages, fitting the context,
	// encoding the body. Upstream is the time from then until the upstream's
	// answer ended, its last byte read; a stream is relayed as it comes.
	// After is what the proxy took after that: recording the reply, writing
	// the answer. Upstream and After are 0 for a call that did not reach the
	// upstream.
	Before, Upstream, After time.Duration
	// ContextTokens is what the messages sent cost; StepsKept and
	// StepsDropped count the session's steps sent and left out.
	ContextTokens, StepsKept, StepsDropped int
	// Appended is the number of the request's messages recorded. Reply
	// reports whether the reply was recorded, and ReplyTruncated whether it
	// was recorded cut short: larger than Config.MaxReplyBytes, or than a
	// step may be.
	Appended              int
	Reply, ReplyTruncated bool
	// ReplyHeld is the most bytes of the answer the proxy held at once to
	// record its reply: the answer, its events, what it kept of them. It is
	// bounded by Config.MaxReplyBytes, whatever the answer's size.
	ReplyHeld int
}

// Observe adds an observer of the proxy's calls. It is safe to call at
// any time.
func (p *Proxy) Observe(o Observer) {
	for {
		old := p.observers.Load()
		var list []Observer
		if old != nil {
			list = append(list, *old...)
		}
		list = append(list, o)
		if p.observers.CompareAndSwap(old, &list) {
			return
		}
	}
}

// observed serves a call through handle and reports it to the observers.
func (p *Proxy) observed(w http.ResponseWriter, r *http.Request, d dialect) error {
	st := &Stats{Route: d.route(), Session: r.Header.Get(HeaderSession) != ""}
	start := time.Now()
	tm := &timing{}
	err := p.handle(w, r, d, st, tm)
	end := time.Now()
	st.Err = err
	if tm.sent.IsZero() {
		st.Before = end.Sub(start)
	} else {
		st.Before = tm.sent.Sub(start)
		if tm.ended.IsZero() {
			tm.ended = end
		}
		st.Upstream, st.After = tm.ended.Sub(tm.sent), end.Sub(tm.ended)
	}
	if obs := p.observers.Load(); obs != nil {
		for _, o := range *obs {
			o.ProxyCall(*st)
		}
	}
	return err
}

// timing marks when a call was sent to the upstream and when its answer
// ended.
type timing struct {
	sent, ended time.Time
}

// end marks the end of the upstream's answer, once.
func (t *timing) end() {
	if t != nil && t.ended.IsZero() {
		t.ended = time.Now()
	}
}
