package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// segment is the part of a visible log that one session owns: its entries
// with lo < seq <= hi. Every segment of a log is in the session's tenant
// (a branch is in its parent's).
type segment struct {
	tenant, id string
	lo, hi     int64
}

// maxChain bounds a chain of bases; a longer one is taken for a cycle.
const maxChain = 10000

// segments returns the parts of r's visible log, oldest first: the entries
// r inherited (from its base, its base's base...) and its own. Segments are
// disjoint ranges of sequence numbers in increasing order. One query reads
// the whole chain of bases; a session that is no branch needs none.
func segments(ctx context.Context, q querier, r *sessionRow) ([]segment, error) {
	segs := []segment{{tenant: r.Tenant, id: r.ID, lo: r.baseSeq, hi: math.MaxInt64}}
	if r.baseID == "" {
		return segs, nil
	}
	rows, err := q.Query(ctx, `WITH RECURSIVE chain (id, base_id, base_seq, depth) AS (
			SELECT id, base_id, base_seq, 1 FROM sessions WHERE tenant = $3 AND id = $1
			UNION ALL
			SELECT s.id, s.base_id, s.base_seq, c.depth + 1
			FROM chain c JOIN sessions s ON s.tenant = $3 AND s.id = c.base_id
			WHERE c.depth <= $2
		)
		SELECT id, base_id, base_seq FROM chain ORDER BY depth`, r.baseID, maxChain, r.Tenant)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	lo, want := r.baseSeq, r.baseID
	for rows.Next() {
		var (
			id      string
			baseID  *string
			baseSeq int64
		)
		if err := rows.Scan(&id, &baseID, &baseSeq); err != nil {
			return nil, err
		}
		if id != want {
			break
		}
		hi := min(segs[len(segs)-1].hi, lo)
		if baseID == nil {
			baseSeq = 0
		}
		if baseSeq < hi {
			segs = append(segs, segment{tenant: r.Tenant, id: id, lo: baseSeq, hi: hi})
		} else {
			// Nothing of id's own is visible: keep the bound for the
			// sessions further up.
			segs = append(segs, segment{tenant: r.Tenant, id: id, lo: hi, hi: hi})
		}
		lo, want = baseSeq, ""
		if baseID != nil {
			want = *baseID
		}
		if want == "" {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if want != "" {
		// The FOREIGN KEY on base_id makes this impossible short of a
		// cycle longer than maxChain.
		return nil, fmt.Errorf("session %q: its chain of bases is broken at %q", r.ID, want)
	}
	// Oldest first, and without the empty ranges.
	out := make([]segment, 0, len(segs))
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].lo < segs[i].hi {
			out = append(out, segs[i])
		}
	}
	return out, nil
}

