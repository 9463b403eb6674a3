package api

// ReadyResponse is the body of GET /readyz.
type ReadyResponse struct {
	// Status is "ready" or "unavailable".
	Status string `json:"status"`
	// Reason says why the server is unavailable: "the store is out of
	// disk space or memory: ...", "the store is unreachable or busy", or
	// "the server is shutting down".
	Reason string `json:"reason,omitempty"`
	// RecallIndex is the progress of the recall index that follows the
	// log, when the server has one. Its lag does not make the server
	// unready: searches see what it has indexed.
	RecallIndex *IndexStatus `json:"recall_index,omitempty"`
	// FactExtraction is the progress of the fact extraction that follows
	// the log, when the server runs it (it has a model): of the servers
	// sharing a store, the one holding its lease extracts.
	FactExtraction *ViewStatus `json:"fact_extraction,omitempty"`
}

// IndexStatus is the progress of the recall index's follower of the log.
type IndexStatus struct {
	// Running says that the follower is running.
	Running bool `json:"running"`
	// LagSeconds is how long the oldest change read from the log but not
	// yet indexed has waited; 0 when caught up.
	LagSeconds float64 `json:"lag_seconds"`
	// Applied counts the changes indexed since the server started, and
	// Errors the failures (retried, or skipped for a change that can never
	// be indexed; the server's log has them).
	Applied int64 `json:"applied"`
	Errors  int64 `json:"errors"`
}

// ViewStatus is the progress of a view that follows the log in the
// background, such as the fact extraction.
type ViewStatus struct {
	// Running says that the view's follower is running (holding its
	// lease or waiting for it).
	Running bool `json:"running"`
	// LagSeconds is how long the oldest change read from the log but not
	// yet applied has waited; 0 when caught up.
	LagSeconds float64 `json:"lag_seconds"`
	// Applied counts the changes of the log this server applied since it
	// started, and Errors the failures (retried, or skipped for a change
	// that can never be applied; the server's log has them).
	Applied int64 `json:"applied"`
	Errors  int64 `json:"errors"`
	// Lease is the view's lease, for a view that one server at a time
	// runs of those sharing a store.
	Lease *LeaseStatus `json:"lease,omitempty"`
}

// LeaseStatus is a server's hold on the lease of a view that one server
// at a time runs.
type LeaseStatus struct {
	// Held says that this server holds the lease: it is the one that runs
	// the view. Otherwise it waits, and takes over when the holder stops
	// or its lease expires.
	Held bool `json:"held"`
	// Holder names the holder (its host, process ID and a random part),
	// as this server last saw it: this server when Held; empty when none
	// holds it.
	Holder string `json:"holder,omitempty"`
}
