package proxy

import (
	"fmt"
	"net/http"

	"github.com/agentmem/agentmem/api"
)

// Codes of the proxy's own errors (api.Code*).
const (
	CodeUpstreamNotConfigured = api.CodeUpstreamNotConfigured
	CodeHistoryDiverged       = api.CodeHistoryDiverged
	CodeUpstreamUnreachable   = api.CodeUpstreamUnreachable
	CodeUpstreamRedirect      = api.CodeUpstreamRedirect
)

// Error is an error of the proxy itself, not of the upstream provider,
// whose answers are relayed as they came. It holds the HTTP status, the
// code (api.Code*), the input it is about and a message for people. The
// server writes it as every error of the API (api.ErrorBody).
type Error struct {
	Status  int
	Code    string
	Field   string
	Message string
	// Err is the cause, logged and never sent.
	Err error
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%d %s (%s): %s", e.Status, e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// invalid returns a 400 error about a field or header.
func invalid(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: api.CodeInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// historyDiverged says why a request that departs from the session's
// history too far back is refused.
func historyDiverged(common, held int) string {
	return fmt.Sprintf("the request's history departs from the session's after its first %d conversation messages, "+
		"and the session holds %d more: agentmem rewinds a session by at most %d messages to follow an edited history; "+
		"use a new X-Agentmem-Session for this conversation", common, held-common, MaxRewind)
}
