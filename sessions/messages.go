package sessions

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// Message-level writes: chat messages appended one at a time, as agent
// frameworks save them (the OpenAI Agents SDK's sessions, LangChain's
// chat histories, the Vercel AI SDK), and the newest message popped. They
// are built on the store's Append and Read, so every backend has them.
//
// An assistant message whose tool calls have no results yet is stored as an
// ordinary step entry: an agentmem.ActionStep that is pending
// (ActionStep.Pending), which a context leaves out. A tool message appended
// later completes it with an amendment, a compaction entry with
// store.CompactionRecord.Amend set. The amendment keeps the working set as it
// is and carries only a copy of the action with the new result, with the same
// number and ID. So the log keeps what happened in order, and the working set
// shows the completed action where the call was made. A completion stores
// what its copy costs, however long the session is. Writers that change the
// working set this way append conditionally (ExpectedLastSeq) on the working
// set they read, so two tool results appended at once cannot lose one
// another: the one that loses the race reads again and retries.

// MessagesRequest appends chat messages to a session (AppendMessages).
type MessagesRequest struct {
	SessionID string
	// Tenant and SessionID name the session (see store.Store).
	Tenant string
	// Messages are folded into steps by agentmem.FoldMessages with
	// KeepPending: an assistant message's tool calls wait for their
	// results, whatever comes in between, in this request or later ones.
	Messages []agentmem.Message
	// Flush answers every tool call still pending after the messages, of
	// this request and of the session's working set, with an error result
	// (agentmem.MissingResult).
	Flush bool
	// IdempotencyKey, when set, names the request (see
	// store.AppendRequest.Idempotency): the append records it with the
	// request's Fingerprint, so that the same request sent again stores
	// nothing twice and is answered as the first was, and another request
	// with the key is refused. It also gives the new steps whose message
	// has no ID the IDs KEY/0, KEY/1, ..., in order. Without one they get
	// IDs from NewID.
	IdempotencyKey string
	// Fingerprint is the fingerprint recorded with IdempotencyKey: what the
	// request asks to store, as the caller received it; empty means
	// store.MessagesFingerprint(Messages, Flush). A transport whose requests
	// are not messages (the HTTP API's items) gives its own.
	Fingerprint string
	// NewID makes step IDs when there is no key; nil means agentmem.NewID.
	NewID func() string
	// Now is the time given to new steps whose message has none; nil
	// means time.Now.
	Now func() time.Time
	// ExpectedLastSeq, when set, must equal the session's LastSeq, or the
	// append fails with agentmem.ErrConflict (a request whose tool
	// results all repeat recorded ones stores nothing and succeeds).
	ExpectedLastSeq *int64
	// Retry bounds the retries of an append without ExpectedLastSeq that
	// another writer got ahead of; nil means store.DefaultRetry.
	Retry *store.RetryPolicy
}

// MessagesResponse reports what AppendMessages stored.
type MessagesResponse struct {
	// Seqs are the sequence numbers of the new steps, in order.
	Seqs []int64
	// Updated are the sequence numbers of the stored actions whose calls
	// the messages answered, in working-set order; the copies with the
	// new results are in the amendment CompactionSeq.
	Updated []int64
	// CompactionSeq is the sequence number of that amendment (0: none).
	CompactionSeq int64
	// Repeated are the indexes of the tool messages that repeated the
	// result their call already had (a retried request): they stored
	// nothing.
	Repeated []int
	// LastSeq is the session's LastSeq after the append.
	LastSeq int64
}

// workingSetSource gives the message-level writes (appendMessages, pop,
// clearWorkingSet, record) the working sets of the sessions they change,
// as of each try, and learns what they appended. The service's cache gives
// the ones it holds, brought up to date with the log, and adds what was
// appended to them. So a tool result sent on its own costs what it stores,
// not the length of the session. Without a cache they are read from the
// store on every try (newStoreWorkingSets).
//
// Whatever it gives, the log decides: a write that changes what it read
// appends conditionally on the LastSeq it read, and one that another
// writer got ahead of asks again.
type workingSetSource interface {
	// OpenActions returns the actions of a session's working set that a
	// fold of msgs may give results to, as copies the caller may change.
	// They are agentmem.OpenActions, or a choice the messages fold against
	// the same way, as agentmem.Memory.OpenActions. It also returns the
	// session's LastSeq as of that working set.
	OpenActions(ctx context.Context, key store.Key, msgs []agentmem.Message, flush bool) ([]*agentmem.ActionStep, int64, error)
	// WorkingSet returns a session's working set as a Read with
	// WorkingSet returns it: its Steps, Replaced and store.Session (of which
	// the writes use the LastSeq). The caller may change the steps.
	WorkingSet(ctx context.Context, key store.Key) (*store.ReadResponse, error)
	// Appended is told of each append of these writes that stored
	// entries (not of a retry that found them stored): the request as it
	// was appended and the store's response.
	Appended(ctx context.Context, req store.AppendRequest, resp *store.AppendResponse)
}

