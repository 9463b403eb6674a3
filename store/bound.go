package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
)

// Bound is an agentmem.Memory bound to a session of a Store: it was
// loaded from the session's working set and writes through to the
// session's log on every add and compaction, before the memory changes
// (an add that returns without error is durable). Use it as the Memory it
// embeds.
//
// Each write carries the session's LastSeq as the bound memory knows it
// (AppendRequest.ExpectedLastSeq), so two writers of one session cannot
// interleave silently: the one that falls behind gets an error wrapping
// agentmem.ErrConflict, its memory unchanged, and can Reload and retry.
//
// Restore on a Bound changes the memory only, not the log; call Reload to
// bring the memory back in line with the log.
type Bound struct {
	*agentmem.Memory

	st         *Store
	tenant, id string

	mu      sync.Mutex
	session *Session // as last read, with LastSeq kept current
	writes  uint64   // successful journal writes, to detect them during Reload
	closed  bool
	// copies holds the sequence numbers of the working-set steps that are
	// modified copies: every compaction record must carry them again.
	copies map[int64]bool
}

// OpenMemory opens a memory on an existing session of st. It reads the
// session's working set (ReadRequest.WorkingSet), so a resumed run loads
// what the live one last held, its summaries included, and not the whole
// log. It restores it into agentmem.New(opts), with step numbers continuing
// after the session's LastSeq, and makes the memory write through to the
// session. opts.Journal must be nil: the Bound provides it. A process
// that died after an add returned and opens the session again finds
// exactly the steps whose adds returned.
//
// OpenMemory opens a session of the default tenant (""); OpenTenantMemory
// opens one of any tenant.
func OpenMemory(ctx context.Context, st *Store, sessionID string, opts agentmem.Options) (*Bound, error) {
	return OpenTenantMemory(ctx, st, "", sessionID, opts)
}

// OpenTenantMemory is OpenMemory for the session of a tenant with this ID
// (see Store on tenants).
func OpenTenantMemory(ctx context.Context, st *Store, tenant, sessionID string, opts agentmem.Options) (*Bound, error) {
	if opts.Journal != nil {
		return nil, invalid("options.journal", "must be nil: a bound memory journals to its session")
	}
	if err := ValidateKey(tenant, sessionID); err != nil {
		return nil, err
	}
	b := &Bound{st: st, tenant: tenant, id: sessionID}
	opts.Journal = (*journal)(b)
	b.Memory = agentmem.New(opts)
	if err := b.Reload(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// CreateMemory creates a session and opens a memory on it: Create
// followed by OpenMemory. A branch (req.ParentID) starts with the
// parent's working set as of the fork point. A new session that is not a
// branch starts with opts.SystemPrompt, when it is set, as its first step
// (a branch has its parent's); if that add fails, the session is deleted
// again and the error returned.
func CreateMemory(ctx context.Context, st *Store, req CreateRequest, opts agentmem.Options) (*Bound, error) {
	if opts.Journal != nil {
		return nil, invalid("options.journal", "must be nil: a bound memory journals to its session")
	}
	s, err := st.Create(ctx, req)
	if err != nil {
		return nil, err
	}
	b, err := OpenTenantMemory(ctx, st, s.Tenant, s.ID, opts)
	if err != nil || opts.SystemPrompt == "" || req.ParentID != "" {
		return b, err
	}
	prompt := &agentmem.SystemPromptStep{Content: strings.ToValidUTF8(opts.SystemPrompt, "\uFFFD")}
	if _, err := b.Add(ctx, prompt); err != nil {
		dctx := context.WithoutCancel(ctx)
		_ = b.Close(dctx) // it deletes a SingleRun session itself
		if derr := st.Delete(dctx, s.Tenant, s.ID); derr != nil && !errors.Is(derr, agentmem.ErrNotFound) {
			return nil, fmt.Errorf("%w (and deleting the new session %s failed: %v)", err, s.ID, derr)
		}
		return nil, err
	}
	return b, nil
}

// Reload replaces the memory's state with the session's working set as
// the store has it now: after an ErrConflict (another writer appended),
// or to undo a Restore. Adds that run concurrently with Reload are not
// lost: it reads again until none slipped in between.
func (b *Bound) Reload(ctx context.Context) error {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return fmt.Errorf("bound memory of session %s: %w", b.id, ErrClosed)
		}
		w := b.writes
		b.mu.Unlock()

		resp, err := b.st.Read(ctx, ReadRequest{Tenant: b.tenant, SessionID: b.id, WorkingSet: true})
		if err != nil {
			return err
		}
		snap := &agentmem.Snapshot{
			Version:    agentmem.SnapshotVersion,
			NextNumber: int(resp.Session.LastSeq) + 1,
			Steps:      resp.Steps,
		}
		b.mu.Lock()
		if b.writes != w { // a write landed after the read: read again
			b.mu.Unlock()
			continue
		}
		b.session = resp.Session.Clone()
		b.copies = make(map[int64]bool, len(resp.Replaced))
		for _, n := range resp.Replaced {
			b.copies[n] = true
		}
		b.mu.Unlock()
		if err := b.Memory.Restore(snap); err != nil {
			return fmt.Errorf("session %s: the stored working set does not restore: %w", b.id, err)
		}
		b.mu.Lock()
		again := b.writes != w
		b.mu.Unlock()
		if !again {
			return nil
		}
	}
}