// findStepIDs returns the steps of the visible log (segs) whose IDs are
// among ids, by ID. An append of new steps finds none, and so reads no
// body.
func findStepIDs(ctx context.Context, q querier, segs []segment, ids []string) (map[string]store.StoredStep, error) {
	found := make(map[string]store.StoredStep, len(ids))
	if len(ids) == 0 {
		return found, nil
	}
	for _, sg := range segs {
		rows, err := q.Query(ctx, `SELECT step_id, seq, body FROM entries
			WHERE tenant = $1 AND session_id = $2 AND step_id = ANY($3) AND seq > $4 AND seq <= $5`,
			sg.tenant, sg.id, ids, sg.lo, sg.hi)
		if err != nil {
			return nil, err
		}
		var (
			id string
			st store.StoredStep
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &st.Seq, &st.Body}, func() error {
			found[id] = store.StoredStep{Seq: st.Seq, Body: slices.Clone(st.Body)}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return found, nil
}

// workingSteps returns the sequence numbers and kinds of the steps of the
// working set of the visible log, in order (see store.WorkingSet), for
// store.CheckPinned. Of each step it reads only the start of its
// encoding, where its type is (store.EncodedKind).
func workingSteps(ctx context.Context, q querier, segs []segment) ([]store.WorkingStep, error) {
	var out []store.WorkingStep
	after := int64(0)
	comp, err := newestCompaction(ctx, q, segs)
	if err != nil {
		return nil, err
	}
	if comp != nil {
		after = comp.Seq
	}
	if comp != nil && len(comp.Compaction.Working) > 0 {
		kinds := make(map[int64]agentmem.StepKind, len(comp.Compaction.Working))
		for _, sg := range segs {
			if sg.lo >= after {
				break
			}
			if err := scanKinds(ctx, q, `SELECT seq, `+kindPrefix+` FROM entries
				WHERE tenant = $1 AND session_id = $2 AND kind = 'step' AND seq = ANY($3) AND seq > $4 AND seq <= $5`,
				func(seq int64, k agentmem.StepKind) { kinds[seq] = k }, sg.tenant, sg.id, comp.Compaction.Working, sg.lo, min(sg.hi, after)); err != nil {
				return nil, err
			}
		}
		for _, seq := range comp.Compaction.Working {
			if k, ok := kinds[seq]; ok {
				out = append(out, store.WorkingStep{Seq: seq, Kind: k})
			}
		}
	}
	for _, sg := range segs {
		if sg.hi <= after {
			continue
		}
		if err := scanKinds(ctx, q, `SELECT seq, `+kindPrefix+` FROM entries
			WHERE tenant = $1 AND session_id = $2 AND kind = 'step' AND seq > $3 AND seq <= $4 ORDER BY seq`,
			func(seq int64, k agentmem.StepKind) { out = append(out, store.WorkingStep{Seq: seq, Kind: k}) },
			sg.tenant, sg.id, max(sg.lo, after), sg.hi); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// kindPrefix selects as much of a step's body as store.EncodedKind needs:
// its first store.KindPrefixBytes bytes when it starts with its type (as
// store.EncodeStep writes it), else all of it.
var kindPrefix = fmt.Sprintf(`CASE WHEN substring(body from 1 for 9) = '\x7b2274797065223a22'::bytea THEN substring(body from 1 for %d) ELSE body END`, store.KindPrefixBytes)

// scanKinds runs a query for (seq, kindPrefix) rows and calls fn with each
// step's sequence number and kind.
func scanKinds(ctx context.Context, q querier, sql string, fn func(int64, agentmem.StepKind), args ...any) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	var (
		seq int64
		b   []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&seq, &b}, func() error {
		k, err := store.EncodedKind(b)
		if err != nil {
			return fmt.Errorf("stored entry %d: %v", seq, err)
		}
		fn(seq, k)
		return nil
	})
	return err
}

// checkCompaction checks a compaction's references against the visible
// log as it is before the append (entries up to lastSeq): see
// store.CheckCompaction. Only the steps that have a replacement are
// decoded; for the others, existence is all that is checked. An
// amendment's references are its copies' steps, which must be in the
// working set: its cost is that of its copies, not of the working set.
func checkCompaction(ctx context.Context, q querier, segs []segment, c *store.CompactionRecord, lastSeq int64) error {
	var refs []int64
	if c.Amend {
		for _, r := range c.Replaced {
			if n := int64(r.Info().Number); n <= lastSeq {
				refs = append(refs, n)
			}
		}
	}
	for _, ref := range c.Working {
		if ref > 0 && ref <= lastSeq {
			refs = append(refs, ref)
		}
	}
	replaced := make(map[int64]bool, len(c.Replaced))
	for _, r := range c.Replaced {
		replaced[int64(r.Info().Number)] = true
	}
	found := make(map[int64]agentmem.Step, len(refs))
	if len(refs) > 0 {
		for _, sg := range segs {
			rows, err := q.Query(ctx, `SELECT seq, CASE WHEN seq = ANY($6) THEN body END FROM entries
				WHERE tenant = $1 AND session_id = $2 AND kind = 'step' AND seq = ANY($3) AND seq > $4 AND seq <= $5`,
				sg.tenant, sg.id, refs, sg.lo, sg.hi, slices.Collect(mapKeys(replaced)))
			if err != nil {
				return err
			}
			var (
				seq  int64
				body []byte
			)
			_, err = pgx.ForEachRow(rows, []any{&seq, &body}, func() error {
				if !replaced[seq] {
					found[seq] = existsStub
					return nil
				}
				st, err := store.DecodeStep(body)
				if err != nil {
					return fmt.Errorf("entry %d: %w", seq, err)
				}
				found[seq] = st
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	member := func(int64) bool { return true }
	if c.Amend {
		var err error
		if member, err = workingSetMember(ctx, q, segs, refs); err != nil {
			return err
		}
	}
	return store.CheckCompaction(c, func(seq int64) (agentmem.Step, bool) {
		st, ok := found[seq]
		return st, ok && member(seq)
	})
}

// workingSetMember returns store.InWorkingSet for the visible log, to be
// asked about seqs: it finds the newest full compaction, and reads its
// record only if one of seqs is not after it.
func workingSetMember(ctx context.Context, q querier, segs []segment, seqs []int64) (func(int64) bool, error) {
	fullSeq, err := newestFullSeq(ctx, q, segs)
	if err != nil {
		return nil, err
	}
	var full *store.CompactionRecord
	if slices.ContainsFunc(seqs, func(n int64) bool { return n <= fullSeq }) {
		comp, err := newestCompaction(ctx, q, segs)
		if err != nil {
			return nil, err
		}
		if comp != nil {
			full = comp.Compaction
		}
	}
	return func(seq int64) bool { return store.InWorkingSet(seq, fullSeq, full) }, nil
}

// mapKeys iterates over the keys of m.
func mapKeys[K comparable, V any](m map[K]V) func(yield func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// existsStub stands, in checkCompaction's lookup, for a step that exists
// and has no replacement: store.CheckCompaction reads only the steps that
// have one.
var existsStub agentmem.Step = &agentmem.TaskStep{}

// Read implements store.Store. It reads in one repeatable-read snapshot,
// so a concurrent append or Delete of a base never shows half done. With
// WorkingSet it reads the newest compaction entry, the steps it names and
// the entries after it: the cost of the working set, not of the log.
func (s *Store) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := store.ValidateRead(req); err != nil {
		return nil, err
	}
	now := s.now()
	var resp *store.ReadResponse
	err := s.read(ctx, "read", func(tx pgx.Tx) error {
		sess, err := loadSession(ctx, tx, req.Tenant, req.SessionID, "", now, false)
		if err != nil {
			return err
		}
		segs, err := segments(ctx, tx, sess)
		if err != nil {
			return err
		}
		resp = &store.ReadResponse{Session: sess.Session.Clone()}
		if req.WorkingSet {
			resp.Steps, resp.Replaced, err = readWorkingSet(ctx, tx, segs)
			return err
		}
		resp.Entries, err = readEntries(ctx, tx, segs, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// readEntries reads the entries of the visible log that req selects
// (After, then the first Limit or the last Last of them).
func readEntries(ctx context.Context, q querier, segs []segment, req store.ReadRequest) ([]store.Entry, error) {
	var out []store.Entry
	if req.Last > 0 {
		// Newest segment first, newest entries first, then reversed.
		for i := len(segs) - 1; i >= 0 && len(out) < req.Last; i-- {
			sg := segs[i]
			es, err := queryEntries(ctx, q, `SELECT seq, kind, body, created_at FROM entries
				WHERE tenant = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq DESC LIMIT $5`,
				sg.tenant, sg.id, max(sg.lo, req.After), sg.hi, req.Last-len(out))
			if err != nil {
				return nil, err
			}
			out = append(out, es...)
		}
		slices.Reverse(out)
		return out, nil
	}
	for _, sg := range segs {
		if sg.hi <= req.After {
			continue
		}
		limit := any(nil) // LIMIT NULL: no limit
		if req.Limit > 0 {
			if len(out) >= req.Limit {
				break
			}
			limit = req.Limit - len(out)
		}
		es, err := queryEntries(ctx, q, `SELECT seq, kind, body, created_at FROM entries
			WHERE tenant = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq LIMIT $5`,
			sg.tenant, sg.id, max(sg.lo, req.After), sg.hi, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// readWorkingSet reads the working set of the visible log and the seqs of
// its modified copies: see store.WorkingSet and store.ReplacedSeqs, which
// it feeds with only the entries they need.
func readWorkingSet(ctx context.Context, q querier, segs []segment) ([]agentmem.Step, []int64, error) {
	comp, err := newestCompaction(ctx, q, segs)
	if err != nil {
		return nil, nil, err
	}
	if comp == nil {
		es, err := readAfter(ctx, q, segs, 0)
		if err != nil {
			return nil, nil, err
		}
		return store.WorkingSet(es), store.ReplacedSeqs(es), nil
	}

	// The steps the compaction names that it has no copy of...
	replaced := make(map[int64]bool, len(comp.Compaction.Replaced))
	for _, r := range comp.Compaction.Replaced {
		replaced[int64(r.Info().Number)] = true
	}
	var named []int64
	for _, seq := range comp.Compaction.Working {
		if seq < comp.Seq && !replaced[seq] {
			named = append(named, seq)
		}
	}
	var entries []store.Entry
	if len(named) > 0 {
		for _, sg := range segs {
			if sg.lo >= comp.Seq {
				break
			}
			es, err := queryEntries(ctx, q, `SELECT seq, kind, body, created_at FROM entries
				WHERE tenant = $1 AND session_id = $2 AND kind = 'step' AND seq = ANY($3) AND seq > $4 AND seq <= $5
				ORDER BY seq`, sg.tenant, sg.id, named, sg.lo, min(sg.hi, comp.Seq-1))
			if err != nil {
				return nil, nil, err
			}
			entries = append(entries, es...)
		}
	}
	// ...the compaction itself, and every step and amendment after it.
	entries = append(entries, *comp)
	after, err := readAfter(ctx, q, segs, comp.Seq)
	if err != nil {
		return nil, nil, err
	}
	entries = append(entries, after...)
	return store.WorkingSet(entries), store.ReplacedSeqs(entries), nil
}

// newestCompaction returns the newest compaction entry of the visible log
// that is a full record, not an amendment (amendments do not change which
// steps the working set has), or nil if it has none. It looks at the
// newest segment first, through the partial index on compaction entries,
// telling amendments by the start of their encoding (store.AmendPrefix)
// without reading them.
func newestCompaction(ctx context.Context, q querier, segs []segment) (*store.Entry, error) {
	for i := len(segs) - 1; i >= 0; i-- {
		sg := segs[i]
		es, err := queryEntries(ctx, q, `SELECT seq, kind, body, created_at FROM entries
			WHERE tenant = $1 AND session_id = $2 AND kind = 'compaction' AND seq > $3 AND seq <= $4 AND `+notAmendment+`
			ORDER BY seq DESC LIMIT 1`, sg.tenant, sg.id, sg.lo, sg.hi)
		if err != nil {
			return nil, err
		}
		if len(es) > 0 {
			return &es[0], nil
		}
	}
	return nil, nil
}

// newestFullSeq returns the sequence number of newestCompaction's entry (0
// if there is none), without reading it.
func newestFullSeq(ctx context.Context, q querier, segs []segment) (int64, error) {
	for i := len(segs) - 1; i >= 0; i-- {
		sg := segs[i]
		var seq int64
		err := q.QueryRow(ctx, `SELECT seq FROM entries
			WHERE tenant = $1 AND session_id = $2 AND kind = 'compaction' AND seq > $3 AND seq <= $4 AND `+notAmendment+`
			ORDER BY seq DESC LIMIT 1`, sg.tenant, sg.id, sg.lo, sg.hi).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		return seq, err
	}
	return 0, nil
}

// notAmendment is the SQL condition that a compaction entry is a full
// record: its body does not begin with store.AmendPrefix.
var notAmendment = fmt.Sprintf(`substring(body from 1 for %d) <> '\x%x'::bytea`, len(store.AmendPrefix), store.AmendPrefix)

// readAfter reads the entries of the visible log after a sequence number,
// in order: the step entries and amendments that come after the newest
// full compaction.
func readAfter(ctx context.Context, q querier, segs []segment, after int64) ([]store.Entry, error) {
	var out []store.Entry
	for _, sg := range segs {
		if sg.hi <= after {
			continue
		}
		es, err := queryEntries(ctx, q, `SELECT seq, kind, body, created_at FROM entries
			WHERE tenant = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq`,
			sg.tenant, sg.id, max(sg.lo, after), sg.hi)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// queryEntries runs a query for (seq, kind, body, created_at) rows and
// decodes them into entries.
func queryEntries(ctx context.Context, q querier, sql string, args ...any) ([]store.Entry, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	var (
		out     []store.Entry
		seq     int64
		kind    string
		body    []byte
		created time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&seq, &kind, &body, &created}, func() error {
		e, err := decodeEntry(seq, kind, body, created)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decodeEntry decodes a stored entry. A body that does not decode is
// reported with the entry's sequence number: the log was written by this
// package, so it means corruption or a newer writer.
func decodeEntry(seq int64, kind string, body []byte, created time.Time) (store.Entry, error) {
	e := store.Entry{Seq: seq, Kind: store.EntryKind(kind), Time: created.UTC()}
	var err error
	switch e.Kind {
	case store.StepEntry:
		e.Step, err = store.DecodeStep(body)
	case store.CompactionEntry:
		e.Compaction, err = store.DecodeCompaction(body)
	default:
		err = fmt.Errorf("unknown entry kind %q", kind)
	}
	if err != nil {
		// Not ErrInvalid: the caller's input is fine, the stored data is not.
		return store.Entry{}, fmt.Errorf("stored entry %d does not decode: %v", seq, err)
	}
	return e, nil
}
