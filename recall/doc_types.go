package recall

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// Limits on what a document may hold. A document over a limit is refused
// with an *agentmem.InvalidError and nothing is written.
const (
	// MaxTenantLen is the longest tenant name, in bytes.
	MaxTenantLen = 128
	// MaxIDLen is the longest document ID, in bytes: room for the IDs
	// made of a session's ID (up to store.MaxIDLen bytes) and a suffix,
	// as recallview.StepDocs' "<session>#<seq>".
	MaxIDLen = 512
	// MaxGroupLen is the longest group name, in bytes.
	MaxGroupLen = 256
	// MaxTextBytes is the longest document text, in bytes. recallview.StepDocs
	// truncates long observations well below it.
	MaxTextBytes = 256 << 10
	// MaxMetadata is the largest number of metadata pairs of a document.
	MaxMetadata = 64
	// MaxMetaKeyLen and MaxMetaValueLen bound a metadata key and value,
	// in bytes.
	MaxMetaKeyLen   = 128
	MaxMetaValueLen = 4096
	// MaxDims is the largest embedding dimension.
	MaxDims = 16384
	// MaxModelLen is the longest embedding model name, in bytes.
	MaxModelLen = 256
)

// Doc is a document of the recall index: a text with its attributes. A
// document belongs to one tenant; every operation is scoped to one tenant
// and never sees another's documents.
type Doc struct {
	// ID names the document within its tenant; upserting an ID again
	// replaces the document.
	ID string
	// Tenant owns the document. The empty string is a tenant like any
	// other (the default one of a single-tenant program), not a wildcard.
	Tenant string
	// Text is what is analyzed, indexed and searched.
	Text string
	// Metadata are the document's attributes, matched exactly by
	// Filter.Metadata.
	Metadata map[string]string
	// Time is when what the document records happened (a turn's time);
	// Filter.Since and Until select on it. Stored in UTC, to the
	// microsecond. The zero time means unknown.
	Time time.Time
	// Group and Seq place the document in an ordered stream, such as a
	// session (Group) and its step number (Seq): neighbours (Hit.Window)
	// are the documents of the same group with nearby Seq, and search
	// diversifies across groups. A document with no Group has no
	// neighbours.
	Group string
	Seq   int64
	// Embedding is the document's vector, if it has one: precomputed by
	// the caller, or computed by the Index's Embedder.
	Embedding []float32
	// EmbeddingModel names the model that computed Embedding. The
	// Index re-embeds documents whose model differs from its Embedder's
	// (see Index.Reembed): a caller that supplies vectors from the same
	// model as the Embedder should say so here.
	EmbeddingModel string
}

// Clone returns a deep copy of d.
func (d Doc) Clone() Doc {
	d.Metadata = maps.Clone(d.Metadata)
	d.Embedding = slices.Clone(d.Embedding)
	return d
}

// Filter narrows a search, a scan or a Clear to the documents that hold
// every pair of Metadata, whose Time is in [Since, Until) and that are
// inside one of the Spans. Zero fields do not filter; the zero Filter
// matches every document of the tenant.
type Filter struct {
	Metadata map[string]string
	// Since, when set, keeps documents with Time at or after it.
	Since time.Time
	// Until, when set, keeps documents with Time before it. Documents with
	// a zero Time are outside every range that sets Since or Until.
	Until time.Time
	// Spans, when set, keeps the documents inside one of them (at most
	// MaxSpans): the turns of a conversation that several groups hold,
	// such as a branch's own and those it inherited (see Lineage).
	Spans []Span
}

// A Span is a run of one group's documents: those of Group with
// After < Seq <= Through (no upper bound when Through is 0), made from
// log entries up to Through (EntrySeq). A session's amendment of a turn
// after the span's end is not in it.
type Span struct {
	Group          string
	After, Through int64
}

// MaxSpans is the most spans a Filter may hold.
const MaxSpans = 64

// Holds reports whether the span holds a document of group at seq made
// from its step's own entry.
func (s Span) Holds(group string, seq int64) bool {
	return group == s.Group && seq > s.After && (s.Through == 0 || seq <= s.Through)
}

// holdsDoc reports whether the span holds d.
func (s Span) holdsDoc(d *Doc) bool { return s.Holds(d.Group, d.Seq) && s.holdsEntry(EntrySeq(d)) }

