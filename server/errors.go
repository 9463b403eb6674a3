package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/apiconv"
	"github.com/agentmem/agentmem/store"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// statusClientClosed is the status recorded for a request whose client
// went away before the answer.
const statusClientClosed = 499

// Error is an error as the API reports it: its wire form (api.ErrorDetail,
// in an api.ErrorBody), the HTTP status and what is only logged.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is one of the api.Code* constants.
	Code string
	// Message says what went wrong, for people.
	Message string
	// Field names the offending input, in JSON-path style
	// ("messages[1].tool_call_id"), a query parameter or a header.
	Field string
	// Required and Budget are set with api.CodeBudgetTooSmall: the tokens
	// the pinned steps need and the budget that was asked for.
	Required int
	Budget   int
	// LastSeq is set with api.CodeConflict on an append: the session's
	// current last sequence number (also in the ETag header).
	LastSeq *int64
	// RetryAfter, in seconds, is sent as the Retry-After header with 503.
	RetryAfter int

	cause error // logged, never sent
}

// Detail returns the error's wire form.
func (e *Error) Detail() api.ErrorDetail {
	return api.ErrorDetail{Code: e.Code, Message: e.Message, Field: e.Field, Required: e.Required, Budget: e.Budget, LastSeq: e.LastSeq}
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%d %s (%s): %s", e.Status, e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.cause }

// errInvalid returns a 400 error.
func errInvalid(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: api.CodeInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// errNotFound returns a 404 error.
func errNotFound(format string, args ...any) *Error {
	return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// apiError classifies err. The sentinels of package agentmem map to their
// statuses, and a session ID in use (*store.ExistsError) to 409 on the
// field id. A transient failure is 503 with Retry-After: an
// agentmem.ErrUnavailable (a busy, unreachable, full or closed store), a
// context deadline, or a write that other writers of the session got
// ahead of on every try (store.ErrContended). A cancelled request is 499.
// A damaged record (agentmem.ErrDamaged) is 500 with a message that names
// it. Anything else is a failure nobody expected (a bug): 500, with a
// message that gives nothing away, since Server.fail logs the cause.
// Errors that are already *Error pass through.
//
// A message never names the backend. It is what a typed error says about
// the request, which every backend returns alike: an
// *agentmem.InvalidError's reason, the session of a *store.ExistsError.
// Or it is the text of another sentinel error, which the stores write
// without their name.
func apiError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if pe, ok := proxyError(err); ok {
		return pe
	}
	var inv *agentmem.InvalidError
	var be *agentmem.BudgetError
	var ee *store.ExistsError
	switch {
	case errors.As(err, &ee):
		return &Error{Status: http.StatusConflict, Code: api.CodeConflict, Field: "id", cause: err,
			Message: ee.Error() + ": choose another ID, or leave it out for a new one"}
	case errors.As(err, &be):
		return &Error{Status: http.StatusUnprocessableEntity, Code: api.CodeBudgetTooSmall, Field: "budget",
			Message: be.Error(), Required: be.Required, Budget: be.Budget, cause: err}
	case errors.As(err, &inv):
		return &Error{Status: http.StatusBadRequest, Code: api.CodeInvalid, Field: inv.Field, Message: inv.Reason, cause: err}
	case errors.Is(err, agentmem.ErrInvalid):
		return &Error{Status: http.StatusBadRequest, Code: api.CodeInvalid, Message: err.Error(), cause: err}
	case errors.Is(err, agentmem.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: err.Error(), cause: err}
	case errors.Is(err, store.ErrContended):
		// A write that stated no position, retried within the server's
		// bound (store.RetryPolicy): the session is busy, not the
		// request wrong.
		return &Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable,
			Message:    "other writers of the session kept getting ahead of this write, on every try the server makes: nothing was stored; retry later",
			RetryAfter: 1, cause: err}
	case errors.Is(err, agentmem.ErrConflict):
		return &Error{Status: http.StatusConflict, Code: api.CodeConflict, Message: err.Error(), cause: err}
	case errors.Is(err, agentmem.ErrBudgetTooSmall):
		return &Error{Status: http.StatusUnprocessableEntity, Code: api.CodeBudgetTooSmall, Field: "budget", Message: err.Error(), cause: err}
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer.
		return &Error{Status: statusClientClosed, Code: api.CodeCanceled, Message: "the request was canceled", cause: err}
	case errors.Is(err, store.ErrClosed):
		return &Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "the server is shutting down", RetryAfter: 1, cause: err}
	case errors.Is(err, agentmem.ErrExhausted):
		return &Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable,
			Message:    "the store is out of disk space or memory; retry later (a write that got this answer may or may not have been stored: retry it with the same Idempotency-Key)",
			RetryAfter: 1, cause: err}
	case transient(err):
		return &Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable,
			Message:    "the store is unavailable; retry later (a write that got this answer may or may not have been stored: retry it with the same Idempotency-Key)",
			RetryAfter: 1, cause: err}
	}
	var dmg *agentmem.DamagedError
	if errors.As(err, &dmg) {
		// Not the record's content, which may be anything: its kind, ID
		// and that it does not decode.
		return &Error{Status: http.StatusInternalServerError, Code: api.CodeInternal,
			Message: fmt.Sprintf("the stored %s %q is damaged: it does not decode, and cannot be read until it is repaired or deleted (the server's log has the details)", dmg.Kind, dmg.ID), cause: err}
	}
	return errInternal(err)
}