// newStoreWorkingSets returns the working sets read from st (a Read with
// WorkingSet), which are told of nothing.
func newStoreWorkingSets(st *store.Store) workingSetSource { return storeWorkingSets{st} }

type storeWorkingSets struct{ st *store.Store }

func (w storeWorkingSets) OpenActions(ctx context.Context, key store.Key, msgs []agentmem.Message, flush bool) ([]*agentmem.ActionStep, int64, error) {
	ws, err := w.WorkingSet(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	return agentmem.OpenActions(ws.Steps, msgs, flush), ws.Session.LastSeq, nil
}

func (w storeWorkingSets) WorkingSet(ctx context.Context, key store.Key) (*store.ReadResponse, error) {
	return readWorkingSet(ctx, w.st, key.Tenant, key.ID)
}

func (storeWorkingSets) Appended(context.Context, store.AppendRequest, *store.AppendResponse) {}

// appendMessages is Service.AppendMessages over the working sets ws
// gives: it folds the messages against the open actions ws returns, and
// tells ws of what it appended. st is the store it appends to and reads
// an idempotency key's earlier request from.
func appendMessages(ctx context.Context, st *store.Store, ws workingSetSource, req MessagesRequest) (*MessagesResponse, error) {
	if err := store.ValidateKey(req.Tenant, req.SessionID); err != nil {
		return nil, err
	}
	if len(req.Messages) == 0 {
		return nil, invalid("messages", "is empty: send at least one message")
	}
	if req.ExpectedLastSeq != nil && *req.ExpectedLastSeq < 0 {
		return nil, invalid("expected_last_seq", "is negative")
	}
	var key *store.Idempotency
	if req.IdempotencyKey != "" {
		key = &store.Idempotency{Key: req.IdempotencyKey, Fingerprint: req.Fingerprint}
		if key.Fingerprint == "" {
			fp, err := store.MessagesFingerprint(req.Messages, req.Flush)
			if err != nil {
				return nil, invalid("messages", "%v", err)
			}
			key.Fingerprint = fp
		}
		if err := store.ValidateIdempotency(key); err != nil {
			return nil, err
		}
	}
	now := req.Now
	if now == nil {
		now = time.Now
	}
	needState := req.Flush || answersEarlierCalls(req.Messages)
	// once folds the messages against the working set as it is now and
	// appends them; the amendment of a stored action is conditional on
	// that working set.
	once := func() (*MessagesResponse, error) {
		var open []*agentmem.ActionStep
		var last int64 // the LastSeq open reflects
		if needState {
			var err error
			if open, last, err = ws.OpenActions(ctx, store.Key{Tenant: req.Tenant, ID: req.SessionID}, req.Messages, req.Flush); err != nil {
				return nil, err
			}
		}
		f, err := agentmem.FoldMessages(open, req.Messages, agentmem.FoldOptions{KeepPending: true, Flush: req.Flush, NewID: stepIDs(req), Now: now})
		if err != nil {
			// A retry of a request whose calls are no longer what they
			// were (answered, or out of the working set) is still a
			// retry, and a request reusing the key is refused as such.
			if key != nil {
				out, kerr := checkMessagesKey(ctx, st, req, key, nil)
				if out != nil || errors.Is(kerr, store.ErrIDReused) {
					return out, kerr
				}
			}
			return nil, err
		}
		out := &MessagesResponse{Seqs: []int64{}, Repeated: f.Repeated}
		if len(f.Steps) == 0 && len(f.Updated) == 0 {
			// Every message repeated a recorded result: nothing to store,
			// unless the key was used for another request.
			if key != nil {
				if out, kerr := checkMessagesKey(ctx, st, req, key, f.Repeated); out != nil || kerr != nil {
					return out, kerr
				}
			}
			out.LastSeq = last
			return out, nil
		}
		ar := store.AppendRequest{SessionID: req.SessionID, Steps: f.Steps, ExpectedLastSeq: req.ExpectedLastSeq, Tenant: req.Tenant, Idempotency: key}
		if len(f.Updated) > 0 {
			ar.Compaction = amendment(f.Updated)
			if ar.ExpectedLastSeq == nil {
				ar.ExpectedLastSeq = &last
			}
			for _, u := range f.Updated {
				out.Updated = append(out.Updated, int64(u.Number))
			}
		}
		resp, err := st.Append(ctx, ar)
		if err != nil {
			return nil, err
		}
		if !resp.Retried {
			ws.Appended(ctx, ar, resp)
		}
		if resp.Retried && key != nil {
			return retriedMessages(ctx, st, req, resp, f.Repeated)
		}
		if resp.Seqs != nil {
			out.Seqs = resp.Seqs
		}
		out.CompactionSeq, out.LastSeq = resp.CompactionSeq, resp.LastSeq
		return out, nil
	}
	if req.ExpectedLastSeq != nil || !needState {
		// The caller's position, whose conflict is the answer, or an
		// append of new steps that depends on nothing read.
		return once()
	}
	var out *MessagesResponse
	err := req.Retry.Do(ctx, "messages", func(int) error {
		var err error
		out, err = once()
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkMessagesKey checks the idempotency key of a request that has
// nothing to append, or whose messages no longer fold (a store.KeyOnly append):
// a retry is answered as the request was, a request reusing the key is
// refused, and otherwise it returns nil, nil.
func checkMessagesKey(ctx context.Context, st *store.Store, req MessagesRequest, key *store.Idempotency, repeated []int) (*MessagesResponse, error) {
	resp, err := st.Append(ctx, store.AppendRequest{Tenant: req.Tenant, SessionID: req.SessionID, Idempotency: key})
	if err != nil || !resp.Retried {
		return nil, err
	}
	return retriedMessages(ctx, st, req, resp, repeated)
}

// retriedMessages answers a retry of a request with an idempotency key
// as the request was answered: the seqs of its steps and of its
// amendment, and the actions the amendment completed, which it reads.
func retriedMessages(ctx context.Context, st *store.Store, req MessagesRequest, resp *store.AppendResponse, repeated []int) (*MessagesResponse, error) {
	out := &MessagesResponse{Seqs: resp.Seqs, CompactionSeq: resp.CompactionSeq, LastSeq: resp.LastSeq, Repeated: repeated}
	if out.Seqs == nil {
		out.Seqs = []int64{}
	}
	if resp.CompactionSeq == 0 {
		return out, nil
	}
	r, err := st.Read(ctx, store.ReadRequest{Tenant: req.Tenant, SessionID: req.SessionID, After: resp.CompactionSeq - 1, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(r.Entries) == 1 && r.Entries[0].Compaction != nil {
		for _, c := range r.Entries[0].Compaction.Replaced {
			out.Updated = append(out.Updated, int64(c.Info().Number))
		}
	}
	return out, nil
}

// readWorkingSet reads a session's working set for a writer.
func readWorkingSet(ctx context.Context, st *store.Store, tenant, id string) (*store.ReadResponse, error) {
	return st.Read(ctx, store.ReadRequest{Tenant: tenant, SessionID: id, WorkingSet: true})
}

// answersEarlierCalls reports whether a tool message answers a call that
// no earlier message of the list made: one of the session's.
func answersEarlierCalls(msgs []agentmem.Message) bool {
	made := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			made[c.ID] = true
		}
		if m.Role == agentmem.RoleTool && !made[m.ToolCallID] {
			return true
		}
	}
	return false
}

// stepIDs returns the ID maker of a request's new steps: KEY/0, KEY/1,
// ... with a key.
func stepIDs(req MessagesRequest) func() string {
	if req.IdempotencyKey == "" {
		if req.NewID != nil {
			return req.NewID
		}
		return agentmem.NewID
	}
	n := 0
	return func() string {
		id := req.IdempotencyKey + "/" + strconv.Itoa(n)
		n++
		return id
	}
}

// amendment is the compaction record that replaces the actions changed
// stands in for by those copies, keeping the working set as it is.
func amendment(changed []*agentmem.ActionStep) *store.CompactionRecord {
	rec := &store.CompactionRecord{Amend: true, Replaced: make([]agentmem.Step, len(changed))}
	for i, c := range changed {
		rec.Replaced[i] = c
	}
	return rec
}

// withoutStep is the full compaction record that keeps the working set ws
// read but for its step seq, which it removes. The copies in the working
// set go again (a full record's copies replace every earlier one).
func withoutStep(ws *store.ReadResponse, seq int64) *store.CompactionRecord {
	copies := make(map[int64]bool, len(ws.Replaced))
	for _, n := range ws.Replaced {
		copies[n] = true
	}
	rec := &store.CompactionRecord{Working: make([]int64, 0, len(ws.Steps)), Removed: []int64{seq}}
	for _, s := range ws.Steps {
		n := int64(s.Info().Number)
		if n == seq {
			continue
		}
		rec.Working = append(rec.Working, n)
		if copies[n] {
			rec.Replaced = append(rec.Replaced, s)
		}
	}
	return rec
}

// PopRequest pops the newest message of a session (Pop).
type PopRequest struct {
	SessionID string
	// Tenant and SessionID name the session (see store.Store).
	Tenant string
	// ExpectedLastSeq, when set, must equal the session's LastSeq, or the
	// pop fails with agentmem.ErrConflict and changes nothing.
	ExpectedLastSeq *int64
	// Target, when set, chooses what to pop in place of the newest message.
	// It is for callers whose own order of messages is not the working set's,
	// such as package responses, which keeps the order of the items it
	// stores. Given the working set (never empty), it returns the index of
	// one of its steps. With it comes either the ID of a call of that step
	// (an action) whose result to pop, or "" to pop that step's newest
	// message (agentmem.PopMessage). A choice that names no step, or a call
	// with no result, is ErrInvalid. It is called again on each attempt.
	Target func(steps []agentmem.Step) (index int, callID string)
	// Retry bounds the retries of a pop without ExpectedLastSeq that
	// another writer got ahead of; nil means store.DefaultRetry.
	Retry *store.RetryPolicy
}

// PopResponse reports what Pop took out.
type PopResponse struct {
	// Seq is the sequence number of the step the message belongs to.
	Seq int64
	// Message is the message popped, in canonical form (see
	// agentmem.PopMessage).
	Message agentmem.Message
	// Step is the step as it was in the working set before the pop.
	Step agentmem.Step
	// Rest, when the message was a tool result, is the copy of its action
	// without it that now stands in the working set (its call pending
	// again); nil when the whole step left the working set.
	Rest agentmem.Step
	// CompactionSeq is the sequence number of the compaction entry that
	// records the pop, and LastSeq the session's LastSeq after it.
	CompactionSeq int64
	LastSeq       int64
}

// pop is Service.Pop over the working sets ws gives (see appendMessages).
func pop(ctx context.Context, st *store.Store, ws workingSetSource, req PopRequest) (*PopResponse, error) {
	if err := store.ValidateKey(req.Tenant, req.SessionID); err != nil {
		return nil, err
	}
	var out *PopResponse
	resp, err := rewriteWorkingSet(ctx, st, ws, req.Tenant, req.SessionID, req.ExpectedLastSeq, req.Retry, "pop", func(ws *store.ReadResponse) (*store.CompactionRecord, error) {
		if len(ws.Steps) == 0 {
			return nil, fmt.Errorf("session %s: %w", req.SessionID, store.ErrNothingToPop)
		}
		i, callID := len(ws.Steps)-1, ""
		if req.Target != nil {
			i, callID = req.Target(ws.Steps)
			if i < 0 || i >= len(ws.Steps) {
				return nil, invalid("target", "names step %d of a working set of %d", i, len(ws.Steps))
			}
		}
		step := ws.Steps[i]
		seq := int64(step.Info().Number)
		out = &PopResponse{Seq: seq, Step: step}
		if callID == "" {
			out.Message, out.Rest = agentmem.PopMessage(step)
		} else {
			a, ok := step.(*agentmem.ActionStep)
			var rest *agentmem.ActionStep
			if ok {
				out.Message, rest, ok = a.PopResult(callID)
			}
			if !ok {
				return nil, invalid("target", "step %d has no result for call %q", seq, callID)
			}
			out.Rest = rest
		}
		if out.Rest != nil {
			// One tool result of an action: its copy without it.
			return amendment([]*agentmem.ActionStep{out.Rest.(*agentmem.ActionStep)}), nil
		}
		return withoutStep(ws, seq), nil
	})
	if err != nil {
		return nil, err
	}
	out.CompactionSeq, out.LastSeq = resp.CompactionSeq, resp.LastSeq
	return out, nil
}

// ClearRequest empties a session's working set (Clear).
type ClearRequest struct {
	SessionID string
	// Tenant and SessionID name the session (see store.Store).
	Tenant string
	// ExpectedLastSeq, when set, must equal the session's LastSeq, or the
	// clear fails with agentmem.ErrConflict and changes nothing.
	ExpectedLastSeq *int64
	// Retry bounds the retries of a clear without ExpectedLastSeq that
	// another writer got ahead of; nil means store.DefaultRetry.
	Retry *store.RetryPolicy
}

// ClearResponse reports what Clear did.
type ClearResponse struct {
	// Removed are the sequence numbers of the steps that left the working
	// set, in working-set order (none when it was empty already).
	Removed []int64
	// CompactionSeq is the sequence number of the compaction entry that
	// records the clear (0 when the working set was empty: nothing was
	// written), and LastSeq the session's LastSeq after it.
	CompactionSeq int64
	LastSeq       int64
}

// clearWorkingSet is Service.Clear over the working sets ws gives (see
// appendMessages).
func clearWorkingSet(ctx context.Context, st *store.Store, ws workingSetSource, req ClearRequest) (*ClearResponse, error) {
	if err := store.ValidateKey(req.Tenant, req.SessionID); err != nil {
		return nil, err
	}
	out := &ClearResponse{}
	resp, err := rewriteWorkingSet(ctx, st, ws, req.Tenant, req.SessionID, req.ExpectedLastSeq, req.Retry, "clear", func(ws *store.ReadResponse) (*store.CompactionRecord, error) {
		out.Removed = make([]int64, len(ws.Steps))
		for i, s := range ws.Steps {
			out.Removed[i] = int64(s.Info().Number)
		}
		if len(ws.Steps) == 0 {
			out.LastSeq = ws.Session.LastSeq
			return nil, nil
		}
		return &store.CompactionRecord{Working: []int64{}, Removed: out.Removed}, nil
	})
	if err != nil {
		return nil, err
	}
	if resp != nil {
		out.CompactionSeq, out.LastSeq = resp.CompactionSeq, resp.LastSeq
	}
	return out, nil
}

// rewriteWorkingSet appends the compaction record that change makes of a
// session's working set, as sets gives it, and tells sets of the append. The
// append is conditional on the working set read. With expected, it happens
// only if the session's LastSeq is that (ErrConflict otherwise). Without, a
// write that another writer got ahead of reads the working set again and
// calls change again, within retry (op names it). A nil record from change
// writes nothing (the response is then nil).
func rewriteWorkingSet(ctx context.Context, st *store.Store, sets workingSetSource, tenant, id string, expected *int64, retry *store.RetryPolicy, op string, change func(ws *store.ReadResponse) (*store.CompactionRecord, error)) (*store.AppendResponse, error) {
	if expected != nil && *expected < 0 {
		return nil, invalid("expected_last_seq", "is negative")
	}
	once := func() (*store.AppendResponse, error) {
		ws, err := sets.WorkingSet(ctx, store.Key{Tenant: tenant, ID: id})
		if err != nil {
			return nil, err
		}
		last := ws.Session.LastSeq
		if expected != nil && *expected != last {
			return nil, &store.StaleError{SessionID: id, Expected: *expected, LastSeq: last}
		}
		rec, err := change(ws)
		if err != nil || rec == nil {
			return nil, err
		}
		ar := store.AppendRequest{SessionID: id, Compaction: rec, ExpectedLastSeq: &last, Tenant: tenant}
		resp, err := st.Append(ctx, ar)
		if err == nil && !resp.Retried {
			sets.Appended(ctx, ar, resp)
		}
		return resp, err
	}
	if expected != nil {
		return once() // the caller's position: its conflict is the answer
	}
	var resp *store.AppendResponse
	err := retry.Do(ctx, op, func(int) error {
		var err error
		resp, err = once()
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// invalid returns an *agentmem.InvalidError for field.
func invalid(field, format string, args ...any) error {
	return &agentmem.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// AppendMessages folds chat messages into steps (agentmem.FoldMessages)
// and appends them to a session's log, atomically.
//
// A tool message answers a call made by an earlier message of the same
// request or by an action of the session's working set. One that answers a
// stored action completes it, or brings it nearer completion, with an
// amendment in the same append, after the request's new steps. The working
// set stays as it is, with the new steps after it. The action's copy with
// its new result stands in for it. That append is
// conditional on the working set read; if another writer got in between,
// the working set is read and the messages folded again, within
// req.Retry (see store.RetryPolicy.Do), unless the request gave its own
// ExpectedLastSeq. A request whose tool messages answer only calls of its
// own is appended without reading anything.
//
// With an idempotency key, the key's record decides first. A retry of the
// request is answered as the request was: its seqs, its amendment's seq and
// the actions it completed. That holds whatever the session holds now, even
// when its tool messages now repeat recorded results or answer calls that
// left the working set. Another request with the key is refused.
//
// Errors: agentmem.ErrInvalid for bad input, an *agentmem.InvalidError whose
// field names the message, as "messages[i]". A tool message whose call no
// action of the request or the working set made is bad input. A tool message
// whose call already has a different result is an
// *agentmem.ResultConflictError. Other errors are what Read and Append
// return: an *store.IDReusedError for a key reused for other messages,
// ErrConflict when ExpectedLastSeq does not hold, and a *store.ContendedError
// when other writers got ahead of every try. Nothing is stored when it fails.
//
// The messages are folded against the session's working set as the
// context cache holds it, brought up to date with the log first, not read
// from the store: a tool result that completes a stored call costs what
// it stores, however long the session. A request without Now gets the
// service's clock, one without Retry the service's policy (see Retry).
func (s *Service) AppendMessages(ctx context.Context, req MessagesRequest) (*MessagesResponse, error) {
	if req.Now == nil {
		req.Now = s.clock
	}
	if req.Retry == nil {
		req.Retry = s.retryIn(req.Tenant, req.SessionID)
	}
	return appendMessages(ctx, s.st, workingSets{s}, req)
}

// Pop removes the newest message from a session's working set and returns it:
// the newest message (agentmem.PopMessage) of the newest step of the working
// set, pending actions included, or what Target chooses. It is recorded as a
// compaction entry, not a deletion, so the log keeps what happened. That is a
// full record whose working set no longer names the step, which its Removed
// list does. When the message is one tool result of an action, it is an
// amendment that carries a copy of the action without that result. The call
// is then pending: a tool message appended later answers it again. Without
// ExpectedLastSeq, a pop that another writer got ahead of reads the working
// set again and retries, within req.Retry (then a *store.ContendedError). A
// session whose working set is empty is store.ErrNothingToPop. A request
// without Retry gets the service's policy (see Retry).
func (s *Service) Pop(ctx context.Context, req PopRequest) (*PopResponse, error) {
	if req.Retry == nil {
		req.Retry = s.retryIn(req.Tenant, req.SessionID)
	}
	return pop(ctx, s.st, workingSets{s}, req)
}

// Clear empties a session's working set, as agentmem.Memory.Clear does a
// bound memory's. It appends a full compaction record whose working set is
// empty and whose Removed list names every step, pinned ones included. So the
// log keeps what happened, and the session stays usable: what is appended
// next starts a new working set. A working set that is empty already is left
// as it is. Without ExpectedLastSeq, a clear that another writer got ahead of
// reads the working set again and retries, within req.Retry (then a
// *store.ContendedError). A request without Retry gets the service's policy
// (see Retry).
func (s *Service) Clear(ctx context.Context, req ClearRequest) (*ClearResponse, error) {
	if req.Retry == nil {
		req.Retry = s.retryIn(req.Tenant, req.SessionID)
	}
	return clearWorkingSet(ctx, s.st, workingSets{s}, req)
}