// holdsEntry reports whether the span's session logged entry before the
// span ends.
func (s Span) holdsEntry(entry int64) bool { return s.Through == 0 || entry <= s.Through }

// Match reports whether d passes the filter.
func (f Filter) Match(d *Doc) bool {
	for k, v := range f.Metadata {
		if got, ok := d.Metadata[k]; !ok || got != v {
			return false
		}
	}
	if (!f.Since.IsZero() || !f.Until.IsZero()) && d.Time.IsZero() {
		return false
	}
	if !f.Since.IsZero() && d.Time.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !d.Time.Before(f.Until) {
		return false
	}
	if len(f.Spans) > 0 && !slices.ContainsFunc(f.Spans, func(s Span) bool { return s.holdsDoc(d) }) {
		return false
	}
	return true
}

// Normalize returns a copy of f with its times in UTC, truncated to the
// microsecond as stored times are.
func (f Filter) Normalize() Filter {
	f.Metadata = maps.Clone(f.Metadata)
	f.Spans = slices.Clone(f.Spans)
	f.Since = normTime(f.Since)
	f.Until = normTime(f.Until)
	return f
}

func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

func invalid(field, format string, args ...any) error {
	return &agentmem.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// checkString refuses invalid UTF-8, NUL and strings longer than max.
func checkString(field, s string, max int) error {
	switch {
	case len(s) > max:
		return invalid(field, "is %d bytes, more than the %d allowed", len(s), max)
	case !utf8.ValidString(s):
		return invalid(field, "is not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return invalid(field, "holds a NUL byte")
	}
	return nil
}

// CheckTenant validates a tenant name: at most MaxTenantLen bytes of
// UTF-8 without NUL (empty is the default tenant).
func CheckTenant(tenant string) error { return checkString("tenant", tenant, MaxTenantLen) }

// CheckID validates a document ID: 1 to MaxIDLen bytes of UTF-8 without
// NUL.
func CheckID(id string) error {
	if id == "" {
		return invalid("id", "is empty")
	}
	return checkString("id", id, MaxIDLen)
}

// CheckDoc validates a document and returns the copy a backend stores:
// time in UTC truncated to the microsecond, metadata and embedding
// copied, empty metadata as nil. Every backend calls it (through
// CheckDocs) before writing anything, so all refuse the same documents
// with an *agentmem.InvalidError.
func CheckDoc(d Doc) (Doc, error) {
	if err := CheckTenant(d.Tenant); err != nil {
		return Doc{}, err
	}
	if err := CheckID(d.ID); err != nil {
		return Doc{}, err
	}
	if err := checkString("text", d.Text, MaxTextBytes); err != nil {
		return Doc{}, err
	}
	if err := checkString("group", d.Group, MaxGroupLen); err != nil {
		return Doc{}, err
	}
	if err := checkMetadata(d.Metadata); err != nil {
		return Doc{}, err
	}
	if err := checkVector("embedding", d.Embedding); err != nil {
		return Doc{}, err
	}
	if err := checkString("embedding_model", d.EmbeddingModel, MaxModelLen); err != nil {
		return Doc{}, err
	}
	if d.Time.Year() < 1 || d.Time.Year() > 9999 {
		return Doc{}, invalid("time", "%v is outside years 1 to 9999", d.Time)
	}
	d = d.Clone()
	if len(d.Metadata) == 0 {
		d.Metadata = nil
	}
	if len(d.Embedding) == 0 {
		d.Embedding = nil
	}
	d.Time = normTime(d.Time)
	return d, nil
}

// CheckDocs validates documents for one Upsert (see CheckDoc): they must
// all belong to one tenant, and an ID may appear once.
func CheckDocs(docs []Doc) ([]Doc, error) {
	out := make([]Doc, len(docs))
	seen := make(map[string]bool, len(docs))
	for i, d := range docs {
		c, err := CheckDoc(d)
		if err != nil {
			return nil, prefixInvalid(fmt.Sprintf("docs[%d].", i), err)
		}
		if c.Tenant != docs[0].Tenant {
			return nil, invalid(fmt.Sprintf("docs[%d].tenant", i), "differs from docs[0]'s: one upsert writes to one tenant")
		}
		if seen[c.ID] {
			return nil, invalid(fmt.Sprintf("docs[%d].id", i), "%q appears twice in one upsert", c.ID)
		}
		seen[c.ID] = true
		out[i] = c
	}
	return out, nil
}

func checkMetadata(m map[string]string) error {
	if len(m) > MaxMetadata {
		return invalid("metadata", "has %d pairs, more than the %d allowed", len(m), MaxMetadata)
	}
	for k, v := range m {
		if k == "" {
			return invalid("metadata", "has an empty key")
		}
		if err := checkString("metadata key", k, MaxMetaKeyLen); err != nil {
			return err
		}
		if err := checkString("metadata["+k+"]", v, MaxMetaValueLen); err != nil {
			return err
		}
	}
	return nil
}

func checkVector(field string, v []float32) error {
	if len(v) > MaxDims {
		return invalid(field, "has %d dimensions, more than the %d allowed", len(v), MaxDims)
	}
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return invalid(fmt.Sprintf("%s[%d]", field, i), "is not a finite number")
		}
	}
	return nil
}

