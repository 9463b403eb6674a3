package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/apiconv"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// stepsRequest is a decoded POST /v1/sessions/{id}/steps or /messages
// body: steps ready to append (IDs and times filled in), or messages to
// fold into steps as they are appended.
type stepsRequest struct {
	steps  []agentmem.Step
	single bool // the body was one object, not an array
	// compaction is the compaction record of an envelope body, if any.
	compaction *store.CompactionRecord
	// messages and flush are a /messages body and its flush_pending.
	messages []agentmem.Message
	flush    bool
}

// stepsEnvelope is the third form of a POST /steps body: steps and a
// compaction record appended after them in the same atomic write, as a
// bound memory's prune or summary does (store.AppendRequest).
type stepsEnvelope struct {
	Steps      []json.RawMessage `json:"steps"`
	Compaction json.RawMessage   `json:"compaction"`
}

// decodeSteps decodes the body of POST /v1/sessions/{id}/steps: one step
// object or an array of them, in the core's typed step JSON, strictly
// (unknown fields and types are refused, and every step is validated).
// Steps without an ID get one from the Idempotency-Key (see stepIDs);
// steps without a time get now. Numbers in the body are ignored: the log
// numbers the steps.
func decodeSteps(body []byte, key string, now time.Time, newID func() string) (*stepsRequest, *Error) {
	body = bytes.TrimSpace(body)
	var raws []json.RawMessage
	var compaction *store.CompactionRecord
	single := false
	switch {
	case len(body) > 0 && body[0] == '{' && isEnvelope(body):
		var env stepsEnvelope
		if e := decodeStrict(body, &env); e != nil {
			return nil, e
		}
		raws = env.Steps
		if len(env.Compaction) > 0 && !bytes.Equal(env.Compaction, []byte("null")) {
			c, err := store.DecodeAppendCompaction(env.Compaction, len(raws))
			if err != nil {
				return nil, inputError(err)
			}
			compaction = c
		}
		if len(raws) == 0 && compaction == nil {
			return nil, errInvalid("steps", "is empty and there is no compaction: send at least one step or a compaction")
		}
	case len(body) > 0 && body[0] == '{':
		raws, single = []json.RawMessage{body}, true
	case len(body) > 0 && body[0] == '[':
		if e := decodeIn(body, &raws, "steps"); e != nil {
			return nil, e
		}
		if len(raws) == 0 {
			return nil, errInvalid("steps", "is empty: send at least one step")
		}
	default:
		return nil, errInvalid("", "the body must be a step object, an array of steps, or an object with steps and a compaction")
	}
	if len(raws) > api.MaxStepsPerRequest {
		return nil, errInvalid("steps", "has %d steps; at most %d per request", len(raws), api.MaxStepsPerRequest)
	}
	steps := make([]agentmem.Step, len(raws))
	for i, raw := range raws {
		s, err := agentmem.UnmarshalStep(raw)
		if err != nil {
			e := inputError(err)
			if !single {
				e.Field = prefixField(fmt.Sprintf("steps[%d]", i), e.Field)
			}
			return nil, e
		}
		info := s.Info()
		info.Number = 0
		if info.Time.IsZero() {
			info.Time = now
		}
		steps[i] = withInfo(s, info)
	}
	if len(steps) > 0 {
		var err *Error
		if steps, err = stepIDs(steps, key, single, newID); err != nil {
			return nil, err
		}
	}
	return &stepsRequest{steps: steps, single: single, compaction: compaction}, nil
}

// isEnvelope says whether a JSON object is a stepsEnvelope rather than a
// step: it has a "steps" or "compaction" member and no "type" (every
// step has one).
func isEnvelope(body []byte) bool {
	// A step as MarshalStep writes it, or as most clients do, needs no
	// reading.
	if bytes.HasPrefix(body, []byte(`{"type"`)) {
		return false
	}
	// Only the top level's member names are read; values are skipped,
	// and a step's "type", usually its first member, ends the reading.
	// What is wrong with the body (a repeated key, invalid UTF-8) is for
	// the strict decode that follows to report, naming where. A
	// bytes.Buffer is read in place, without a copy.
	dec := jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	var steps, comp bool
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return false
		}
		switch name.String() {
		case "type":
			return false
		case "steps":
			steps = true
		case "compaction":
			comp = true
		}
		if err := dec.SkipValue(); err != nil {
			return false
		}
	}
	return steps || comp
}

