package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
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
func segments(ctx context.Context, q sqldb.Querier, r *SessionRow) ([]segment, error) {
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

// findStepIDs adds to found the steps of the visible log (segs) whose IDs
// are among ids, by ID. An append of new steps finds none, and so reads
// no body.
func (s *Store) findStepIDs(ctx context.Context, q sqldb.Querier, segs []segment, ids []string, found map[string]storekit.StoredStep) error {
	if len(ids) == 0 {
		return nil
	}
	// The range of each segment is checked here, not in SQL: with it, the
	// planner may rather scan the session's log by seq than look the IDs
	// up in the step-ID index.
	query, arg := `SELECT step_id, seq, body FROM entries WHERE tenant = $1 AND session_id = $2 AND step_id = $3`, any(ids[0])
	if len(ids) > 1 {
		query, arg = `SELECT step_id, seq, body FROM entries WHERE tenant = $1 AND session_id = $2 AND `+s.d.in("step_id", 3), s.d.strings(ids)
	}
	for _, sg := range segs {
		err := queryRows(ctx, q, query, []any{sg.tenant, sg.id, arg}, func(rows sqldb.Rows) error {
			var id string
			var st storekit.StoredStep
			if err := rows.Scan(&id, &st.Seq, &st.Body); err != nil {
				return err
			}
			if st.Seq > sg.lo && st.Seq <= sg.hi {
				found[id] = st
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// findKey returns the record of an idempotency key in the visible log
// (segs), nil if there is none: a record whose entries are all in one
// segment. A session records a key only when its visible log has none,
// so at most one segment has it.
func (s *Store) findKey(ctx context.Context, q sqldb.Querier, segs []segment, key string) (*storekit.KeyRecord, error) {
	for i := len(segs) - 1; i >= 0; i-- {
		sg := segs[i]
		r, err := scanKey(q.QueryRow(ctx, SelectKeySQL, sg.tenant, sg.id, key))
		if err != nil {
			return nil, err
		}
		if r != nil && r.Seq > sg.lo && r.LastSeq <= sg.hi {
			return r, nil
		}
	}
	return nil, nil
}

// SelectKeySQL reads the record of an idempotency key ($3) of a session's
// own log ($1 the tenant, $2 the session): its fingerprint, seq, last_seq
// and steps (storekit.KeyRecord).
const SelectKeySQL = `SELECT fingerprint, seq, last_seq, steps FROM idempotency_keys WHERE tenant = $1 AND session_id = $2 AND request_key = $3`

// scanKey scans the row of SelectKeySQL: nil, nil when there is none.
func scanKey(row sqldb.Row) (*storekit.KeyRecord, error) {
	var r storekit.KeyRecord
	var steps int64
	err := row.Scan(&r.Fingerprint, &r.Seq, &r.LastSeq, &steps)
	if errors.Is(err, sqldb.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.Steps = int(steps)
	return &r, nil
}

// compactionAt returns the record of the visible log's entry at seq if it
// is a compaction, else nil.
func compactionAt(ctx context.Context, q sqldb.Querier, segs []segment, seq int64) (*store.CompactionRecord, error) {
	for _, sg := range segs {
		if seq <= sg.lo || seq > sg.hi {
			continue
		}
		var kind string
		var body []byte
		err := q.QueryRow(ctx, "SELECT kind, body FROM entries WHERE tenant = $1 AND session_id = $2 AND seq = $3", sg.tenant, sg.id, seq).Scan(&kind, &body)
		if errors.Is(err, sqldb.ErrNoRows) || (err == nil && kind != string(store.CompactionEntry)) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		rec, err := store.DecodeCompaction(body)
		if err != nil {
			return nil, fmt.Errorf("stored entry %d does not decode: %v", seq, err)
		}
		return rec, nil
	}
	return nil, nil
}

// compactionLookup returns the lookup with which storekit.CheckCompaction
// checks a compaction's references against the visible log as it is before
// the append (entries up to lastSeq): see storekit.LogView. Only the steps
// that have a replacement are read and decoded; for the others, existence is
// all that is checked. An amendment's references are its copies' steps, which
// must be in the working set: its cost is that of its copies, not of the
// working set.
func (s *Store) compactionLookup(ctx context.Context, q sqldb.Querier, segs []segment, c *store.CompactionRecord, lastSeq int64) (func(int64) (agentmem.Step, bool), error) {
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
	replacedSeqs := make([]int64, 0, len(c.Replaced))
	for _, r := range c.Replaced {
		n := int64(r.Info().Number)
		replaced[n] = true
		replacedSeqs = append(replacedSeqs, n)
	}
	found := make(map[int64]agentmem.Step, len(refs))
	if c.Amend {
		if err := s.findCopied(ctx, q, segs, c, lastSeq, found); err != nil {
			return nil, err
		}
	}
	if len(refs) > 0 && len(found) < len(refs) {
		query := `SELECT seq, CASE WHEN ` + s.d.in("seq", 6) + ` THEN body END FROM entries
			WHERE tenant = $1 AND session_id = $2 AND kind = 'step' AND ` + s.d.in("seq", 3) + ` AND seq > $4 AND seq <= $5`
		refsArg, replacedArg := s.d.ints(refs), s.d.ints(replacedSeqs)
		for _, sg := range segs {
			err := queryRows(ctx, q, query, []any{sg.tenant, sg.id, refsArg, sg.lo, sg.hi, replacedArg}, func(rows sqldb.Rows) error {
				var seq int64
				var body []byte
				if err := rows.Scan(&seq, &body); err != nil {
					return err
				}
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
				return nil, err
			}
		}
	}
	member := func(int64) bool { return true }
	if c.Amend {
		var err error
		if member, err = s.workingSetMember(ctx, q, segs, refs); err != nil {
			return nil, err
		}
	}
	return func(seq int64) (agentmem.Step, bool) {
		st, ok := found[seq]
		return st, ok && member(seq)
	}, nil
}

// findCopied finds the steps an amendment's copies stand in for by their
// IDs, with an equality on every column of the step-ID index, and adds
// those whose sequence number is the copy's to found, decoded. On
// PostgreSQL, the generic plan of a lookup by sequence numbers (= ANY)
// on a table whose statistics predate its growth filtered the session's
// whole log through that index instead; an equality on all of its
// columns is looked up whatever the statistics say. A copy not found
// this way is looked up by its sequence number (checkCompaction), so the
// errors are those of that lookup.
func (s *Store) findCopied(ctx context.Context, q sqldb.Querier, segs []segment, c *store.CompactionRecord, lastSeq int64, found map[int64]agentmem.Step) error {
	const query = `SELECT seq, body FROM entries WHERE tenant = $1 AND session_id = $2 AND step_id = $3 AND kind = 'step'`
	for _, r := range c.Replaced {
		info := r.Info()
		n := int64(info.Number)
		if info.ID == "" || n > lastSeq {
			continue
		}
		for _, sg := range segs {
			if n <= sg.lo || n > sg.hi {
				continue
			}
			var seq int64
			var body []byte
			err := q.QueryRow(ctx, query, sg.tenant, sg.id, info.ID).Scan(&seq, &body)
			if errors.Is(err, sqldb.ErrNoRows) || (err == nil && seq != n) {
				break
			}
			if err != nil {
				return err
			}
			st, err := store.DecodeStep(body)
			if err != nil {
				return fmt.Errorf("entry %d: %w", seq, err)
			}
			found[seq] = st
			break
		}
	}
	return nil
}

// existsStub stands, in checkCompaction's lookup, for a step that exists
// and has no replacement: storekit.CheckCompaction reads only the steps that
// have one.
var existsStub agentmem.Step = &agentmem.TaskStep{}

// workingSetMember returns storekit.InWorkingSet for the visible log, to be
// asked about seqs: it finds the newest full compaction, and reads its
// record only if one of seqs is not after it. Only a full compaction after
// the lowest of seqs matters, since the steps after the newest one are in
// the working set. So the search stops there, and costs the compaction
// entries after the steps asked about. An amendment of a recent step looks
// at the few amendments since, not at every one the session has.
func (s *Store) workingSetMember(ctx context.Context, q sqldb.Querier, segs []segment, seqs []int64) (func(int64) bool, error) {
	var above int64
	if len(seqs) > 0 {
		above = slices.Min(seqs)
	}
	fullSeq, _, err := s.newestFullAfter(ctx, q, segs, false, above)
	if err != nil {
		return nil, err
	}
	var full *store.CompactionRecord
	if slices.ContainsFunc(seqs, func(n int64) bool { return n <= fullSeq }) {
		if full, err = compactionAt(ctx, q, segs, fullSeq); err != nil {
			return nil, err
		}
	}
	return func(seq int64) bool { return storekit.InWorkingSet(seq, fullSeq, full) }, nil
}

// newestFull returns the sequence number of the newest compaction entry of
// the visible log that is a full record, not an amendment, or 0 if there is
// none. Amendments do not change which steps the working set has. With
// record, it also returns the record (nil if there is none). It searches the
// segments from the newest, through the partial index on compaction
// entries, telling amendments by the start of their encoding
// (store.AmendPrefix) without reading them.
func (s *Store) newestFull(ctx context.Context, q sqldb.Querier, segs []segment, record bool) (int64, *store.CompactionRecord, error) {
	return s.newestFullAfter(ctx, q, segs, record, 0)
}

// newestFullAfter is newestFull among the compaction entries after seq
// above: 0 when none of those is a full record.
func (s *Store) newestFullAfter(ctx context.Context, q sqldb.Querier, segs []segment, record bool, above int64) (int64, *store.CompactionRecord, error) {
	cols := "seq, NULL"
	if record {
		cols = "seq, body"
	}
	query := "SELECT " + cols + ` FROM entries
		WHERE tenant = $1 AND session_id = $2 AND kind = 'compaction' AND seq > $3 AND seq <= $4 AND ` + s.d.notAmendment + `
		ORDER BY seq DESC LIMIT 1`
	for i := len(segs) - 1; i >= 0; i-- {
		sg := segs[i]
		if sg.hi <= above {
			break
		}
		var seq int64
		var body []byte
		err := q.QueryRow(ctx, query, sg.tenant, sg.id, max(sg.lo, above), sg.hi).Scan(&seq, &body)
		if errors.Is(err, sqldb.ErrNoRows) {
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		if !record {
			return seq, nil, nil
		}
		c, err := store.DecodeCompaction(body)
		if err != nil {
			return 0, nil, fmt.Errorf("stored entry %d does not decode: %v", seq, err)
		}
		return seq, c, nil
	}
	return 0, nil, nil
}

// workingSteps returns the sequence numbers and kinds of the steps of the
// working set of the visible log, in order (see store.WorkingSet), for
// storekit.CheckPinned. Of each step it reads only the start of its
// encoding, where its type is (storekit.EncodedKind).
func (s *Store) workingSteps(ctx context.Context, q sqldb.Querier, segs []segment) ([]storekit.WorkingStep, error) {
	var out []storekit.WorkingStep
	after, comp, err := s.newestFull(ctx, q, segs, true)
	if err != nil {
		return nil, err
	}
	if comp != nil && len(comp.Working) > 0 {
		kinds := make(map[int64]agentmem.StepKind, len(comp.Working))
		query := `SELECT seq, ` + s.d.kindPrefix + ` FROM entries
			WHERE tenant = $1 AND session_id = $2 AND kind = 'step' AND ` + s.d.in("seq", 3) + ` AND seq > $4 AND seq <= $5`
		arg := s.d.ints(comp.Working)
		for _, sg := range segs {
			if sg.lo >= after {
				break
			}
			if err := scanKinds(ctx, q, query, func(seq int64, k agentmem.StepKind) { kinds[seq] = k },
				sg.tenant, sg.id, arg, sg.lo, min(sg.hi, after)); err != nil {
				return nil, err
			}
		}
		for _, seq := range comp.Working {
			if k, ok := kinds[seq]; ok {
				out = append(out, storekit.WorkingStep{Seq: seq, Kind: k})
			}
		}
	}
	query := `SELECT seq, ` + s.d.kindPrefix + ` FROM entries
		WHERE tenant = $1 AND session_id = $2 AND kind = 'step' AND seq > $3 AND seq <= $4 ORDER BY seq`
	for _, sg := range segs {
		if sg.hi <= after {
			continue
		}
		if err := scanKinds(ctx, q, query, func(seq int64, k agentmem.StepKind) { out = append(out, storekit.WorkingStep{Seq: seq, Kind: k}) },
			sg.tenant, sg.id, max(sg.lo, after), sg.hi); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scanKinds runs a query for (seq, kindPrefix) rows and calls fn with each
// step's sequence number and kind.
func scanKinds(ctx context.Context, q sqldb.Querier, query string, fn func(int64, agentmem.StepKind), args ...any) error {
	return queryRows(ctx, q, query, args, func(rows sqldb.Rows) error {
		var seq int64
		var b []byte
		if err := rows.Scan(&seq, &b); err != nil {
			return err
		}
		k, err := storekit.EncodedKind(b)
		if err != nil {
			return fmt.Errorf("stored entry %d: %v", seq, err)
		}
		fn(seq, k)
		return nil
	})
}

// Segments implements store.Segmenter, from the chain of bases segments
// reads.
func (s *Store) Segments(ctx context.Context, tenant, id string) ([]store.Segment, error) {
	if err := s.checkText("tenant", tenant); err != nil {
		return nil, err
	}
	now := s.now()
	var out []store.Segment
	err := s.read(ctx, "segments", func(tx sqldb.Tx) error {
		sess, err := keysOnly(s.loadSession(ctx, tx, tenant, id, "", now, false))
		if err != nil {
			return err
		}
		segs, err := segments(ctx, tx, sess)
		if err != nil {
			return err
		}
		out = make([]store.Segment, 0, len(segs))
		for i := len(segs) - 1; i >= 0; i-- { // the session's own first
			g := store.Segment{Session: segs[i].id, After: segs[i].lo, Through: segs[i].hi}
			if g.Through == math.MaxInt64 {
				g.Through = 0
			}
			out = append(out, g)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
