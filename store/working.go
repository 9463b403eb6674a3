package store

import (
	"encoding/base64"
	"encoding/binary"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// WorkingSet computes the working set from log entries in sequence order,
// as ReadRequest defines it: the steps the newest compaction entry names,
// in its order, each replaced by its copy in the record's Replaced list if
// it has one, followed by every step entry after that compaction. With no
// compaction entry it is every step entry.
//
// entries need not be the whole log: the newest compaction entry, the
// step entries it names and every entry after it are enough, which lets a
// backend load a long session at the cost of its working set. A named
// step that is missing from entries is left out. The steps are shared
// with entries, not copied.
func WorkingSet(entries []Entry) []agentmem.Step {
	last := -1
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Kind == CompactionEntry && entries[i].Compaction != nil {
			last = i
			break
		}
	}
	var out []agentmem.Step
	if last >= 0 {
		c := entries[last].Compaction
		bySeq := make(map[int64]agentmem.Step, len(c.Working))
		for _, e := range entries[:last] {
			if e.Kind == StepEntry && e.Step != nil {
				bySeq[e.Seq] = e.Step
			}
		}
		for _, r := range c.Replaced {
			bySeq[int64(r.Info().Number)] = r
		}
		out = make([]agentmem.Step, 0, len(c.Working)+len(entries)-last-1)
		for _, seq := range c.Working {
			if s, ok := bySeq[seq]; ok {
				out = append(out, s)
			}
		}
	}
	for _, e := range entries[last+1:] {
		if e.Kind == StepEntry && e.Step != nil {
			out = append(out, e.Step)
		}
	}
	return out
}

// ReplacedSeqs returns the sequence numbers of the steps that the working
// set entries define shows as modified copies: the numbers of the newest
// compaction's Replaced copies, in its order (ReadResponse.Replaced).
func ReplacedSeqs(entries []Entry) []int64 {
	for i := len(entries) - 1; i >= 0; i-- {
		if c := entries[i].Compaction; entries[i].Kind == CompactionEntry && c != nil {
			if len(c.Replaced) == 0 {
				return nil
			}
			out := make([]int64, len(c.Replaced))
			for k, r := range c.Replaced {
				out[k] = int64(r.Info().Number)
			}
			return out
		}
	}
	return nil
}

// WorkingSeqs returns the sequence numbers of the steps of the working
// set that entries (the whole visible log, in order) define: the
// compaction's Working list and the step entries after it. Prune keeps
// these steps.
func WorkingSeqs(entries []Entry) []int64 {
	last := -1
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Kind == CompactionEntry && entries[i].Compaction != nil {
			last = i
			break
		}
	}
	var out []int64
	if last >= 0 {
		out = append(out, entries[last].Compaction.Working...)
	}
	for _, e := range entries[last+1:] {
		if e.Kind == StepEntry {
			out = append(out, e.Seq)
		}
	}
	return out
}

// Cursor is a position in List's order (newest first: CreatedAt
// descending, then ID descending). A page token encodes the cursor of the
// last session of a page; the next page starts after it.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// After reports whether a session with this creation time and ID comes
// after the cursor in List's order, that is, belongs to a later page.
func (c Cursor) After(createdAt time.Time, id string) bool {
	if !createdAt.Equal(c.CreatedAt) {
		return createdAt.Before(c.CreatedAt)
	}
	return id < c.ID
}

// EncodePageToken returns the opaque page token for a cursor: URL-safe
// base64 of the creation time (Unix nanoseconds) and the ID.
func EncodePageToken(c Cursor) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(c.CreatedAt.UnixNano()))
	b = append(b, c.ID...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodePageToken decodes a token made by EncodePageToken. Errors wrap
// agentmem.ErrInvalid.
func DecodePageToken(token string) (Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) < 9 || !utf8.Valid(b[8:]) {
		return Cursor{}, invalid("page_token", "is not a token this store issued")
	}
	c := Cursor{CreatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC(), ID: string(b[8:])}
	if ValidateID(c.ID) != nil {
		return Cursor{}, invalid("page_token", "is not a token this store issued")
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
	return (req.Tenant == "" || s.Tenant == req.Tenant) &&
		(req.UserID == "" || s.UserID == req.UserID) &&
		(req.Agent == "" || s.Agent == req.Agent)
}

// Now returns the time a store records: clock() in UTC, truncated to the
// microsecond, the precision every backend keeps. A nil clock means
// time.Now.
func Now(clock func() time.Time) time.Time {
	if clock == nil {
		clock = time.Now
	}
	return clock().UTC().Truncate(time.Microsecond)
}
