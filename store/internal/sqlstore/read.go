package sqlstore

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
)

// Read implements store.Driver. It reads from one snapshot of the database,
// so a concurrent append, or a Delete of a base, is either wholly visible
// or not at all.
//
// With WorkingSet it does not read the whole log. It finds the newest
// compaction entry through an index, then fetches only the steps that
// compaction names and the entries after it. Loading a summarized session
// costs what its working set does, however long its history.
func (s *Store) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	now := s.now()
	var resp *store.ReadResponse
	err := s.read(ctx, "read", func(tx sqldb.Tx) error {
		sess, err := s.loadSession(ctx, tx, req.Tenant, req.SessionID, "", now, false)
		if err != nil {
			return err
		}
		segs, err := segments(ctx, tx, sess)
		if err != nil {
			return err
		}
		resp = &store.ReadResponse{Session: &sess.Session}
		if req.WorkingSet {
			resp.Steps, resp.Replaced, err = s.readWorkingSet(ctx, tx, segs)
		} else {
			resp.Entries, err = s.readEntries(ctx, tx, segs, req)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

const entryColumns = "seq, kind, body, created_at"

// queryEntries runs a query for entryColumns rows and appends their
// entries to out. Decoding (strict JSON and validation of each step) is
// most of the cost of a long read, so a large result is decoded by
// GOMAXPROCS goroutines.
func (s *Store) queryEntries(ctx context.Context, q sqldb.Querier, out []store.Entry, query string, args ...any) ([]store.Entry, error) {
	var (
		raw   [][]byte
		first = len(out)
		seq   int64
		kind  string
		body  []byte
		t     time.Time
		dest  = []any{&seq, &kind, &body, s.d.scanTimeNotNull(&t)}
	)
	err := queryRows(ctx, q, query, args, func(rows sqldb.Rows) error {
		body = nil // a new slice for each row: raw keeps them
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		out = append(out, store.Entry{Seq: seq, Kind: store.EntryKind(kind), Time: t.UTC()})
		raw = append(raw, body)
		return nil
	})
	if err != nil {
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

// decodeEntry decodes a stored body into e, by e.Kind. A body that does
// not decode is reported with the entry's sequence number: the log was
// written by this package, so it means corruption or a newer writer.
func decodeEntry(e *store.Entry, body []byte) error {
	var err error
	switch e.Kind {
	case store.StepEntry:
		e.Step, err = store.DecodeStep(body)
	case store.CompactionEntry:
		e.Compaction, err = store.DecodeCompaction(body)
	default:
		err = fmt.Errorf("unknown entry kind %q", e.Kind)
	}
	if err != nil {
		// Not ErrInvalid: the caller's input is fine, the stored data is
		// not.
		return fmt.Errorf("stored entry %d does not decode: %v", e.Seq, err)
	}
	return nil
}

// readEntries reads the entries of the visible log that req selects
// (After, then the first Limit or the last Last of them).
func (s *Store) readEntries(ctx context.Context, q sqldb.Querier, segs []segment, req store.ReadRequest) ([]store.Entry, error) {
	out := []store.Entry{} // as memstore: never nil
	var err error
	if req.Last > 0 {
		// Newest segment first, newest entries first, then reversed.
		for i := len(segs) - 1; i >= 0 && len(out) < req.Last; i-- {
			sg := segs[i]
			out, err = s.queryEntries(ctx, q, out, "SELECT "+entryColumns+` FROM entries
				WHERE tenant = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq DESC LIMIT $5`,
				sg.tenant, sg.id, max(sg.lo, req.After), sg.hi, req.Last-len(out))
			if err != nil {
				return nil, err
			}
		}
		slices.Reverse(out)
		return out, nil
	}
	for _, sg := range segs {
		if sg.hi <= req.After {
			continue
		}
		limit := s.d.noLimit
		if req.Limit > 0 {
			if len(out) >= req.Limit {
				break
			}
			limit = req.Limit - len(out)
		}
		out, err = s.queryEntries(ctx, q, out, "SELECT "+entryColumns+` FROM entries
			WHERE tenant = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq LIMIT $5`,
			sg.tenant, sg.id, max(sg.lo, req.After), sg.hi, limit)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readWorkingSet reads the working set of the visible log and the seqs of
// its modified copies (see store.WorkingSet and store.ReplacedSeqs). It
// reads only the entries they need: the newest full compaction entry, the
// steps it names (but those it has copies of) and every entry after it,
// amendments included.
func (s *Store) readWorkingSet(ctx context.Context, q sqldb.Querier, segs []segment) ([]agentmem.Step, []int64, error) {
	compSeq, comp, err := s.newestFull(ctx, q, segs, true)
	if err != nil {
		return nil, nil, err
	}
	var entries []store.Entry
	if comp != nil {
		// The steps it names that it has no copy of, in log order...
		replaced := make(map[int64]bool, len(comp.Replaced))
		for _, r := range comp.Replaced {
			replaced[int64(r.Info().Number)] = true
		}
		var named []int64
		for _, seq := range comp.Working {
			if seq < compSeq && !replaced[seq] {
				named = append(named, seq)
			}
		}
		if len(named) > 0 {
			slices.Sort(named)
			arg := s.d.ints(named)
			for _, sg := range segs {
				if sg.lo >= named[len(named)-1] || sg.hi < named[0] {
					continue
				}
				entries, err = s.queryEntries(ctx, q, entries, "SELECT "+entryColumns+` FROM entries
					WHERE tenant = $1 AND session_id = $2 AND kind = 'step' AND `+s.d.in("seq", 3)+` AND seq > $4 AND seq <= $5
					ORDER BY seq`, sg.tenant, sg.id, arg, sg.lo, sg.hi)
				if err != nil {
					return nil, nil, err
				}
			}
		}
		// ...and the compaction itself.
		entries = append(entries, store.Entry{Seq: compSeq, Kind: store.CompactionEntry, Compaction: comp})
	}
	// Every entry after it.
	for _, sg := range segs {
		if sg.hi <= compSeq {
			continue
		}
		entries, err = s.queryEntries(ctx, q, entries, "SELECT "+entryColumns+` FROM entries
			WHERE tenant = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq`,
			sg.tenant, sg.id, max(sg.lo, compSeq), sg.hi)
		if err != nil {
			return nil, nil, err
		}
	}
	steps := store.WorkingSet(entries)
	if steps == nil {
		steps = []agentmem.Step{} // as memstore: never nil
	}
	return steps, store.ReplacedSeqs(entries), nil
}