// prefixField joins a parent path and a field name.
func prefixField(parent, field string) string {
	switch {
	case parent == "":
		return field
	case field == "":
		return parent
	case strings.HasPrefix(field, "["):
		return parent + field
	}
	return parent + "." + field
}

// decodeMessages decodes the body of POST /v1/sessions/{id}/messages: one
// OpenAI chat message or an array of them (render.DecodeOpenAIMessages,
// strictly). The messages are folded into steps when they are appended
// (sessions.Service.AppendMessages), against the session's pending tool calls.
func decodeMessages(body []byte, flush bool) (*stepsRequest, *Error) {
	if e := checkJSON(body, "messages"); e != nil {
		if e.Field == "" {
			e.Field = "messages" // as render.DecodeOpenAIMessages names it
		}
		return nil, e
	}
	body = bytes.TrimSpace(body)
	single := len(body) > 0 && body[0] == '{'
	if single {
		body = append(append([]byte{'['}, body...), ']')
	}
	body, extras, e := takeMessageExtras(body)
	var msgs []agentmem.Message
	if e == nil {
		var err error
		if msgs, err = render.DecodeOpenAIMessages(body); err != nil {
			e = inputError(err)
		}
	}
	if e != nil {
		if single {
			e.Field = strings.TrimPrefix(strings.TrimPrefix(e.Field, "messages[0]"), ".")
		}
		return nil, e
	}
	for i, x := range extras {
		msgs[i].ID, msgs[i].Metadata = x.ID, x.Metadata
	}
	if len(msgs) == 0 {
		return nil, errInvalid("messages", "is empty: send at least one message")
	}
	if len(msgs) > api.MaxStepsPerRequest {
		return nil, errInvalid("messages", "has %d messages; at most %d per request", len(msgs), api.MaxStepsPerRequest)
	}
	return &stepsRequest{messages: msgs, flush: flush, single: single}, nil
}

// messageExtras are agentmem's additions to OpenAI's chat message, which
// takeMessageExtras takes out of a request's messages.
type messageExtras struct {
	// ID becomes the ID of the step the message starts (a task, an
	// action, a system prompt) or of the tool result it carries, so a
	// framework's message IDs read back as they were sent.
	ID string
	// Metadata becomes the metadata of that step or tool result
	// (agentmem.Message.Metadata; a tool message's is_error "true" marks
	// its result an error).
	Metadata map[string]string
}

// takeMessageExtras takes the "id" and "metadata" members, agentmem's
// additions to OpenAI's chat message, out of a JSON array of messages.
// The strict OpenAI decoder then sees the rest. It returns the array
// without them, and the extras by message index (nil when no message has
// any). An ID must be a non-empty string within store.MaxFieldBytes bytes,
// without NUL; metadata an object of at most store.MaxMetadataKeys
// strings, its keys non-empty and keys and values within
// store.MaxFieldBytes bytes, without NUL (as a session's). body has been
// checked (checkJSON): valid JSON without repeated keys.
func takeMessageExtras(body []byte) ([]byte, []messageExtras, *Error) {
	if !bytes.Contains(body, []byte(`"id"`)) && !bytes.Contains(body, []byte(`"metadata"`)) {
		return body, nil, nil // fast path: tool call IDs are "id" too, but most bodies have neither
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		return body, nil, nil // not an array: the decoder says why
	}
	var extras []messageExtras
	changed := false
	for i, raw := range raws {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil {
			continue // not an object: the decoder says why
		}
		idRaw, hasID := fields["id"]
		mdRaw, hasMD := fields["metadata"]
		if !hasID && !hasMD {
			continue
		}
		if extras == nil {
			extras = make([]messageExtras, len(raws))
		}
		prefix := fmt.Sprintf("messages[%d]", i)
		if hasID {
			field := prefix + ".id"
			var id string
			if err := json.Unmarshal(idRaw, &id); err != nil {
				return nil, nil, errInvalid(field, "must be a string")
			}
			if !shortText(id) {
				return nil, nil, errInvalid(field, "must be 1 to %d bytes, without NUL", store.MaxFieldBytes)
			}
			extras[i].ID = id
			delete(fields, "id")
		}
		if hasMD {
			md, e := messageMetadata(prefix+".metadata", mdRaw)
			if e != nil {
				return nil, nil, e
			}
			extras[i].Metadata = md
			delete(fields, "metadata")
		}
		b, err := json.Marshal(fields)
		if err != nil {
			return nil, nil, errInvalid(prefix, "%v", err)
		}
		raws[i] = b
		changed = true
	}
	if !changed {
		return body, nil, nil
	}
	out, err := json.Marshal(raws)
	if err != nil {
		return nil, nil, errInvalid("messages", "%v", err)
	}
	return out, extras, nil
}

