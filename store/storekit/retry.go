package storekit

import (
	"bytes"
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// CheckRetry decides what an append is from the request's steps that
// the session's visible log holds already: stored[i] is the stored step
// with Steps[i]'s ID (nil if there is none) and seqs[i] its sequence
// number. Backends call it in the append's transaction, after looking
// the request's step IDs up; only stored steps are compared, so an
// append of new steps pays nothing for it.
//
//   - No step is stored (or the request has none): a new append; it
//     returns false.
//   - Every step is stored and each is the same step (store.SameStep): a retry;
//     it returns true. The backend answers with the stored seqs (and, with
//     a compaction, checks it with CheckRetriedCompaction) and stores
//     nothing.
//   - Otherwise the request reuses IDs for something else: a stored step
//     differs from the request's, or some steps are stored and others
//     not (appends are all or none, so a retry finds all its steps or
//     none). The error is a *store.IDReusedError (store.ErrIDReused).
func CheckRetry(steps, stored []agentmem.Step, seqs []int64) (bool, error) {
	n := 0
	for i, s := range stored {
		if s == nil {
			continue
		}
		n++
		if !store.SameStep(s, steps[i]) {
			return false, &store.IDReusedError{Index: i, ID: steps[i].Info().ID, Seq: seqs[i],
				Reason: fmt.Sprintf("differs from the step stored with this ID at seq %d", seqs[i])}
		}
	}
	switch {
	case n == 0:
		return false, nil
	case n == len(steps):
		return true, nil
	}
	for i, s := range stored {
		if s == nil {
			var at string
			for j, o := range stored {
				if o != nil {
					at = fmt.Sprintf("steps[%d] is (at seq %d)", j, seqs[j])
					break
				}
			}
			return false, &store.IDReusedError{Index: i, ID: steps[i].Info().ID,
				Reason: "is not stored while " + at + ": a retry finds every step of its request stored"}
		}
	}
	return false, nil // not reached: 0 < n < len(steps) leaves a nil
}

// CheckRetriedCompaction checks the compaction c of a retry (a request
// whose steps are all stored, with sequence numbers seqs). The request
// that stored the steps stored its compaction right after the newest of
// them, so that entry, at seq after, must be a compaction with the same
// record as c once c's NewStepRefs are resolved to seqs (equal
// store.EncodeCompaction encodings). stored is that entry's record, nil if the
// entry is not a compaction or there is none. The error is an
// *store.IDReusedError (store.ErrIDReused).
//
// A retry without a compaction passes whatever follows its steps: a
// compaction there may have been appended on its own, later.
func CheckRetriedCompaction(c *store.CompactionRecord, seqs []int64, after int64, stored *store.CompactionRecord) error {
	reused := func(reason string) error {
		return &store.IDReusedError{Index: -1, Seq: after, Reason: reason}
	}
	if stored == nil {
		return reused(fmt.Sprintf("is missing: the request's steps are stored (up to seq %d) without one after them", after-1))
	}
	want, err := ResolveCompaction(c, seqs)
	if err != nil {
		return err
	}
	a, err := store.EncodeCompaction(want)
	if err != nil {
		return err
	}
	b, err := store.EncodeCompaction(stored)
	if err != nil {
		return err
	}
	if !bytes.Equal(a, b) {
		return reused(fmt.Sprintf("differs from the one stored after the request's steps, at seq %d", after))
	}
	return nil
}

// StoredStep is a step of a session's visible log that a backend found by
// its ID: its sequence number and its stored encoding, or the step itself
// for a backend that keeps steps decoded.
type StoredStep struct {
	Seq  int64
	Body []byte
	// Step, when not nil, is the stored step, and Body is not read.
	Step agentmem.Step
}

// CheckStoredRetry decodes the stored steps among a request's step IDs
// (existing, by ID) and applies CheckRetry to them: it returns the stored
// steps' seqs (0 for a step not stored) and whether the request is a
// retry, or the *store.IDReusedError.
func CheckStoredRetry(steps []agentmem.Step, ids []string, existing map[string]StoredStep) ([]int64, bool, error) {
	seqs := make([]int64, len(ids))
	stored := make([]agentmem.Step, len(ids))
	for i, id := range ids {
		st, ok := existing[id]
		if !ok {
			continue
		}
		step := st.Step
		if step == nil {
			var err error
			if step, err = store.DecodeStep(st.Body); err != nil {
				return nil, false, fmt.Errorf("stored entry %d does not decode: %v", st.Seq, err)
			}
		}
		seqs[i], stored[i] = st.Seq, step
	}
	retry, err := CheckRetry(steps, stored, seqs)
	return seqs, retry, err
}

// KeyRecord is what a backend keeps of an append made with an
// idempotency key: the request's fingerprint and where its entries are,
// enough to answer a retry as the append was answered.
type KeyRecord struct {
	Fingerprint string
	// Seq is the sequence number of the append's first entry, LastSeq of
	// its last one. Its Steps steps are at Seq, Seq+1, ...; its
	// compaction, if it had one, is at LastSeq, after them.
	Seq, LastSeq int64
	Steps        int
}

// NewKeyRecord returns the record of an append made with fingerprint fp
// that stored what resp reports.
func NewKeyRecord(fp string, resp *store.AppendResponse) KeyRecord {
	r := KeyRecord{Fingerprint: fp, Seq: resp.CompactionSeq, LastSeq: resp.LastSeq, Steps: len(resp.Seqs)}
	if len(resp.Seqs) > 0 {
		r.Seq = resp.Seqs[0]
	}
	return r
}

// Response is the answer to a retry of the append recorded, in a session
// whose LastSeq is lastSeq now.
func (r KeyRecord) Response(lastSeq int64) *store.AppendResponse {
	resp := &store.AppendResponse{Seqs: make([]int64, r.Steps), LastSeq: lastSeq, Retried: true}
	for i := range resp.Seqs {
		resp.Seqs[i] = r.Seq + int64(i)
	}
	if r.LastSeq >= r.Seq+int64(r.Steps) {
		resp.CompactionSeq = r.LastSeq
	}
	return resp
}

// CheckKey decides what an append with an idempotency key is from the
// key's record in the session's visible log (nil if there is none).
// Backends call it in the append's transaction, under the session's lock,
// before anything else.
//
//   - No record: it returns nil, nil. The append goes on: its step IDs
//     decide whether it is a retry of steps stored before keys were
//     recorded (see store.AppendRequest), and an append that stores entries
//     records the key (NewKeyRecord).
//   - A record with the request's fingerprint: a retry. It returns the
//     recorded answer (KeyRecord.Response), with the session's lastSeq,
//     and the backend stores nothing, whatever ExpectedLastSeq says.
//   - A record with another fingerprint: the key was used for another
//     request. The error is a *store.IDReusedError (store.ErrIDReused).
func CheckKey(req store.AppendRequest, rec *KeyRecord, lastSeq int64) (*store.AppendResponse, error) {
	if req.Idempotency == nil || rec == nil {
		return nil, nil
	}
	if rec.Fingerprint == req.Idempotency.Fingerprint {
		return rec.Response(lastSeq), nil
	}
	where := fmt.Sprintf("at seq %d", rec.Seq)
	if rec.LastSeq > rec.Seq {
		where = fmt.Sprintf("at seqs %d to %d", rec.Seq, rec.LastSeq)
	}
	return nil, &store.IDReusedError{Index: -1, Key: req.Idempotency.Key, Seq: rec.Seq, Reason: "another request was stored with it " + where}
}
