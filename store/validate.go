package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// More limits on input, checked before a request reaches a backend.
const (
	// MaxFieldBytes bounds a session's tenant, user and agent names and
	// each metadata key and value.
	MaxFieldBytes = 256
	// MaxMetadataKeys bounds the number of metadata entries of a session
	// and of a step (the OpenAPI document's maxProperties of both).
	MaxMetadataKeys = 64
	// MaxPageSize is the largest List page; larger requests get this many.
	MaxPageSize = 1000
	// DefaultPageSize is the List page size when none is asked for.
	DefaultPageSize = 50
)

// invalid returns an *agentmem.InvalidError, which wraps agentmem.ErrInvalid.
func invalid(field, format string, args ...any) error {
	return &agentmem.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ValidateID checks a session ID, which is also a conversation's ID
// (Conversations) and holds an agent's name (AgentSessionID). An ID is any
// text of 1 to MaxIDLen bytes of valid UTF-8 without control characters (C0,
// DEL and C1), such as "user@example.com" or "Research Agent". Only "." and
// ".." are refused, since no URL path segment can hold them: clients leave
// dots unescaped, and servers clean such segments away. The backends keep it
// as it is, as a bound parameter of their statements; URLs carry it
// percent-encoded, and pages escape it. Errors wrap ErrInvalid.
func ValidateID(id string) error { return validateID("session_id", id) }

// ValidateKey checks what names a session: its tenant (valid UTF-8, at
// most MaxFieldBytes, no NUL) and its ID (ValidateID). Errors wrap
// agentmem.ErrInvalid.
func ValidateKey(tenant, id string) error {
	if err := validateField("tenant", tenant); err != nil {
		return err
	}
	return ValidateID(id)
}

func validateID(field, id string) error {
	if err := validName(field, id, MaxIDLen); err != nil {
		return err
	}
	if id == "." || id == ".." {
		return invalid(field, "%q is not a valid session ID: a URL path segment cannot hold it", id)
	}
	return nil
}

// validName checks a name that is a key, such as a session ID or an
// agent's name: 1 to max bytes of valid UTF-8 without control characters,
// which no header, log line or page shows as they are.
func validName(field, name string, max int) error {
	switch {
	case name == "":
		return invalid(field, "is required")
	case len(name) > max:
		return invalid(field, "is %d bytes long (at most %d)", len(name), max)
	case !utf8.ValidString(name):
		return invalid(field, "is not valid UTF-8")
	}
	if i := strings.IndexFunc(name, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(name[i:])
		return invalid(field, "%.140q contains the control character %U (at byte %d)", name, r, i)
	}
	return nil
}

// validateField checks a short text field: valid UTF-8, at most
// MaxFieldBytes bytes.
func validateField(field, v string) error {
	if !utf8.ValidString(v) {
		return invalid(field, "is not valid UTF-8")
	}
	if len(v) > MaxFieldBytes {
		return invalid(field, "is %d bytes long (at most %d)", len(v), MaxFieldBytes)
	}
	// NUL is valid UTF-8 but PostgreSQL's text cannot hold it; refusing it
	// everywhere keeps the backends alike.
	if strings.IndexByte(v, 0) >= 0 {
		return invalid(field, "contains a NUL byte")
	}
	return nil
}

func validateMetadata(md map[string]string) error {
	if len(md) > MaxMetadataKeys {
		return invalid("metadata", "has %d keys (at most %d)", len(md), MaxMetadataKeys)
	}
	for k, v := range md {
		if k == "" {
			return invalid("metadata", "has an empty key")
		}
		if err := validateField("metadata key", k); err != nil {
			return err
		}
		if err := validateField(fmt.Sprintf("metadata[%q]", k), v); err != nil {
			return err
		}
	}
	return nil
}

// validateRetention checks that r is empty (the default) or one of
// SingleRun, SessionRetention and Persistent.
func validateRetention(r Retention) error {
	switch r {
	case "", SingleRun, SessionRetention, Persistent:
		return nil
	}
	return invalid("retention", "unknown retention %q (want %q, %q or %q)", r, SingleRun, SessionRetention, Persistent)
}

// ValidateCreate checks a CreateRequest on its own (the parent's
// existence and LastSeq are the backend's to check). Backends call it
// first and change nothing when it fails. Errors wrap ErrInvalid.
func ValidateCreate(req CreateRequest) error {
	if req.ID != "" {
		if err := ValidateID(req.ID); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{{"tenant", req.Tenant}, {"user_id", req.UserID}, {"agent", req.Agent}} {
		if err := validateField(f.name, f.v); err != nil {
			return err
		}
	}
	if err := validateMetadata(req.Metadata); err != nil {
		return err
	}
	if err := validateRetention(req.Retention); err != nil {
		return err
	}
	if err := ValidateAutoCompact(req.AutoCompact); err != nil {
		return err
	}
	if req.TTL < 0 {
		return invalid("ttl", "is negative")
	}
	if req.TTL > 0 && req.Retention == Persistent {
		return invalid("ttl", "persistent sessions never expire; drop the TTL or choose another retention")
	}
	if req.ForkSeq < 0 {
		return invalid("fork_seq", "is negative")
	}
	if req.ParentID == "" {
		if req.ForkSeq != 0 {
			return invalid("fork_seq", "is set without a parent_id")
		}
		return nil
	}
	if err := validateID("parent_id", req.ParentID); err != nil {
		return err
	}
	if req.ParentID == req.ID {
		return invalid("parent_id", "is the session's own ID")
	}
	return nil
}

// Expired reports whether the session has expired at now. Persistent
// sessions never do.
func (s *Session) Expired(now time.Time) bool {
	return s.Retention != Persistent && !s.ExpiresAt.IsZero() && !now.Before(s.ExpiresAt)
}

// Clone returns a deep copy of the session.
func (s *Session) Clone() *Session {
	if s == nil {
		return nil
	}
	c := *s
	c.Metadata = cloneMap(s.Metadata)
	c.Pinning, c.AutoCompact = cloneSettings(s.Pinning, s.AutoCompact)
	c.ExtractFacts = cloneBool(s.ExtractFacts)
	return &c
}

// ValidateSession checks a whole session, as Import receives it: the
// fields CreateRequest would check, a known retention, no expiry for a
// persistent session, and LastSeq >= 0. Errors wrap ErrInvalid.
func ValidateSession(s *Session) error {
	if s == nil {
		return invalid("session", "is missing")
	}
	if err := ValidateID(s.ID); err != nil {
		return err
	}
	req := CreateRequest{ID: s.ID, Tenant: s.Tenant, UserID: s.UserID, Agent: s.Agent, Metadata: s.Metadata, Retention: s.Retention,
		ParentID: s.ParentID, ForkSeq: s.ForkSeq, Pinning: s.Pinning, AutoCompact: s.AutoCompact, ExtractFacts: s.ExtractFacts}
	if err := ValidateCreate(req); err != nil {
		return err
	}
	if s.Retention == "" {
		return invalid("retention", "is required")
	}
	if s.Retention == Persistent && !s.ExpiresAt.IsZero() {
		return invalid("expires_at", "is set on a persistent session")
	}
	if s.LastSeq < 0 {
		return invalid("last_seq", "is negative")
	}
	if s.ForkSeq > s.LastSeq {
		return invalid("fork_seq", "%d is after last_seq %d", s.ForkSeq, s.LastSeq)
	}
	return nil
}

// validateStep checks one step of an append or a compaction: not nil,
// valid, with at most MaxMetadataKeys metadata entries, with an ID, and a
// JSON encoding of at most MaxStepBytes.
func validateStep(field string, s agentmem.Step) ([]byte, error) {
	return validateEncodedStep(field, s, nil)
}

// validateEncodedStep is validateStep of a step whose encoding is enc,
// or, if enc is nil, not yet made.
func validateEncodedStep(field string, s agentmem.Step, enc []byte) ([]byte, error) {
	if s == nil {
		return nil, invalid(field, "is nil")
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if n := len(s.Info().Metadata); n > MaxMetadataKeys {
		return nil, invalid(field+".metadata", "has %d keys (at most %d)", n, MaxMetadataKeys)
	}
	id := s.Info().ID
	if id == "" {
		return nil, invalid(field+".id", "is required: the store recognizes retried appends by step ID")
	}
	if err := validateField(field+".id", id); err != nil {
		return nil, err
	}
	b := enc
	if b == nil {
		var err error
		if b, err = EncodeStep(s); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
	}
	if len(b) > MaxStepBytes {
		return nil, invalid(field, "is %d bytes as JSON (at most %d)", len(b), MaxStepBytes)
	}
	return b, nil
}

// ValidateAppend checks an AppendRequest on its own: a valid session ID;
// at least one step or a compaction; valid steps with IDs, distinct, each
// at most MaxStepBytes as JSON; and a well-formed compaction (see
// CompactionRecord). Backends call it first and change nothing when it
// fails; what needs the log (the sequence numbers a compaction names) is
// checked by storekit.CheckCompaction. Errors wrap ErrInvalid.
func ValidateAppend(req AppendRequest) error {
	_, err := ValidateAppendEncoded(req)
	return err
}

// ValidateAppendEncoded is ValidateAppend that also returns each step's
// encoding (EncodeStep), which validation computes to check its size: a
// backend stores it (renumbered) rather than encode the step again. The
// encodings of a request from WithStepsKey are those it made.
func ValidateAppendEncoded(req AppendRequest) ([][]byte, error) {
	if err := ValidateKey(req.Tenant, req.SessionID); err != nil {
		return nil, err
	}
	if len(req.Steps) == 0 && req.Compaction == nil && req.Idempotency == nil {
		return nil, invalid("steps", "nothing to append: no steps and no compaction")
	}
	if req.Idempotency != nil {
		if err := ValidateIdempotency(req.Idempotency); err != nil {
			return nil, err
		}
	}
	if req.ExpectedLastSeq != nil && *req.ExpectedLastSeq < 0 {
		return nil, invalid("expected_last_seq", "is negative")
	}
	pre := req.encoded.of(req.Steps)
	encoded := make([][]byte, len(req.Steps))
	ids := make(map[string]int, len(req.Steps))
	for i, s := range req.Steps {
		f := "steps[" + strconv.Itoa(i) + "]"
		var enc []byte
		if pre != nil {
			enc = pre[i]
		}
		b, err := validateEncodedStep(f, s, enc)
		if err != nil {
			return nil, err
		}
		encoded[i] = b
		id := s.Info().ID
		if j, dup := ids[id]; dup {
			return nil, invalid(f+".id", "%q is also the ID of steps[%d]", id, j)
		}
		ids[id] = i
	}
	if req.Compaction != nil {
		if err := validateCompaction(req.Compaction, len(req.Steps)); err != nil {
			return nil, err
		}
	}
	return encoded, nil
}

// validateCompaction checks a compaction record on its own, for an append
// of newSteps steps. Each Working reference is a positive sequence number
// or NewStepRef(i) with 0 <= i < newSteps, none repeated. Each Removed
// number is positive, none repeated. Each Replaced copy is a valid step
// with an ID whose number is a (positive) sequence number in Working, one
// copy per number. An amendment has no Working or Removed list and at
// least one copy, each a valid step with an ID and a positive number, one
// copy per number. Errors wrap ErrInvalid.
func validateCompaction(c *CompactionRecord, newSteps int) error {
	if c == nil {
		return invalid("compaction", "is nil")
	}
	if c.Amend {
		return validateAmendment(c)
	}
	inWorking := make(map[int64]bool, len(c.Working))
	for i, ref := range c.Working {
		f := fmt.Sprintf("compaction.working[%d]", i)
		switch {
		case ref == 0:
			return invalid(f, "0 is neither a sequence number nor a new-step reference")
		case ref < 0 && -ref-1 >= int64(newSteps):
			return invalid(f, "NewStepRef(%d) but the request has %d steps", -ref-1, newSteps)
		case inWorking[ref]:
			return invalid(f, "%d is repeated", ref)
		}
		inWorking[ref] = true
	}
	removed := make(map[int64]bool, len(c.Removed))
	for i, n := range c.Removed {
		f := fmt.Sprintf("compaction.removed[%d]", i)
		if n <= 0 {
			return invalid(f, "%d is not a sequence number", n)
		}
		if removed[n] {
			return invalid(f, "%d is repeated", n)
		}
		removed[n] = true
	}
	replaced := make(map[int64]bool, len(c.Replaced))
	for i, s := range c.Replaced {
		f := fmt.Sprintf("compaction.replaced[%d]", i)
		if _, err := validateStep(f, s); err != nil {
			return err
		}
		n := int64(s.Info().Number)
		if n <= 0 || !inWorking[n] {
			return invalid(f+".number", "%d does not name a step of the working set by sequence number", n)
		}
		if replaced[n] {
			return invalid(f+".number", "step %d has more than one replacement", n)
		}
		replaced[n] = true
	}
	return nil
}

// validateAmendment is validateCompaction for an amendment.
func validateAmendment(c *CompactionRecord) error {
	if len(c.Working) > 0 {
		return invalid("compaction.working", "is not allowed in an amendment: an amendment keeps the working set as it is and only replaces steps by the copies it carries")
	}
	if len(c.Removed) > 0 {
		return invalid("compaction.removed", "is not allowed in an amendment: an amendment removes no step")
	}
	if len(c.Replaced) == 0 {
		return invalid("compaction.replaced", "is empty: an amendment carries at least one copy")
	}
	replaced := make(map[int64]bool, len(c.Replaced))
	for i, s := range c.Replaced {
		f := fmt.Sprintf("compaction.replaced[%d]", i)
		if _, err := validateStep(f, s); err != nil {
			return err
		}
		n := int64(s.Info().Number)
		if n <= 0 {
			return invalid(f+".number", "%d is not the sequence number of a step", n)
		}
		if replaced[n] {
			return invalid(f+".number", "step %d has more than one replacement", n)
		}
		replaced[n] = true
	}
	return nil
}

// validateRead checks a ReadRequest: a valid session ID, no negative
// After, Limit or Last, not both Limit and Last, and none of them with
// WorkingSet. Errors wrap ErrInvalid.
func validateRead(req ReadRequest) error {
	if err := ValidateKey(req.Tenant, req.SessionID); err != nil {
		return err
	}
	switch {
	case req.After < 0:
		return invalid("after", "is negative")
	case req.Limit < 0:
		return invalid("limit", "is negative")
	case req.Last < 0:
		return invalid("last", "is negative")
	case req.Limit > 0 && req.Last > 0:
		return invalid("last", "cannot be combined with limit")
	case req.WorkingSet && (req.After != 0 || req.Limit != 0 || req.Last != 0):
		return invalid("working_set", "cannot be combined with after, limit or last")
	}
	return nil
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