// messageMetadata decodes and checks the "metadata" of a message (see
// takeMessageExtras); null is none.
func messageMetadata(field string, raw json.RawMessage) (map[string]string, *Error) {
	var md map[string]string
	if err := json.Unmarshal(raw, &md); err != nil {
		return nil, errInvalid(field, "must be an object whose values are strings")
	}
	if len(md) > store.MaxMetadataKeys {
		return nil, errInvalid(field, "has %d keys (at most %d)", len(md), store.MaxMetadataKeys)
	}
	for k, v := range md {
		if !shortText(k) {
			return nil, errInvalid(field, "has a key that is not 1 to %d bytes without NUL", store.MaxFieldBytes)
		}
		if len(v) > store.MaxFieldBytes || strings.IndexByte(v, 0) >= 0 {
			return nil, errInvalid(field+"["+k+"]", "must be at most %d bytes, without NUL", store.MaxFieldBytes)
		}
	}
	return md, nil
}

// shortText reports whether s is 1 to store.MaxFieldBytes bytes without
// NUL.
func shortText(s string) bool {
	return s != "" && len(s) <= store.MaxFieldBytes && strings.IndexByte(s, 0) < 0
}

// decodeCreate decodes and checks the body of POST /v1/sessions.
func decodeCreate(body []byte) (store.CreateRequest, *Error) {
	var req api.CreateSessionRequest
	if len(body) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			return store.CreateRequest{}, err
		}
	}
	if req.ID != "" {
		if err := checkID("id", req.ID); err != nil {
			return store.CreateRequest{}, err
		}
	}
	ttl, err := checkTTL(store.Retention(req.Retention), req.TTLSeconds)
	if err != nil {
		return store.CreateRequest{}, err
	}
	cr := store.CreateRequest{ID: req.ID, UserID: req.UserID, Agent: req.Agent, Metadata: req.Metadata, Retention: store.Retention(req.Retention), TTL: ttl,
		Pinning: apiconv.PinningFromAPI(req.Pinning), AutoCompact: apiconv.AutoCompactFromAPI(req.AutoCompact), ExtractFacts: apiconv.Bool(req.ExtractFacts)}
	if err := store.ValidateCreate(cr); err != nil {
		return store.CreateRequest{}, inputError(err)
	}
	return cr, nil
}

// maxTTLSeconds bounds ttl_seconds (a hundred years).
const maxTTLSeconds = 100 * 365 * 24 * 3600

// checkTTL checks ttl_seconds against the retention and returns it as a
// duration; store.ValidateCreate checks the rest.
func checkTTL(r store.Retention, ttlSeconds int64) (time.Duration, *Error) {
	if ttlSeconds < 0 || ttlSeconds > maxTTLSeconds {
		return 0, errInvalid("ttl_seconds", "must be between 0 and %d", maxTTLSeconds)
	}
	if ttlSeconds > 0 && r == store.Persistent {
		return 0, errInvalid("ttl_seconds", "a persistent session never expires: leave ttl_seconds out")
	}
	return time.Duration(ttlSeconds) * time.Second, nil
}

