package client

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem/api"
)

// Sentinel errors. An *Error wraps one of them (see Error.Unwrap), so
// errors.Is tells the failures apart without looking at statuses and
// codes. Package client/remote maps them to the sentinels of a local
// store (agentmem.ErrNotFound, ...).
var (
	// ErrInvalid: the request is malformed or breaks a rule (400, 413,
	// 415, and 422 other than budget_too_small); Error.Field names the
	// offending input. A request the client refuses before sending it
	// (an empty session ID, say) wraps it too.
	ErrInvalid = errors.New("agentmem client: invalid request")
	// ErrNotFound: no such session, fact, document or route (404).
	ErrNotFound = errors.New("agentmem client: not found")
	// ErrConflict: If-Match did not hold (Error.LastSeq has the session's
	// last sequence number), an ID is taken, or a tool result contradicts
	// the one its call has (409).
	ErrConflict = errors.New("agentmem client: conflict")
	// ErrIDReused: an append reused an Idempotency-Key or step IDs for a
	// different body; nothing was stored (409 idempotency_key_reused). It
	// wraps ErrConflict.
	ErrIDReused = fmt.Errorf("agentmem client: idempotency key or step IDs reused for a different request (%w)", ErrConflict)
	// ErrNothingToPop: a pop of a session whose working set is empty (409
	// nothing_to_pop). It wraps ErrConflict.
	ErrNothingToPop = fmt.Errorf("agentmem client: nothing to pop (%w)", ErrConflict)
	// ErrBudgetTooSmall: the pinned steps need more tokens than the
	// budget (422 budget_too_small); Error.Required and Error.Budget say
	// how many.
	ErrBudgetTooSmall = errors.New("agentmem client: the budget is too small for the pinned steps")
	// ErrUnauthorized: the server wants an API key and got none, or a
	// bad or revoked one (401).
	ErrUnauthorized = errors.New("agentmem client: unauthorized")
	// ErrForbidden: the server refused the request (403).
	ErrForbidden = errors.New("agentmem client: forbidden")
	// ErrUnavailable: the server or its store cannot do the work now
	// (429, 502, 503, 504, the server could not be reached, or the
	// context's deadline passed); retry later. A write that failed so may
	// or may not have been stored; retrying it is safe when it is
	// idempotent (steps with IDs, messages with an Idempotency-Key).
	ErrUnavailable = errors.New("agentmem client: unavailable")
	// ErrClosed: the client was closed (Close).
	ErrClosed = errors.New("agentmem client: closed")
)

// Error is an error answered by the server: its HTTP status and the
// {"error":{"code","message","field"}} body of the API (api.ErrorBody).
//
// errors.Is maps it to the client's sentinels:
//
//	400, 413, 415, any other 422             ErrInvalid
//	404                                      ErrNotFound
//	409 (tool_result_conflict included)      ErrConflict
//	409 idempotency_key_reused               ErrIDReused (which wraps ErrConflict)
//	409 nothing_to_pop                       ErrNothingToPop (which wraps ErrConflict)
//	422 budget_too_small                     ErrBudgetTooSmall
//	401                                      ErrUnauthorized
//	403                                      ErrForbidden
//	405, 501                                 errors.ErrUnsupported
//	429, 502, 503, 504                       ErrUnavailable (Retryable; RetryAfter from the header)
type Error struct {
	// Status is the HTTP status of the answer.
	Status int
	// Code is the API's error code (api.CodeInvalid, ...); empty if
	// the body was not an API error (a proxy's page, say).
	Code string
	// Message says what went wrong, for people.
	Message string
	// Field names the offending input: a JSON path, a query parameter or
	// a header.
	Field string
	// Required and Budget are set with code budget_too_small.
	Required, Budget int
	// LastSeq is the session's current last sequence number, set on a
	// 409 of an append whose If-Match did not hold.
	LastSeq *int64
	// RetryAfter is the server's Retry-After, when it sent one.
	RetryAfter time.Duration
	// Method and Path are the request's, for messages.
	Method, Path string
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agentmem client: %s %s: %d", e.Method, e.Path, e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Field != "" {
		b.WriteString(" (" + e.Field + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Unwrap returns the sentinel err stands for (see Error), so errors.Is
// sees through it.
func (e *Error) Unwrap() []error {
	switch e.Status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return []error{ErrInvalid}
	case http.StatusNotFound:
		return []error{ErrNotFound}
	case http.StatusConflict:
		switch e.Code {
		case api.CodeIdempotencyKeyReused:
			return []error{ErrIDReused}
		case api.CodeNothingToPop:
			return []error{ErrNothingToPop}
		}
		return []error{ErrConflict}
	case http.StatusUnprocessableEntity:
		if e.Code == api.CodeBudgetTooSmall {
			return []error{ErrBudgetTooSmall}
		}
		return []error{ErrInvalid}
	case http.StatusUnauthorized:
		return []error{ErrUnauthorized}
	case http.StatusForbidden:
		return []error{ErrForbidden}
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return []error{errors.ErrUnsupported}
	}
	if e.Retryable() {
		return []error{ErrUnavailable}
	}
	return nil
}

// Retryable reports whether the same request may succeed later: the
// server or its store was unavailable (429, 502, 503, 504).
func (e *Error) Retryable() bool {
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// maxErrorBody bounds the error body the client reads.
const maxErrorBody = 64 << 10

// apiError builds the *Error of a failed answer from its status, headers
// and (bounded) body.
func apiError(method, path string, status int, h http.Header, body []byte) *Error {
	e := &Error{Status: status, Method: method, Path: path}
	var eb api.ErrorBody
	if err := jsonUnmarshal(body, &eb); err == nil && eb.Error.Code != "" {
		e.Code, e.Message, e.Field = eb.Error.Code, eb.Error.Message, eb.Error.Field
		e.Required, e.Budget, e.LastSeq = eb.Error.Required, eb.Error.Budget, eb.Error.LastSeq
	} else {
		e.Message = http.StatusText(status)
		if s := strings.TrimSpace(string(body)); s != "" {
			if len(s) > 200 {
				s = s[:200] + "..."
			}
			e.Message += ": " + strings.ToValidUTF8(s, "?")
		}
	}
	if e.LastSeq == nil && status == http.StatusConflict {
		if n, ok := parseETag(h.Get("ETag")); ok {
			e.LastSeq = &n
		}
	}
	e.RetryAfter = retryAfter(h.Get("Retry-After"))
	return e
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(min(n, 3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return min(d, time.Hour)
		}
	}
	return 0
}

// parseETag parses the entity tag of a session: its last sequence number.
func parseETag(v string) (int64, bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "W/")
	v = strings.Trim(v, `"`)
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n >= 0
}

// invalid returns the error of a request the client refuses before
// sending it: field is what is wrong with it.
func invalid(field, reason string) error {
	return fmt.Errorf("agentmem client: %s %s: %w", field, reason, ErrInvalid)
}

// checkID refuses an empty ID (of field) before anything is sent: it
// would name another route.
func checkID(field, id string) error {
	if id == "" {
		return invalid(field, "is empty")
	}
	return nil
}