// collectDamaged returns a context whose reads also add the damaged
// records they leave out to a list, besides the server's log and metric.
// The function it returns gives that list: each record once, in the order
// met, in its wire form for a list's "damaged".
func collectDamaged(ctx context.Context) (context.Context, func() []api.DamagedRecord) {
	var (
		mu   sync.Mutex
		seen []*agentmem.DamagedError
	)
	ctx = agentmem.WithDamageReporter(ctx, func(d *agentmem.DamagedError) {
		mu.Lock()
		defer mu.Unlock()
		if !slices.ContainsFunc(seen, func(s *agentmem.DamagedError) bool { return s.Kind == d.Kind && s.ID == d.ID }) {
			seen = append(seen, d)
		}
	})
	return ctx, func() []api.DamagedRecord {
		mu.Lock()
		defer mu.Unlock()
		return apiconv.Damaged(seen)
	}
}

// transient reports whether err is a failure that may pass if the request
// is made again later: what the backends mark agentmem.ErrUnavailable, or
// a deadline that passed.
func transient(err error) bool {
	return errors.Is(err, agentmem.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// errInternal returns the 500 of a failure nobody expected; cause is kept
// for the log, never sent.
func errInternal(cause error) *Error {
	return &Error{Status: http.StatusInternalServerError, Code: api.CodeInternal,
		Message: "internal error: the server could not do the request (its log has the details)", cause: cause}
}

// writeJSON writes v as the JSON body of a response with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeEncoded(w, status, func(buf *bytes.Buffer) error { return encodeResponse(buf, v) })
}

// writeEncoded writes the response that encode writes to a buffer, with
// the given status.
func writeEncoded(w http.ResponseWriter, status int, encode func(*bytes.Buffer) error) {
	buf := bufPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			bufPool.Put(buf)
		}
	}()
	buf.Reset()
	if err := encode(buf); err != nil {
		// Only a bug gets here: every response type marshals.
		status = http.StatusInternalServerError
		buf.Reset()
		_ = encodeResponse(buf, api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeInternal, Message: "encoding the response failed"}})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// responseEncoding is encoding/json's (an Encoder with SetEscapeHTML
// false) by the JSON v2 encoder, which escapes strings several times
// faster: a context's messages are mostly long strings.
var responseEncoding = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsontext.EscapeForHTML(false))

// encodeResponse writes v to buf as json.Encoder with SetEscapeHTML(false)
// does, byte for byte (TestEncodeResponseAsEncodingJSON), a newline
// after it.
func encodeResponse(buf *bytes.Buffer, v any) error {
	start := buf.Len()
	if err := jsonv2.MarshalWrite(buf, v, responseEncoding); err != nil {
		return err
	}
	buf.WriteByte('\n')
	if encodeCheck != nil {
		encodeCheck(v, buf.Bytes()[start:])
	}
	return nil
}

// encodeCheck, set by the package's tests, is shown every response
// encoded: they compare it with encoding/json's encoding.
var encodeCheck func(v any, encoded []byte)

// bufPool recycles the buffers responses are encoded into; a context is
// tens of kilobytes, encoded thousands of times a second.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer keeps a rare huge response's buffer out of the pool.
const maxPooledBuffer = 1 << 20

// writeError writes e as an error response.
func writeError(w http.ResponseWriter, e *Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.LastSeq != nil {
		w.Header().Set("ETag", etag(*e.LastSeq))
	}
	// 499 (the client closed the request, as nginx logs it) is not a
	// standard status, but nobody reads it: it is there for the metrics.
	writeJSON(w, e.Status, api.ErrorBody{Error: e.Detail()})
}