// CheckFilter validates a filter's metadata like a document's.
func CheckFilter(f Filter) error {
	if err := checkMetadata(f.Metadata); err != nil {
		return prefixInvalid("filter.", err)
	}
	if len(f.Spans) > MaxSpans {
		return invalid("filter.spans", "has %d spans, more than the %d allowed", len(f.Spans), MaxSpans)
	}
	for i, s := range f.Spans {
		field := "filter.spans[" + strconv.Itoa(i) + "]"
		if err := checkString(field+".group", s.Group, MaxGroupLen); err != nil {
			return err
		}
		if s.Group == "" {
			return invalid(field+".group", "is empty")
		}
		if s.After < 0 || s.Through < 0 || (s.Through != 0 && s.Through <= s.After) {
			return invalid(field, "after %d and through %d hold no sequence number", s.After, s.Through)
		}
	}
	return nil
}

// prefixInvalid puts prefix before the field of an *agentmem.InvalidError.
func prefixInvalid(prefix string, err error) error {
	var ie *agentmem.InvalidError
	if errors.As(err, &ie) {
		return &agentmem.InvalidError{Field: prefix + ie.Field, Reason: ie.Reason}
	}
	return err
}

// ErrClosed is returned by a Backend or Index used after Close. It wraps
// agentmem.ErrUnavailable, as store.ErrClosed does.
var ErrClosed = fmt.Errorf("recall: closed (%w)", agentmem.ErrUnavailable)

// CheckQuery validates the tenant, filter and limit of a search.
func CheckQuery(tenant string, f Filter, limit int) error {
	if err := CheckTenant(tenant); err != nil {
		return err
	}
	if limit < 1 {
		return invalid("limit", "must be at least 1, got %d", limit)
	}
	return CheckFilter(f)
}

// checkIDs validates a tenant and document IDs.
func checkIDs(tenant string, ids []string) error {
	if err := CheckTenant(tenant); err != nil {
		return err
	}
	for i, id := range ids {
		if err := CheckID(id); err != nil {
			return prefixInvalid(fmt.Sprintf("ids[%d].", i), err)
		}
	}
	return nil
}

// CheckUpdates validates the embedding updates of SetEmbeddings.
func CheckUpdates(tenant string, updates []EmbeddingUpdate) error {
	if err := CheckTenant(tenant); err != nil {
		return err
	}
	for i, u := range updates {
		p := fmt.Sprintf("updates[%d].", i)
		if err := CheckID(u.ID); err != nil {
			return prefixInvalid(p, err)
		}
		if err := checkVector("vector", u.Vector); err != nil {
			return prefixInvalid(p, err)
		}
		if err := checkString("model", u.Model, MaxModelLen); err != nil {
			return prefixInvalid(p, err)
		}
	}
	return nil
}

// CheckIDs validates a tenant and document IDs, as Get and Delete do.
func CheckIDs(tenant string, ids []string) error { return checkIDs(tenant, ids) }

// CheckVectorQuery validates a query vector: finite values, at most
// MaxDims of them.
func CheckVectorQuery(v []float32) error { return checkVector("vector", v) }
