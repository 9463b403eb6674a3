package server

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/httpbody"
	"github.com/agentmem/agentmem/internal/jsoncheck"
	"github.com/agentmem/agentmem/store"
)

// The request decoders are pure functions of the body bytes (and a few
// headers), so the fuzz targets can drive them without a server. Each
// returns an *Error for the client; nothing is written before every part of
// a request has been decoded and checked. Each begins with checkJSON (the
// generic one, decodeStrict, does it for its callers), so that no body
// with invalid UTF-8, a lone surrogate escape or a repeated key reaches
// encoding/json, which would accept it silently.

// readBody reads a JSON request body: the media type must be
// application/json (415) and the body at most limit bytes (413). An empty
// body is allowed only when optional is set, and is returned as nil. The
// text itself is the decoders' to check (checkJSON).
func readBody(w http.ResponseWriter, r *http.Request, limit int64, optional bool) ([]byte, *Error) {
	if r.ContentLength == 0 && optional && r.Header.Get("Content-Type") == "" {
		return nil, nil
	}
	if err := checkJSONType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	body, err := httpbody.Read(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, maxPresize)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: api.CodeBodyTooLarge,
				Message: fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit)}
		}
		return nil, errInvalid("", "reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil, nil
		}
		return nil, errInvalid("", "the request body is empty")
	}
	return body, nil
}

// maxPresize is the largest Content-Length a request body's buffer is
// sized for before the body arrives (httpbody.Read); a larger body's
// buffer grows as it arrives.
const maxPresize = 1 << 20

// checkJSON refuses a body that jsoncheck.Check refuses: malformed JSON,
// invalid UTF-8, a lone UTF-16 surrogate escape (which encoding/json would
// turn into U+FFFD) or a key repeated in an object (of which it would keep
// the last), naming where. The paths of a body that is an array start
// with arrayRoot ("steps[2].metadata.k").
func checkJSON(body []byte, arrayRoot string) *Error {
	return checkError(jsoncheck.Check(body), arrayRoot)
}

// checkError turns an error of package jsoncheck into a 400 naming the
// path.
func checkError(err error, arrayRoot string) *Error {
	if err == nil {
		return nil
	}
	var je *jsoncheck.Error
	if !errors.As(err, &je) {
		return errInvalid("", "%v", err)
	}
	if je.Path == "" {
		return errInvalid("", "the request body %s", je.Reason)
	}
	path := je.Path
	if path[0] == '[' {
		path = arrayRoot + path
	}
	return errInvalid(path, "%s", je.Reason)
}

// checkJSONType accepts application/json, with no charset or UTF-8. The
// plain media type, which nearly every request sends, is accepted
// without parsing it.
func checkJSONType(ct string) *Error {
	if ct == "application/json" {
		return nil
	}
	bad := func() *Error {
		return &Error{Status: http.StatusUnsupportedMediaType, Code: api.CodeUnsupportedMediaType, Field: "Content-Type",
			Message: fmt.Sprintf("the request body must be application/json, not %q", ct)}
	}
	if ct == "" {
		e := bad()
		e.Message = "the request body must be application/json (Content-Type is missing)"
		return e
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return bad()
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		e := bad()
		e.Message = fmt.Sprintf("the request body must be UTF-8, not %q", cs)
		return e
	}
	return nil
}

// decodeStrict decodes a body, one JSON value, into v in one pass
// (jsoncheck.Decode). It refuses what checkJSON refuses, unknown fields,
// member names that match a field only in letter case, and values of the
// wrong type. The error names the offending field.
func decodeStrict(data []byte, v any) *Error {
	return decodeIn(data, v, "")
}

// readJSON reads a required JSON body of at most the server's limit into
// a T, strictly (decodeStrict). On failure it answers the request and
// reports false.
func readJSON[T any](s *Server, w http.ResponseWriter, r *http.Request) (T, bool) {
	var v T
	body, e := readBody(w, r, s.cfg.MaxBodyBytes, false)
	if e == nil {
		e = decodeStrict(body, &v)
	}
	if e != nil {
		writeError(w, e)
		return v, false
	}
	return v, true
}

// decodeIn is decodeStrict for a body whose paths, if it is an array,
// start with arrayRoot ("steps[2].metadata.k").
func decodeIn(data []byte, v any, arrayRoot string) *Error {
	err := jsoncheck.Decode(data, v)
	if err == nil {
		return nil
	}
	var je *jsoncheck.Error
	if errors.As(err, &je) && je.Err != nil {
		// A value that decodes itself refused it: its own error when
		// that is one of bad input (it names the field), else the
		// decoder's, which names the value. Either way a 400: nothing
		// in a request's text is the server's failure.
		var inv *agentmem.InvalidError
		if errors.As(je.Err, &inv) {
			return inputError(inv)
		}
	}
	return checkError(err, arrayRoot)
}