// decodeFork decodes the (optional) body of POST /v1/sessions/{id}/fork.
func decodeFork(body []byte) (api.ForkRequest, time.Duration, *Error) {
	var req api.ForkRequest
	if len(body) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			return req, 0, err
		}
	}
	if req.AtSeq < 0 {
		return req, 0, errInvalid("at_seq", "must not be negative")
	}
	if req.ID != "" {
		if err := checkID("id", req.ID); err != nil {
			return req, 0, err
		}
	}
	ttl, err := checkTTL(store.Retention(req.Retention), req.TTLSeconds)
	if err != nil {
		return req, 0, err
	}
	if err := store.ValidateAutoCompact(apiconv.AutoCompactFromAPI(req.AutoCompact)); err != nil {
		return req, 0, apiError(err)
	}
	return req, ttl, nil
}

// decodeCompact decodes and checks the body of POST /compact. haveLLM says
// whether an LLM summarizer is configured (it is then the default).
func decodeCompact(body []byte, haveLLM bool) (sessions.Plan, *Error) {
	var req api.CompactRequest
	if err := decodeStrict(body, &req); err != nil {
		return sessions.Plan{}, err
	}
	p := sessions.Plan{Strategy: req.Strategy}
	allowed := map[string]bool{}
	nonNeg := func(field string, v *int, def int, required bool) (int, *Error) {
		allowed[field] = true
		switch {
		case v == nil && required:
			return 0, errInvalid(field, "is required with strategy %q", req.Strategy)
		case v == nil:
			return def, nil
		case *v < 0:
			return 0, errInvalid(field, "must not be negative")
		}
		return *v, nil
	}
	var err *Error
	switch req.Strategy {
	case api.StrategyKeepLastN:
		p.N, err = nonNeg("n", req.N, 0, true)
	case api.StrategyTokenBudget:
		p.Budget, err = nonNeg("budget", req.Budget, 0, true)
		if err == nil && p.Budget == 0 {
			err = errInvalid("budget", "must be at least 1")
		}
	case api.StrategyPruneOldObservations:
		p.KeepLastN, err = nonNeg("keep_last_n", req.KeepLastN, 3, false)
		if err == nil {
			p.MaxLength, err = nonNeg("max_length", req.MaxLength, 200, false)
		}
	case api.StrategySummarize:
		p.KeepRecent, err = nonNeg("keep_recent", req.KeepRecent, agentmem.DefaultKeepRecent, false)
		allowed["summarizer"] = true
		p.Summarizer = api.SummarizerExtractive
		if haveLLM {
			p.Summarizer = api.SummarizerLLM
		}
		if req.Summarizer != nil {
			p.Summarizer = *req.Summarizer
		}
		if err == nil {
			switch p.Summarizer {
			case api.SummarizerExtractive:
			case api.SummarizerLLM:
				if !haveLLM {
					err = errInvalid("summarizer", "no LLM is configured on this server (set AGENTMEM_LLM_BASE_URL); use \"extractive\"")
				}
			default:
				err = errInvalid("summarizer", "unknown summarizer %q (want extractive or llm)", p.Summarizer)
			}
		}
	case "":
		return p, errInvalid("strategy", "is required (keep_last_n, token_budget, prune_old_observations or summarize)")
	default:
		return p, errInvalid("strategy", "unknown strategy %q (want keep_last_n, token_budget, prune_old_observations or summarize)", req.Strategy)
	}
	if err != nil {
		return p, err
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"n", req.N != nil}, {"budget", req.Budget != nil}, {"keep_last_n", req.KeepLastN != nil},
		{"max_length", req.MaxLength != nil}, {"keep_recent", req.KeepRecent != nil}, {"summarizer", req.Summarizer != nil},
	} {
		if f.set && !allowed[f.name] {
			return p, errInvalid(f.name, "does not apply to strategy %q", req.Strategy)
		}
	}
	return p, nil
}
