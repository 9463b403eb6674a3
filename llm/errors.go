package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrConfig is wrapped by every error caused by an invalid or incomplete
// Config: a missing or malformed BaseURL, or no model to call.
var ErrConfig = errors.New("llm: invalid config")

// ErrEmptyResponse is returned by Client.Chat when the server answers 200
// but the response has no choices.
var ErrEmptyResponse = errors.New("llm: empty response: no choices")

// ErrMalformedResponse is wrapped by errors for successful (2xx) responses
// whose body cannot be used. The body is not JSON, has the wrong shape, is
// larger than the response size limit, or has embeddings that do not match
// the inputs.
var ErrMalformedResponse = errors.New("llm: malformed response")

// APIError is an error response from the API: any non-2xx HTTP status, or a
// 200 whose body is an error object instead of a result. It is parsed from
// the OpenAI shape {"error":{"message","type","code"}} and tolerates the
// variants other servers use ({"error":"..."}, {"detail":"..."}, numeric
// codes, plain-text bodies).
type APIError struct {
	// StatusCode is the HTTP status code of the response.
	StatusCode int
	// Type is the provider's error type, e.g. "invalid_request_error".
	Type string
	// Code is the provider's error code, e.g. "rate_limit_exceeded";
	// numeric codes are kept as their decimal text.
	Code string
	// Message is the provider's human-readable message, or a snippet of
	// the body (or the HTTP status text) when the body has none.
	Message string
	// RetryAfter is how long the server asked the client to wait before
	// retrying (from retry-after-ms or Retry-After), zero if it did not say.
	RetryAfter time.Duration
}

// Error returns a readable one-line description, e.g.
// "llm: API error (HTTP 429, type requests, code rate_limit_exceeded): Rate limit reached".
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm: API error (HTTP %d", e.StatusCode)
	if e.Type != "" {
		b.WriteString(", type ")
		b.WriteString(e.Type)
	}
	if e.Code != "" {
		b.WriteString(", code ")
		b.WriteString(e.Code)
	}
	b.WriteByte(')')
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// retryableStatus reports whether a response with this status may be retried.
func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

// parseAPIError builds an APIError from a non-2xx response.
func parseAPIError(status int, h http.Header, body []byte) *APIError {
	e := &APIError{StatusCode: status, RetryAfter: parseRetryAfter(h, time.Now())}
	fillAPIError(e, body)
	if e.Message == "" {
		e.Message = snippet(body, 512)
	}
	if e.Message == "" || e.Message == "{}" || e.Message == "null" {
		e.Message = http.StatusText(status)
	}
	return e
}

// fillAPIError fills e's Type, Code and Message from a JSON error body,
// leaving them empty when the body is not JSON or has no error in it.
func fillAPIError(e *APIError, body []byte) {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &env) != nil || fillErrorValue(e, env.Error) {
		return
	}
	if m := rawText(env.Message); m != "" {
		e.Message = m
		return
	}
	e.Message = rawText(env.Detail)
}

// fillErrorValue fills e from the value of an "error" field: an object
// {"message","type","code"} or a bare message. It reports whether raw held
// an error (not absent or null).
func fillErrorValue(e *APIError, raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return false
	}
	var obj struct {
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if raw[0] == '{' && json.Unmarshal(raw, &obj) == nil {
		e.Message = rawText(obj.Message)
		e.Type = rawText(obj.Type)
		e.Code = rawText(obj.Code)
		return true
	}
	e.Message = rawText(raw)
	return true
}

// rawText renders a JSON scalar as text: strings unquoted, numbers and
// booleans as written, null or absent as "". Objects and arrays are kept
// as compact JSON.
func rawText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// parseRetryAfter reads OpenAI's retry-after-ms header, else the standard
// Retry-After header (delay in seconds or an HTTP date). It returns zero
// when neither is present, parseable and positive.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// snippet returns body trimmed and cut to at most n bytes (plus an
// ellipsis), for use in error messages.
func snippet(body []byte, n int) string {
	s := strings.TrimSpace(string(body))
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
