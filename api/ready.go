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
