package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// Read implements store.Store. It reads from one snapshot of the database,
// so a concurrent append is either wholly visible or not at all.
//
// With WorkingSet it does not read the whole log: it finds the newest
// compaction entry through an index, then fetches only the steps that
// compaction names and the entries after it, so loading a summarized
// session costs what its working set does, however long its history.
func (s *Store) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := store.ValidateRead(req); err != nil {
		return nil, err
	}
	now := s.now()
	var resp *store.ReadResponse
	err := s.read(ctx, "read", func(tx querier) error {
		sess, err := loadSession(ctx, tx, req.Tenant, req.SessionID, now, false)
		if err != nil {
			return err
		}
		segs, err := segments(ctx, tx, sess)
		if err != nil {
			return err
		}
		resp = &store.ReadResponse{Session: &sess.Session}
		if req.WorkingSet {
			resp.Steps, resp.Replaced, err = readWorkingSet(ctx, tx, segs)
		} else {
			resp.Entries, err = readEntries(ctx, tx, segs, req)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

const entryColumns = "seq, kind, body, created_at"

// scanEntries decodes the rows of an entries query (entryColumns) and
// appends them to out. Decoding (strict JSON and validation of each step)
// is most of the cost of a long read, so a large result is decoded by
// GOMAXPROCS goroutines.
func scanEntries(rows *sql.Rows, out []store.Entry) ([]store.Entry, error) {
	defer rows.Close()
	var raw [][]byte
	first := len(out)
	for rows.Next() {
		var (
			seq, t int64
			kind   string
			body   []byte
		)
		if err := rows.Scan(&seq, &kind, &body, &t); err != nil {
			return nil, err
		}
		out = append(out, store.Entry{Seq: seq, Kind: store.EntryKind(kind), Time: fromNanos(t)})
		raw = append(raw, body)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := decodeEntries(out[first:], raw); err != nil {
		return nil, err
	}
	return out, nil
}

// parallelDecodeMin is the number of entries from which decodeEntries
// spreads the work over several goroutines.
const parallelDecodeMin = 256

// decodeEntries decodes raw[i] into entries[i].
func decodeEntries(entries []store.Entry, raw [][]byte) error {
	workers := min(runtime.GOMAXPROCS(0), len(entries)/(parallelDecodeMin/2))
	if workers <= 1 {
		for i := range entries {
			if err := decodeEntry(&entries[i], raw[i]); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		errMu sync.Mutex
		first error
	)
	const chunk = 64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= len(entries) {
					return
				}
				for i := lo; i < min(lo+chunk, len(entries)); i++ {
					if err := decodeEntry(&entries[i], raw[i]); err != nil {
						errMu.Lock()
						if first == nil {
							first = err
						}
						errMu.Unlock()
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// decodeEntry decodes a stored body into e, by e.Kind.
func decodeEntry(e *store.Entry, body []byte) error {
	var err error
	switch e.Kind {
	case store.StepEntry:
		e.Step, err = store.DecodeStep(body)
	case store.CompactionEntry:
		e.Compaction, err = store.DecodeCompaction(body)
	default:
		err = fmt.Errorf("unknown kind %q", e.Kind)
	}
	if err != nil {
		// A stored entry that does not decode is corruption, not bad
		// input: do not let it pass for ErrInvalid.
		return fmt.Errorf("stored entry %d does not decode: %v", e.Seq, err)
	}
	return nil
}

// readEntries reads the entries with After < seq of the visible log, at
// most Limit of them or the last Last.
func readEntries(ctx context.Context, q querier, segs []segment, req store.ReadRequest) ([]store.Entry, error) {
	out := []store.Entry{} // as memstore: never nil
	if req.Last > 0 {
		// Newest first, segment by segment from the newest, then reverse.
		for i := len(segs) - 1; i >= 0 && len(out) < req.Last; i-- {
			sg := segs[i]
			rows, err := q.QueryContext(ctx, "SELECT "+entryColumns+` FROM entries
				WHERE tenant = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq DESC LIMIT ?`,
				sg.tenant, sg.id, max(sg.lo, req.After), sg.hi, req.Last-len(out))
			if err != nil {
				return nil, err
			}
			if out, err = scanEntries(rows, out); err != nil {
				return nil, err
			}
		}
		slices.Reverse(out)
		return out, nil
	}
	for _, sg := range segs {
		limit := -1 // SQLite: no limit
		if req.Limit > 0 {
			limit = req.Limit - len(out)
			if limit <= 0 {
				break
			}
		}
		if sg.hi <= req.After {
			continue
		}
		rows, err := q.QueryContext(ctx, "SELECT "+entryColumns+` FROM entries
			WHERE tenant = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
			sg.tenant, sg.id, max(sg.lo, req.After), sg.hi, limit)
		if err != nil {
			return nil, err
		}
		if out, err = scanEntries(rows, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readWorkingSet reads the working set of the visible log (the newest
// full compaction entry, the steps it names and every entry after it,
// amendments included) and the sequence numbers of its modified copies
// (see store.ReplacedSeqs).
func readWorkingSet(ctx context.Context, q querier, segs []segment) ([]agentmem.Step, []int64, error) {
	seq, rec, err := newestFull(ctx, q, segs, true)
	if err != nil {
		return nil, nil, err
	}
	var comp []store.Entry
	if rec != nil {
		comp = []store.Entry{{Seq: seq, Kind: store.CompactionEntry, Compaction: rec}}
	}
	var entries []store.Entry
	after := int64(0)
	if len(comp) == 1 {
		c := comp[0]
		after = c.Seq
		// The steps it names that have no replacement, in log order.
		replaced := make(map[int64]bool, len(c.Compaction.Replaced))
		for _, r := range c.Compaction.Replaced {
			replaced[int64(r.Info().Number)] = true
		}
		var named []int64
		for _, seq := range c.Compaction.Working {
			if !replaced[seq] && seq < c.Seq {
				named = append(named, seq)
			}
		}
		if len(named) > 0 {
			slices.Sort(named)
			arg, err := json.Marshal(named)
			if err != nil {
				return nil, nil, err
			}
			for _, sg := range segs {
				if sg.lo >= named[len(named)-1] || sg.hi < named[0] {
					continue
				}
				rows, err := q.QueryContext(ctx, "SELECT "+entryColumns+` FROM entries
					WHERE tenant = ? AND session_id = ? AND seq IN (SELECT value FROM json_each(?)) AND seq > ? AND seq <= ? ORDER BY seq`,
					sg.tenant, sg.id, string(arg), sg.lo, sg.hi)
				if err != nil {
					return nil, nil, err
				}
				if entries, err = scanEntries(rows, entries); err != nil {
					return nil, nil, err
				}
			}
		}
		entries = append(entries, c)
	}
	// Every entry after it.
	for _, sg := range segs {
		if sg.hi <= after {
			continue
		}
		rows, err := q.QueryContext(ctx, "SELECT "+entryColumns+` FROM entries
			WHERE tenant = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq`,
			sg.tenant, sg.id, max(sg.lo, after), sg.hi)
		if err != nil {
			return nil, nil, err
		}
		if entries, err = scanEntries(rows, entries); err != nil {
			return nil, nil, err
		}
	}
	steps := store.WorkingSet(entries)
	if steps == nil {
		steps = []agentmem.Step{} // as memstore: never nil
	}
	return steps, store.ReplacedSeqs(entries), nil
}

// newestFull returns the sequence number of the newest compaction entry
// of the visible log that is a full record, not an amendment (0 if there
// is none), and, with record, the record (nil if there is none). It
// searches the segments from the newest, through the partial index on
// compaction entries, telling amendments by the start of their encoding
// (store.AmendPrefix) without reading them.
func newestFull(ctx context.Context, q querier, segs []segment, record bool) (int64, *store.CompactionRecord, error) {
	cols := "seq, NULL"
	if record {
		cols = "seq, body"
	}
	for i := len(segs) - 1; i >= 0; i-- {
		sg := segs[i]
		var seq int64
		var body []byte
		err := q.QueryRowContext(ctx, "SELECT "+cols+` FROM entries
			WHERE tenant = ? AND session_id = ? AND kind = 'compaction' AND seq > ? AND seq <= ? AND `+notAmendment+`
			ORDER BY seq DESC LIMIT 1`, sg.tenant, sg.id, sg.lo, sg.hi).Scan(&seq, &body)
		if errors.Is(err, sql.ErrNoRows) {
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

// notAmendment is the SQL condition that a compaction entry is a full
// record: its body does not begin with store.AmendPrefix.
var notAmendment = fmt.Sprintf(`substr(body, 1, %d) <> x'%x'`, len(store.AmendPrefix), store.AmendPrefix)
