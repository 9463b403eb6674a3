package facts

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// Limits on input. Anything larger is refused with an
// *agentmem.InvalidError, and nothing is written.
const (
	// MaxTextBytes bounds a fact's text: a fact is one short statement
	// ("prefers metric units"), not a document.
	MaxTextBytes = 2048
	// MaxFieldBytes bounds tenants, user IDs, source fields, the "by" of
	// a forget, and each metadata key and value.
	MaxFieldBytes = 256
	// MaxReasonBytes bounds the reason given for forgetting a fact.
	MaxReasonBytes = 1024
	// MaxMetadataKeys bounds the number of metadata entries of a fact.
	MaxMetadataKeys = 32
	// MaxEmbeddingDims bounds the length of a fact's embedding.
	MaxEmbeddingDims = 8192
	// MaxMetadataFilters bounds the metadata entries a list or search
	// filters on (ListRequest.Metadata, SearchRequest.Metadata).
	MaxMetadataFilters = 8
)

// Source says where a fact was learnt: the session and step of the turn
// it was extracted from, and the agent that extracted or remembered it.
// Every field is optional.
type Source struct {
	SessionID string `json:"session_id,omitempty"`
	StepSeq   int64  `json:"step_seq,omitempty"`
	Agent     string `json:"agent,omitempty"`
}

// IsZero reports whether s names no source at all.
func (s Source) IsZero() bool { return s == Source{} }

// Fact is one thing known about a user, such as "prefers answers in
// French". Facts are values: the methods of Memory return copies.
//
// Confidence is the base confidence, set when the fact was added or last
// reinforced, at ReinforcedAt; what it is worth now is
// Decay.Effective(f, now), which decays with time unless the fact is
// reinforced. A contradicted fact is not deleted: SupersededBy names its
// successor and SupersededAt says when, so past states stay readable.
//
// A fact has two kinds of time. Record times (CreatedAt, ReinforcedAt,
// SupersededAt) say when the memory learnt or changed it; event times
// (ValidFrom, ValidTo) say when it was true in the world. A fact holds at
// t when ValidFrom ≤ t < ValidTo (HoldsAt); superseding a fact closes it,
// setting its ValidTo to when its successor became true.
type Fact struct {
	// ID identifies the fact within its tenant (a UUIDv7, so IDs sort by
	// creation time).
	ID string `json:"id"`
	// Tenant isolates facts: a tenant never sees another's. Empty is the
	// default tenant.
	Tenant string `json:"tenant,omitempty"`
	// UserID is the user the fact is about.
	UserID string `json:"user_id"`
	// Text is the fact, as one self-contained statement.
	Text string `json:"text"`
	// Confidence is the base confidence in [0, 1] at ReinforcedAt.
	Confidence float64 `json:"confidence"`
	// CreatedAt is when the fact was first recorded.
	CreatedAt time.Time `json:"created_at"`
	// ReinforcedAt is when the fact was last added or seen again; decay
	// runs from it.
	ReinforcedAt time.Time `json:"reinforced_at"`
	// Reinforcements counts how many times the fact was seen again after
	// it was added.
	Reinforcements int `json:"reinforcements"`
	// Source is where the fact was first learnt.
	Source Source `json:"source,omitzero"`
	// SupersededBy is the ID of the fact that contradicted this one;
	// empty while the fact is valid.
	SupersededBy string `json:"superseded_by,omitempty"`
	// SupersededAt is when the fact was superseded; zero while valid.
	SupersededAt time.Time `json:"superseded_at,omitzero"`
	// ValidFrom is when the fact became true in the world; by default
	// when it was recorded.
	ValidFrom time.Time `json:"valid_from"`
	// ValidTo is when the fact stopped being true in the world; zero
	// while it still is, as far as the memory knows. It is never before
	// ValidFrom; equal to it, the fact never held (it was superseded
	// before it became true).
	ValidTo time.Time `json:"valid_to,omitzero"`
	// Metadata is free-form caller data.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Embedding is the fact text's vector when Memory has an Embedder.
	Embedding []float32 `json:"-"`
}

// Valid reports whether the fact is still valid: not superseded.
func (f Fact) Valid() bool { return f.SupersededBy == "" }

// HoldsAt reports whether the fact was true in the world at t:
// ValidFrom ≤ t < ValidTo (a zero ValidTo is open-ended).
func (f Fact) HoldsAt(t time.Time) bool {
	return !t.Before(f.ValidFrom) && (f.ValidTo.IsZero() || t.Before(f.ValidTo))
}

