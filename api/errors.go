package api

// Error codes: the "code" member of an error response. A client switches
// on the code, not on the message, which is for people.
const (
	CodeInvalid              = "invalid"                // 400: the request is malformed or breaks a rule
	CodeUnauthorized         = "unauthorized"           // 401: no API key where one is required, or a bad or revoked one
	CodeForbidden            = "forbidden"              // 403: a cross-origin request from an origin not allowed
	CodeNotFound             = "not_found"              // 404: no such session (or another tenant's) or route
	CodeMethodNotAllowed     = "method_not_allowed"     // 405
	CodeConflict             = "conflict"               // 409: If-Match did not hold, or an ID is taken
	CodeIdempotencyKeyReused = "idempotency_key_reused" // 409: an append reused an Idempotency-Key (or step IDs) for a different body; nothing was stored
	CodeBodyTooLarge         = "body_too_large"         // 413
	CodeUnsupportedMediaType = "unsupported_media_type" // 415: the body is not application/json
	CodeBudgetTooSmall       = "budget_too_small"       // 422: the pinned steps need more tokens than the budget
	CodeOverLimit            = "over_limit"             // 422: a block's edit would take it past its limit; nothing changed
	CodeNoMatch              = "no_match"               // 422: a block's replace names old text that does not occur exactly once; nothing changed
	CodeReadOnly             = "read_only"              // 409: an append or replace of a read-only block
	CodeToolResultsMissing   = "tool_results_missing"   // 422: no longer returned: tool calls whose results have not arrived are stored as pending
	CodeToolResultConflict   = "tool_result_conflict"   // 409: a tool result for a call that already has a different one; nothing was stored
	CodeNothingToPop         = "nothing_to_pop"         // 409: a pop of a session whose working set is empty
	CodeInternal             = "internal"               // 500: a failure nobody expected (a corrupt record, a bug); the server logs it
	CodeNotConfigured        = "not_configured"         // 501: the server was started without what the route needs (recall, facts)
	CodeSummarizerFailed     = "summarizer_failed"      // 502: the LLM summarizer failed; retry
	CodeExtractionFailed     = "extraction_failed"      // 502: the fact extractor (an LLM) failed or answered nothing usable; nothing was written; retry
	CodeUnavailable          = "unavailable"            // 503: the store is busy, unreachable, timed out or shutting down, or other writers of the session got ahead of a write without If-Match on every try the server made; retry
	CodeIndexBehind          = "index_behind"           // 503: a fresh recall search timed out waiting for the index; retry
	CodeCanceled             = "canceled"               // 499: the client went away (only in logs and metrics)

	// The proxy routes' own codes (POST /v1/chat/completions and
	// /v1/messages); errors of the upstream provider are relayed as they
	// came, not wrapped.
	CodeUpstreamNotConfigured = "upstream_not_configured" // 400: the server has no upstream provider for this API
	CodeHistoryDiverged       = "history_diverged"        // 409: the request's history departs from the session's too far back to rewind
	CodeUpstreamUnreachable   = "upstream_unreachable"    // 502: the upstream provider could not be reached; nothing was recorded of a reply
	CodeUpstreamRedirect      = "upstream_redirect"       // 502: the upstream provider answered with a redirect, which the proxy does not follow; nothing was recorded of a reply
)

// Codes returns every error code, in the order declared above: the list
// the OpenAPI document's error schema enumerates, and each client maps to
// its own error class.
func Codes() []string {
	return []string{
		CodeInvalid, CodeUnauthorized, CodeForbidden, CodeNotFound, CodeMethodNotAllowed, CodeConflict,
		CodeIdempotencyKeyReused, CodeBodyTooLarge, CodeUnsupportedMediaType, CodeBudgetTooSmall,
		CodeOverLimit, CodeNoMatch, CodeReadOnly,
		CodeToolResultsMissing, CodeToolResultConflict, CodeNothingToPop, CodeInternal, CodeNotConfigured,
		CodeSummarizerFailed, CodeExtractionFailed, CodeUnavailable, CodeIndexBehind, CodeCanceled,
		CodeUpstreamNotConfigured, CodeHistoryDiverged, CodeUpstreamUnreachable, CodeUpstreamRedirect,
	}
}

// ErrorBody is the JSON body of every error response:
//
//	{"error":{"code":"invalid","message":"...","field":"steps[2].type"}}
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is what an error response says.
type ErrorDetail struct {
	// Code is one of the Code* constants: a client switches on it.
	Code string `json:"code"`
	// Message says what went wrong, for people.
	Message string `json:"message"`
	// Field names the offending input, in JSON-path style
	// ("messages[1].tool_call_id"), a query parameter or a header.
	Field string `json:"field,omitempty"`
	// Required and Budget are set with CodeBudgetTooSmall: the tokens the
	// pinned steps need and the budget that was asked for.
	Required int `json:"required,omitempty"`
	Budget   int `json:"budget,omitempty"`
	// LastSeq is set with CodeConflict on an append: the session's
	// current last sequence number (also in the ETag header).
	LastSeq *int64 `json:"last_seq,omitempty"`
}