// Session returns the session's metadata as last read, with LastSeq as of
// the bound memory's last write.
func (b *Bound) Session() *Session {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.session.Clone()
}

// Store returns the store the memory writes to.
func (b *Bound) Store() *Store { return b.st }

// Close ends the run: a SingleRun session is deleted (the run that owned
// it is over); other sessions stay. The memory keeps its state for
// reading, but adds and compactions fail with ErrClosed from then on. The
// store is not closed.
func (b *Bound) Close(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	single := b.session.Retention == SingleRun
	b.mu.Unlock()
	if single {
		if err := b.st.Delete(ctx, b.tenant, b.id); err != nil && !errors.Is(err, agentmem.ErrNotFound) {
			return err
		}
	}
	return nil
}

// journal is the agentmem.Journal of a Bound.
type journal Bound

// expected returns the LastSeq the next write expects, or ErrClosed.
func (j *journal) expected() (int64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return 0, fmt.Errorf("bound memory of session %s: %w", j.id, ErrClosed)
	}
	return j.session.LastSeq, nil
}

// isCopy reports whether the working-set step with this number is a
// modified copy.
func (j *journal) isCopy(n int64) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.copies[n]
}

// appendRetrying appends req with ExpectedLastSeq = exp. An error that does
// not say what happened may hide a write that was committed, so the same
// request is sent again, a few times. Such an error is a lost connection,
// say: not invalid input, a conflict, a missing session, a closed store or
// a cancelled context. A retry of steps already stored is answered with
// their sequence numbers, whatever ExpectedLastSeq says, so nothing is
// stored twice.
func (j *journal) appendRetrying(ctx context.Context, req AppendRequest, exp int64) (*AppendResponse, error) {
	req.Tenant, req.SessionID = j.tenant, j.id
	req.ExpectedLastSeq = &exp
	want := exp + int64(len(req.Steps))
	if req.Compaction != nil {
		want++
	}
	var err error
	for attempt := 0; ; attempt++ {
		var resp *AppendResponse
		resp, err = j.st.Append(ctx, req)
		if err == nil {
			j.mu.Lock()
			j.writes++
			if resp.LastSeq == want && alreadyStored(resp.Seqs, exp) < 0 {
				j.session.LastSeq = resp.LastSeq
			}
			// Otherwise the log holds more than this write added (a
			// retry that found its steps stored earlier, or another
			// writer's entries): keep the old LastSeq so the next write
			// fails with ErrConflict and the caller reloads.
			j.mu.Unlock()
			return resp, nil
		}
		if attempt == 2 || !retryable(ctx, err) || len(req.Steps) == 0 {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(10<<(2*attempt)) * time.Millisecond):
		}
	}
}

// retryable reports whether an append error leaves it unknown whether the
// append was committed.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	for _, known := range []error{agentmem.ErrInvalid, agentmem.ErrConflict, agentmem.ErrNotFound, ErrClosed, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, known) {
			return false
		}
	}
	return true
}

