package storekit

import (
	"slices"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// NewSession builds the session a validated store.CreateRequest describes, as
// of now: a new ID if none was given, the default retention, ExpiresAt
// from the TTL, CreatedAt = UpdatedAt = now and LastSeq = ForkSeq. For a
// branch the backend must first resolve ForkSeq 0 to the parent's LastSeq
// (and check 0 < ForkSeq <= the parent's LastSeq). The metadata and the
// settings are copied.
func NewSession(req store.CreateRequest, now time.Time) *store.Session {
	s := &store.Session{
		ID:           req.ID,
		Tenant:       req.Tenant,
		UserID:       req.UserID,
		Agent:        req.Agent,
		ParentID:     req.ParentID,
		ForkSeq:      req.ForkSeq,
		Metadata:     req.Metadata,
		Retention:    req.Retention,
		CreatedAt:    now,
		UpdatedAt:    now,
		LastSeq:      req.ForkSeq,
		Pinning:      req.Pinning,
		AutoCompact:  req.AutoCompact,
		ExtractFacts: req.ExtractFacts,
	}
	s = s.Clone() // the metadata and the settings are the request's until copied
	if s.ID == "" {
		s.ID = agentmem.NewID()
	}
	if s.Retention == "" {
		s.Retention = store.SessionRetention
	}
	if req.TTL > 0 {
		s.ExpiresAt = now.Add(req.TTL)
	}
	return s
}

// SelectEntries applies a validated store.ReadRequest's After, Limit and Last
// to a session's visible log (entries in sequence order) and returns the
// sub-slice to return.
func SelectEntries(entries []store.Entry, req store.ReadRequest) []store.Entry {
	i := 0
	for i < len(entries) && entries[i].Seq <= req.After {
		i++
	}
	entries = entries[i:]
	switch {
	case req.Last > 0 && len(entries) > req.Last:
		entries = entries[len(entries)-req.Last:]
	case req.Limit > 0 && len(entries) > req.Limit:
		entries = entries[:req.Limit]
	}
	return entries
}

// Normalize returns the step as a backend stores it: numbered n and passed
// through store.EncodeStep and store.DecodeStep, so that what a store returns
// is exactly what its JSON says (no monotonic clock reading, no time zone
// name, compacted structured data), on every backend alike. It also returns
// the encoding, which is what a database backend stores.
func Normalize(s agentmem.Step, n int64) (agentmem.Step, []byte, error) {
	b, err := store.EncodeStep(store.WithNumber(s, n))
	if err != nil {
		return nil, nil, err
	}
	out, err := store.DecodeStep(b)
	if err != nil {
		return nil, nil, err
	}
	return out, b, nil
}

// NewestFull returns the index in entries of the newest compaction entry
// that is a full record (not an amendment), or -1 if there is none: the
// entry a working set starts from.
func NewestFull(entries []store.Entry) int {
	for i := len(entries) - 1; i >= 0; i-- {
		if c := entries[i].Compaction; entries[i].Kind == store.CompactionEntry && c != nil && !c.Amend {
			return i
		}
	}
	return -1
}

// InWorkingSet reports whether the step entry at seq is in the working set of
// a log whose newest full compaction entry is at fullSeq, with record full.
// fullSeq and full are 0 and nil when there is none. The step is in it when
// it comes after that compaction or its Working list names it. Amendments do
// not change it. A backend checks an amendment's copies with it (see
// CheckCompaction).
func InWorkingSet(seq, fullSeq int64, full *store.CompactionRecord) bool {
	return seq > fullSeq || (full != nil && slices.Contains(full.Working, seq))
}

// WorkingSeqs returns the sequence numbers of the steps of the working
// set that entries (the whole visible log, in order) define: the newest
// full compaction's Working list and the step entries after it. Prune
// keeps these steps.
func WorkingSeqs(entries []store.Entry) []int64 {
	last := NewestFull(entries)
	var out []int64
	if last >= 0 {
		out = append(out, entries[last].Compaction.Working...)
	}
	for _, e := range entries[last+1:] {
		if e.Kind == store.StepEntry {
			out = append(out, e.Seq)
		}
	}
	return out
}

// FeedSessionKeys returns the distinct keys of the sessions a batch of
// changes needs (those of every change but deletions), in order: a backend
// reads them and hands them to AttachSessions.
func FeedSessionKeys(changes []store.Change) []store.Key {
	var keys []store.Key
	seen := map[store.Key]bool{}
	for _, c := range changes {
		k := store.Key{Tenant: c.Tenant, ID: c.SessionID}
		if c.Kind != store.ChangeDelete && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// AttachSessions sets the Session of every change but deletions from
// sessions, by key (the sessions as they are now, live ones only); a
// change whose session is gone keeps none, and neither its Entry nor its
// Err.
func AttachSessions(changes []store.Change, sessions map[store.Key]*store.Session) {
	for i := range changes {
		c := &changes[i]
		if c.Kind == store.ChangeDelete {
			continue
		}
		if c.Session = sessions[store.Key{Tenant: c.Tenant, ID: c.SessionID}]; c.Session == nil {
			c.Entry, c.Err = nil, nil
		}
	}
}

// LeaseExpiry returns when a lease taken or renewed at now for ttl
// expires, at the precision every backend keeps (microseconds).
func LeaseExpiry(now time.Time, ttl time.Duration) time.Time {
	return now.Add(ttl).UTC().Truncate(time.Microsecond)
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