// State returns the fields of f that an edit can change, as the audit log
// records them before and after a change.
func (f Fact) State() *FactState {
	return &FactState{Text: f.Text, Confidence: f.Confidence, Metadata: maps.Clone(f.Metadata), ValidFrom: f.ValidFrom, ValidTo: f.ValidTo}
}

// FactState is what a fact said at one point of its history: the fields
// a change (an edit, a supersession) can change.
type FactState struct {
	Text       string            `json:"text"`
	Confidence float64           `json:"confidence"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	ValidFrom  time.Time         `json:"valid_from"`
	ValidTo    time.Time         `json:"valid_to,omitzero"`
}

// clone returns a deep copy of s (nil for nil).
func (s *FactState) clone() *FactState {
	if s == nil {
		return nil
	}
	c := *s
	c.Metadata = maps.Clone(s.Metadata)
	return &c
}

// validate checks a recorded state; field prefixes the field names.
func (s *FactState) validate(field string) error {
	if s == nil {
		return nil
	}
	if err := checkText(field+".text", s.Text); err != nil {
		return err
	}
	if err := checkConfidence(field+".confidence", s.Confidence); err != nil {
		return err
	}
	if err := checkValidity(field+".", s.ValidFrom, s.ValidTo); err != nil {
		return err
	}
	return checkMetadata(s.Metadata)
}

// checkValidity checks a fact's event times: valid_from set, valid_to
// zero or not before it.
func checkValidity(field string, from, to time.Time) error {
	if from.IsZero() {
		return invalid(field+"valid_from", "is required")
	}
	if !to.IsZero() && to.Before(from) {
		return invalid(field+"valid_to", "%s is before valid_from %s", to.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano))
	}
	return nil
}

// CheckMetadataFilter checks a metadata filter (ListRequest.Metadata): at
// most MaxMetadataFilters entries, keys non-empty, keys and values valid
// UTF-8 without NUL and at most MaxFieldBytes. Errors are
// *agentmem.InvalidError.
func CheckMetadataFilter(md map[string]string) error {
	if len(md) > MaxMetadataFilters {
		return invalid("metadata", "filters on %d keys (at most %d)", len(md), MaxMetadataFilters)
	}
	for k, v := range md {
		if err := checkField("metadata key", k, MaxFieldBytes, true); err != nil {
			return err
		}
		if err := checkField(fmt.Sprintf("metadata.%s", k), v, MaxFieldBytes, false); err != nil {
			return err
		}
	}
	return nil
}

// matchesMetadata reports whether f has every entry of filter.
func (f Fact) matchesMetadata(filter map[string]string) bool {
	for k, v := range filter {
		if got, ok := f.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Clone returns a deep copy of f.
func (f Fact) Clone() Fact {
	f.Metadata = maps.Clone(f.Metadata)
	f.Embedding = slices.Clone(f.Embedding)
	return f
}

// Decay is how confidence fades when a fact is not seen again.
//
// The effective confidence of a fact with base confidence c, last
// reinforced at r, is, at time t:
//
//	floor' + (c − floor') · 2^(−(t − r) / HalfLife),  floor' = min(Floor, c)
//
// an exponential decay toward the floor: after one half-life a fact has
// lost half of what it held above the floor. The floor keeps old facts
// findable (an old corpus never decays to zero, so search still ranks
// them), while InjectThreshold above the floor keeps stale ones out of the
// prompt. A fact whose base is below the floor stays at its base: decay
// never raises confidence. A HalfLife of zero or less means no decay.
type Decay struct {
	// HalfLife is the time after which a fact keeps half its confidence
	// above the floor.
	HalfLife time.Duration
	// Floor is the confidence decay tends to, in [0, 1].
	Floor float64
}

// Effective returns f's confidence at time now (see Decay). Times before
// f.ReinforcedAt count as no time elapsed.
func (d Decay) Effective(f Fact, now time.Time) float64 {
	c := f.Confidence
	if d.HalfLife <= 0 {
		return c
	}
	elapsed := now.Sub(f.ReinforcedAt)
	if elapsed <= 0 {
		return c
	}
	floor := min(d.Floor, c)
	return floor + (c-floor)*math.Exp2(-float64(elapsed)/float64(d.HalfLife))
}

// invalid returns an *agentmem.InvalidError, which wraps agentmem.ErrInvalid.
func invalid(field, format string, args ...any) error {
	return &agentmem.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// checkField checks a short text field: valid UTF-8, no NUL (PostgreSQL's
// text cannot hold one, so no backend accepts it), at most max bytes, and
// non-empty when required.
func checkField(field, v string, max int, required bool) error {
	switch {
	case required && strings.TrimSpace(v) == "":
		return invalid(field, "is required")
	case !utf8.ValidString(v):
		return invalid(field, "is not valid UTF-8")
	case strings.IndexByte(v, 0) >= 0:
		return invalid(field, "contains a NUL byte")
	case len(v) > max:
		return invalid(field, "is %d bytes long (at most %d)", len(v), max)
	}
	return nil
}

// ValidateUser checks a tenant (optional) and a user ID (required): valid
// UTF-8 without NUL, at most MaxFieldBytes each. Errors are
// *agentmem.InvalidError.
func ValidateUser(tenant, userID string) error {
	if err := checkField("tenant", tenant, MaxFieldBytes, false); err != nil {
		return err
	}
	return checkField("user_id", userID, MaxFieldBytes, true)
}

// checkText checks a fact's text.
func checkText(field, text string) error {
	return checkField(field, text, MaxTextBytes, true)
}

// checkConfidence checks a confidence: a number in [0, 1].
func checkConfidence(field string, c float64) error {
	if math.IsNaN(c) || c < 0 || c > 1 {
		return invalid(field, "%v is not in [0, 1]", c)
	}
	return nil
}

// checkSource checks a Source.
func checkSource(s Source) error {
	if err := checkField("source.session_id", s.SessionID, MaxFieldBytes, false); err != nil {
		return err
	}
	if s.StepSeq < 0 {
		return invalid("source.step_seq", "%d is negative", s.StepSeq)
	}
	return checkField("source.agent", s.Agent, MaxFieldBytes, false)
}

// checkMetadata checks a metadata map.
func checkMetadata(md map[string]string) error {
	if len(md) > MaxMetadataKeys {
		return invalid("metadata", "has %d keys (at most %d)", len(md), MaxMetadataKeys)
	}
	for k, v := range md {
		if err := checkField("metadata key", k, MaxFieldBytes, true); err != nil {
			return err
		}
		if err := checkField(fmt.Sprintf("metadata[%q]", k), v, MaxFieldBytes, false); err != nil {
			return err
		}
	}
	return nil
}

// ValidateFact checks every field of a fact that a Store is asked to
// write. Backends call it (through CheckChanges) so that no backend
// stores what another would refuse. Errors are *agentmem.InvalidError.
func ValidateFact(f Fact) error {
	if err := checkField("id", f.ID, MaxFieldBytes, true); err != nil {
		return err
	}
	if err := ValidateUser(f.Tenant, f.UserID); err != nil {
		return err
	}
	if err := checkText("text", f.Text); err != nil {
		return err
	}
	if err := checkConfidence("confidence", f.Confidence); err != nil {
		return err
	}
	if f.CreatedAt.IsZero() || f.ReinforcedAt.IsZero() {
		return invalid("created_at", "and reinforced_at are required")
	}
	if f.ReinforcedAt.Before(f.CreatedAt) {
		return invalid("reinforced_at", "is before created_at")
	}
	if f.Reinforcements < 0 {
		return invalid("reinforcements", "%d is negative", f.Reinforcements)
	}
	if err := checkSource(f.Source); err != nil {
		return err
	}
	if err := checkValidity("", f.ValidFrom, f.ValidTo); err != nil {
		return err
	}
	if err := checkField("superseded_by", f.SupersededBy, MaxFieldBytes, false); err != nil {
		return err
	}
	if f.SupersededBy == f.ID {
		return invalid("superseded_by", "a fact cannot supersede itself")
	}
	if (f.SupersededBy == "") != f.SupersededAt.IsZero() {
		return invalid("superseded_at", "must be set exactly when superseded_by is")
	}
	if len(f.Embedding) > MaxEmbeddingDims {
		return invalid("embedding", "has %d dimensions (at most %d)", len(f.Embedding), MaxEmbeddingDims)
	}
	for _, x := range f.Embedding {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return invalid("embedding", "holds a NaN or an infinity")
		}
	}
	return checkMetadata(f.Metadata)
}