// inputError is the answer to a request whose input (its body, path or
// query) a decoder or a check refused with err. An error of bad input is
// answered as apiError does: 400 naming the field, or 422 for a budget.
// Any other error is a 400 with its text. A request's text is never the
// server's failure, and nothing about it passes with time, so no
// decoding error becomes a 500 or a 503, whatever the decoder of a value
// returned.
func inputError(err error) *Error {
	if e := apiError(err); e.Status >= 400 && e.Status < 500 {
		return e
	}
	return &Error{Status: http.StatusBadRequest, Code: api.CodeInvalid, Message: err.Error(), cause: err}
}

// checkID checks a session ID from a path or a body with
// store.ValidateID: any text of 1 to 256 bytes without control
// characters, but "." and "..". A path carries it percent-encoded ("a/b"
// as a%2Fb), and the mux gives it decoded.
func checkID(field, id string) *Error {
	if err := store.ValidateID(id); err != nil {
		e := inputError(err)
		e.Field = field
		return e
	}
	return nil
}

// maxIdempotencyKey leaves room for "/index" within store.MaxIDLen.
const maxIdempotencyKey = 100

// singleHeader returns the value of a request header that may be given
// at most once, and whether it was given (blank or not).
func singleHeader(h http.Header, name string) (string, bool, *Error) {
	switch vs := h.Values(name); len(vs) {
	case 0:
		return "", false, nil
	case 1:
		return vs[0], true, nil
	default:
		return "", true, errInvalid(name, "is given %d times; give it at most once", len(vs))
	}
}

// checkIdempotencyKey checks the Idempotency-Key header: absent (no key),
// or 1 to 100 visible ASCII characters. A header that is there but blank
// is refused: it is more likely a client's bug than a wish for no key.
func checkIdempotencyKey(key string, present bool) *Error {
	if present && key == "" {
		return errInvalid("Idempotency-Key", "is empty: send 1 to %d visible ASCII characters, or leave the header out", maxIdempotencyKey)
	}
	if len(key) > maxIdempotencyKey {
		return errInvalid("Idempotency-Key", "is longer than %d characters", maxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return errInvalid("Idempotency-Key", "must be visible ASCII characters")
		}
	}
	return nil
}

// parseIfMatch parses the If-Match header: the expected last sequence
// number of the session, bare or as an entity tag ("12", W/"12"). No
// header means no check; a header that is there but blank is refused.
func parseIfMatch(h string, present bool) (*int64, *Error) {
	if !present {
		return nil, nil
	}
	h = strings.TrimSpace(h)
	if h == "" {
		return nil, errInvalid("If-Match", "is blank: send the expected last sequence number of the session, or leave the header out")
	}
	v := strings.TrimPrefix(h, "W/")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != v {
		return nil, errInvalid("If-Match", "must be the expected last sequence number of the session (a non-negative integer, optionally quoted), not %q", h)
	}
	return &n, nil
}

// etag formats a sequence number as an entity tag.
func etag(seq int64) string { return `"` + strconv.FormatInt(seq, 10) + `"` }

// stepIDs gives each step that has no ID one derived from the
// Idempotency-Key, or a new ID when there is no key. The i-th step gets
// key/i, a single step key/0, as on every route. An ID used twice in one
// request is refused.
func stepIDs(steps []agentmem.Step, key string, single bool, newID func() string) ([]agentmem.Step, *Error) {
	seen := make(map[string]int, len(steps))
	for i, s := range steps {
		info := s.Info()
		if info.ID == "" {
			if key == "" {
				info.ID = newID()
			} else {
				info.ID = key + "/" + strconv.Itoa(i)
			}
			s = withInfo(s, info)
			steps[i] = s
		}
		if j, dup := seen[info.ID]; dup {
			return nil, errInvalid(stepField(i, single, "id"), "%q is also the ID of steps[%d]", info.ID, j)
		}
		seen[info.ID] = i
	}
	return steps, nil
}

func stepField(i int, single bool, field string) string {
	if single {
		return field
	}
	return fmt.Sprintf("steps[%d].%s", i, field)
}

// withInfo sets the header of a step the request decoded (so it is ours
// to change; package agentmem keeps its setter private, but every step
// type embeds StepInfo).
func withInfo(s agentmem.Step, info agentmem.StepInfo) agentmem.Step {
	switch st := s.(type) {
	case *agentmem.SystemPromptStep:
		st.StepInfo = info
	case *agentmem.TaskStep:
		st.StepInfo = info
	case *agentmem.ActionStep:
		st.StepInfo = info
	case *agentmem.PlanningStep:
		st.StepInfo = info
	case *agentmem.ScratchpadStep:
		st.StepInfo = info
	case *agentmem.FinalAnswerStep:
		st.StepInfo = info
	case *agentmem.SummaryStep:
		st.StepInfo = info
	case *agentmem.MessageStep:
		st.StepInfo = info
	}
	return s
}
