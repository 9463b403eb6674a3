package store

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// WorkingSet computes the working set from log entries in sequence order,
// as ReadRequest defines it. It is the steps the newest full compaction
// entry names, in its order, followed by every step entry after that
// compaction. Each is replaced by its copy if it has one, in the full
// record's Replaced list or in an amendment after it; the newest copy of a
// step wins. With no full compaction entry it is every step entry,
// amended likewise.
//
// entries need not be the whole log: the newest full compaction entry,
// the step entries it names and every entry after it are enough, which
// lets a backend load a long session at the cost of its working set. A
// named step that is missing from entries (and has no copy) is left out.
// The steps are shared with entries, not copied.
func WorkingSet(entries []Entry) []agentmem.Step {
	steps, _ := workingSet(entries)
	return steps
}

// ReplacedSeqs returns the sequence numbers of the steps that the working
// set entries define shows as modified copies, in working-set order: the
// steps of the newest full compaction's Replaced list and of the
// amendments after it (ReadResponse.Replaced).
func ReplacedSeqs(entries []Entry) []int64 {
	_, replaced := workingSet(entries)
	return replaced
}

// workingSet computes WorkingSet and ReplacedSeqs.
func workingSet(entries []Entry) ([]agentmem.Step, []int64) {
	last := newestFull(entries)
	var (
		order  []int64 // the working set's seqs, in order
		bySeq  map[int64]agentmem.Step
		copies map[int64]agentmem.Step
	)
	if last >= 0 {
		c := entries[last].Compaction
		order = append(make([]int64, 0, len(c.Working)+len(entries)-last-1), c.Working...)
		bySeq = make(map[int64]agentmem.Step, len(c.Working)+len(entries)-last-1)
		for _, e := range entries[:last] {
			if e.Kind == StepEntry && e.Step != nil {
				bySeq[e.Seq] = e.Step
			}
		}
		copies = make(map[int64]agentmem.Step, len(c.Replaced))
		for _, r := range c.Replaced {
			copies[int64(r.Info().Number)] = r
		}
	} else {
		bySeq = make(map[int64]agentmem.Step, len(entries))
	}
	for _, e := range entries[last+1:] {
		switch {
		case e.Kind == StepEntry && e.Step != nil:
			order = append(order, e.Seq)
			bySeq[e.Seq] = e.Step
		case e.Kind == CompactionEntry && e.Compaction != nil: // an amendment
			if copies == nil {
				copies = make(map[int64]agentmem.Step, len(e.Compaction.Replaced))
			}
			for _, r := range e.Compaction.Replaced {
				copies[int64(r.Info().Number)] = r
			}
		}
	}
	var (
		out      = make([]agentmem.Step, 0, len(order))
		replaced []int64
	)
	for _, seq := range order {
		if s, ok := copies[seq]; ok {
			out = append(out, s)
			replaced = append(replaced, seq)
		} else if s, ok := bySeq[seq]; ok {
			out = append(out, s)
		}
	}
	if len(out) == 0 && last < 0 {
		out = nil // as with no entries at all
	}
	return out, replaced
}

// Cursor is a position in List's order (newest first: CreatedAt
// descending, then ID descending). A page token encodes the cursor of the
// last session of a page; the next page starts after it.
type Cursor struct {
	CreatedAt time.Time
	ID        string
	Tenant    string
}

// After reports whether a session with this creation time, ID and tenant
// comes after the cursor in List's order (CreatedAt, then ID, then Tenant,
// each descending), that is, belongs to a later page.
func (c Cursor) After(createdAt time.Time, id, tenant string) bool {
	if !createdAt.Equal(c.CreatedAt) {
		return createdAt.Before(c.CreatedAt)
	}
	if id != c.ID {
		return id < c.ID
	}
	return tenant < c.Tenant
}

// EncodePageToken returns the opaque page token for a cursor: URL-safe
// base64 of the creation time (Unix nanoseconds), the ID, and, after a
// NUL byte (which neither may contain), the tenant.
func EncodePageToken(c Cursor) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(c.CreatedAt.UnixNano()))
	b = append(b, c.ID...)
	b = append(b, 0)
	b = append(b, c.Tenant...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodePageToken decodes a token made by EncodePageToken. Errors wrap
// agentmem.ErrInvalid.
func DecodePageToken(token string) (Cursor, error) {
	bad := invalid("page_token", "is not a token this store issued")
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) < 9 || !utf8.Valid(b[8:]) {
		return Cursor{}, bad
	}
	id, tenant, ok := strings.Cut(string(b[8:]), "\x00")
	if !ok {
		return Cursor{}, bad
	}
	c := Cursor{CreatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC(), ID: id, Tenant: tenant}
	if ValidateID(c.ID) != nil || validateField("tenant", tenant) != nil {
		return Cursor{}, bad
	}
	return c, nil
}

// ValidateList checks a ListRequest and returns the page size to use
// (DefaultPageSize for 0, at most MaxPageSize) and the cursor to start
// after (nil for the first page). Errors wrap agentmem.ErrInvalid.
func ValidateList(req ListRequest) (pageSize int, after *Cursor, err error) {
	for _, f := range []struct{ name, v string }{{"tenant", req.Tenant}, {"user_id", req.UserID}, {"agent", req.Agent}} {
		if err := validateField(f.name, f.v); err != nil {
			return 0, nil, err
		}
	}
	if req.ParentID != "" {
		if err := validateID("parent_id", req.ParentID); err != nil {
			return 0, nil, err
		}
	}
	switch {
	case req.PageSize < 0:
		return 0, nil, invalid("page_size", "is negative")
	case req.PageSize == 0:
		pageSize = DefaultPageSize
	default:
		pageSize = min(req.PageSize, MaxPageSize)
	}
	if req.PageToken != "" {
		c, err := DecodePageToken(req.PageToken)
		if err != nil {
			return 0, nil, err
		}
		after = &c
	}
	return pageSize, after, nil
}

// Matches reports whether a session passes a ListRequest's filters.
func (req ListRequest) Matches(s *Session) bool {
	return (req.Tenant == "" && !req.ExactTenant || s.Tenant == req.Tenant) &&
		(req.UserID == "" || s.UserID == req.UserID) &&
		(req.Agent == "" || s.Agent == req.Agent) &&
		(req.ParentID == "" || s.ParentID == req.ParentID)
}

// newestFull returns the index in entries of the newest compaction entry
// that is a full record (not an amendment), or -1 if there is none: the
// entry a working set starts from.
func newestFull(entries []Entry) int {
	for i := len(entries) - 1; i >= 0; i-- {
		if c := entries[i].Compaction; entries[i].Kind == CompactionEntry && c != nil && !c.Amend {
			return i
		}
	}
	return -1
}