// Append implements agentmem.Journal.
func (j *journal) Append(ctx context.Context, steps []agentmem.Step) ([]int, error) {
	exp, err := j.expected()
	if err != nil {
		return nil, err
	}
	resp, err := j.appendRetrying(ctx, AppendRequest{Steps: steps}, exp)
	if err != nil {
		return nil, err
	}
	if allStored(resp.Seqs, exp) {
		// Every step was in the log before this write, so nothing was
		// stored: the memory holds them already (or held them before a
		// compaction), and adding them again would show them twice.
		return nil, fmt.Errorf("%w: step %q is already in session %s's log at seq %d; Reload to see the log", agentmem.ErrConflict, steps[0].Info().ID, j.id, resp.Seqs[0])
	}
	return toInts(resp.Seqs), nil
}

// alreadyStored returns the index of the first sequence number at or
// below exp (a step that was stored before this write), or -1.
func alreadyStored(seqs []int64, exp int64) int {
	for i, s := range seqs {
		if s <= exp {
			return i
		}
	}
	return -1
}

// allStored reports whether every sequence number is at or below exp.
func allStored(seqs []int64, exp int64) bool {
	for _, s := range seqs {
		if s > exp {
			return false
		}
	}
	return len(seqs) > 0
}

// Compact implements agentmem.Journal: the new steps and the compaction
// record go to the log in one atomic append.
func (j *journal) Compact(ctx context.Context, c agentmem.JournalCompaction) ([]int, error) {
	exp, err := j.expected()
	if err != nil {
		return nil, err
	}
	added := make(map[int]int, len(c.Added)) // index in Working -> index in Steps
	req := AppendRequest{Steps: make([]agentmem.Step, len(c.Added))}
	for k, i := range c.Added {
		if i < 0 || i >= len(c.Working) {
			return nil, fmt.Errorf("agentmem journal compaction: added index %d out of range", i)
		}
		added[i] = k
		req.Steps[k] = c.Working[i]
	}
	rec := &CompactionRecord{Working: make([]int64, len(c.Working))}
	for i, s := range c.Working {
		if k, ok := added[i]; ok {
			rec.Working[i] = NewStepRef(k)
		} else {
			rec.Working[i] = int64(s.Info().Number)
		}
	}
	replaced := make(map[int]bool, len(c.Replaced))
	for _, i := range c.Replaced {
		if i < 0 || i >= len(c.Working) {
			return nil, fmt.Errorf("agentmem journal compaction: replaced index %d out of range", i)
		}
		replaced[i] = true
	}
	// Only the newest record's copies apply, so the copies made by
	// earlier compactions that are still in the working set go again.
	for i, s := range c.Working {
		if _, isNew := added[i]; !isNew && (replaced[i] || j.isCopy(int64(s.Info().Number))) {
			rec.Replaced = append(rec.Replaced, s)
		}
	}
	for _, n := range c.Removed {
		rec.Removed = append(rec.Removed, int64(n))
	}
	req.Compaction = rec
	resp, err := j.appendRetrying(ctx, req, exp)
	if err != nil {
		return nil, err
	}
	copies := make(map[int64]bool, len(rec.Replaced))
	for _, s := range rec.Replaced {
		copies[int64(s.Info().Number)] = true
	}
	j.mu.Lock()
	j.copies = copies
	j.mu.Unlock()
	return toInts(resp.Seqs), nil
}

// Amend implements agentmem.JournalAmender: the copies go to the log as
// one amendment record (see CompactionRecord), whose size does not grow
// with the working set.
func (j *journal) Amend(ctx context.Context, steps []agentmem.Step) error {
	exp, err := j.expected()
	if err != nil {
		return err
	}
	rec := &CompactionRecord{Amend: true, Replaced: steps}
	if _, err := j.appendRetrying(ctx, AppendRequest{Compaction: rec}, exp); err != nil {
		return err
	}
	j.mu.Lock()
	if j.copies == nil {
		j.copies = make(map[int64]bool, len(steps))
	}
	for _, s := range steps {
		j.copies[int64(s.Info().Number)] = true
	}
	j.mu.Unlock()
	return nil
}

func toInts(seqs []int64) []int {
	out := make([]int, len(seqs))
	for i, s := range seqs {
		out[i] = int(s)
	}
	return out
}
