package sessions

import (
	"context"
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// ContextRequest asks for a session's context (Context).
type ContextRequest struct {
	// Tenant and SessionID name the session.
	Tenant    string
	SessionID string
	// Budget is the most tokens the context may cost; 0 means the
	// service's maximum (MaxContextTokens), so that a long session's
	// request renders only the steps that fit, never the whole log. A
	// budget above the maximum is an *agentmem.InvalidError.
	Budget int
	// Reserve is taken off the budget for what the caller adds to the
	// context itself.
	Reserve int
	// Facts and Recall, when set, add the session user's facts and turns
	// of other sessions to the context's system prompt, each within its
	// share of the budget, which the steps' budget leaves out.
	Facts  *FactsRequest
	Recall *RecallRequest
	// Format names the rendering (render.ByName); empty means OpenAI.
	Format string
	// Counter counts tokens; nil means the service's.
	Counter tokenizer.Counter
	// TruncateToFill fills what the budget leaves with a truncated copy of
	// the newest step that did not fit (agentmem.ContextOptions).
	TruncateToFill bool
	// Reuse, when set, is the agentmem.Context of an earlier call that the
	// caller no longer needs (its answer is sent): Context fits into its
	// storage, as agentmem.ContextOptions.Reuse does, and the result's
	// embedded Context may be Reuse itself.
	Reuse *agentmem.Context
}

// Context is a session's context: what agentmem.Memory.Context returns,
// with what the request asked to add, the log sequence number it reflects
// and the session's user.
type Context struct {
	*agentmem.Context
	// Messages and Tokens are the context's, with the memory blocks, the
	// facts and the turns added to its system prompt (the embedded
	// Context's without them).
	Messages []agentmem.Message
	Tokens   int
	// Blocks are the memory blocks shown, in order (blocks.Shown): the
	// user's, then the session's.
	Blocks []blocks.Block
	// Facts are the facts added, in the order shown: nil when the request
	// asked for none, empty when none was found or fitted.
	Facts []facts.Hit
	// Recalled are the IDs of the recall documents (turns) added.
	Recalled []string
	// LastSeq is the log sequence number the context reflects: every
	// entry up to it, and nothing after.
	LastSeq int64
	// UserID is the session's user.
	UserID string
	// Fit is the budget the steps were fitted to (the budget, or the
	// service's maximum, less the reserve).
	Fit int
}

// rendering checks a request's budget and resolves its format (OpenAI when
// it names none, recorded in req) and counter, and the budget its steps
// are fitted to: the budget, or the service's maximum without one, less
// the reserve.
func (s *Service) rendering(req *ContextRequest) (agentmem.Format, tokenizer.Counter, int, error) {
	if req.Budget < 0 || req.Budget > s.cfg.MaxContextTokens {
		return nil, nil, 0, &agentmem.InvalidError{Field: "budget", Reason: fmt.Sprintf("is %d tokens; it must be between 0 and this server's maximum context of %d tokens", req.Budget, s.cfg.MaxContextTokens)}
	}
	if req.Format == "" {
		req.Format = render.NameOpenAI
	}
	format, err := render.ByName(req.Format)
	if err != nil {
		return nil, nil, 0, err
	}
	counter := req.Counter
	if counter == nil {
		counter = s.counter
	}
	fit := req.Budget - req.Reserve - Reserved(req)
	if req.Budget == 0 {
		fit = s.cfg.MaxContextTokens
	}
	return format, counter, fit, nil
}

// Context returns a session's context: its working set fitted to the budget
// and rendered in the format, from the service's cache of session memories.
// The cache is brought up to date with the log first, so the context reflects
// every append acknowledged before the call, by any process sharing the
// store. With Config.Blocks, the memory blocks of the session's user and of
// the session (blocks.Shown) follow the system prompt (blocks.Render), always
// and pinned. The steps are fitted to what the budget leaves after them. When
// the pinned steps and the blocks do not fit, the error is the
// *agentmem.BudgetError.
func (s *Service) Context(ctx context.Context, req ContextRequest) (*Context, error) {
	format, counter, fit, err := s.rendering(&req)
	if err != nil {
		return nil, err
	}
	st, err := s.cache.get(ctx, req.Tenant, req.SessionID, form{req.Format, counter.Name()})
	if err != nil {
		return nil, err
	}
	shown, err := s.blocksOf(ctx, req.Tenant, req.SessionID, st.user)
	if err != nil {
		return nil, err
	}
	c, msgs, tokens, err := fitWithBlocks(fit, blocks.Render(shown), counter, func(budget int) (*agentmem.Context, error) {
		return st.rep.Context(ctx, agentmem.ContextOptions{Budget: budget, Format: format, Counter: counter, TruncateToFill: req.TruncateToFill, Reuse: req.Reuse})
	})
	if err != nil {
		return nil, err
	}
	out := &Context{Context: c, Messages: msgs, Tokens: tokens, Blocks: shown, LastSeq: st.seq, UserID: st.user, Fit: fit}
	if err := s.inject(ctx, &req, out, counter); err != nil {
		return nil, err
	}
	return out, nil
}

// LogContext is a session's log up to a point and the context its working
// set gave there (ContextAt).
type LogContext struct {
	// Session is the session as read.
	Session *store.Session
	// Entries are the log's entries before At (all of them when At is 0),
	// and Produced the entry at At (nil when At is 0 or past the log).
	Entries  []store.Entry
	Produced *store.Entry
	// WorkingSet is the working set those entries give (store.WorkingSet).
	WorkingSet []agentmem.Step
	// Context is the working set fitted to the request's budget, as a
	// memory restored from it renders it; nil when the pinned steps do
	// not fit (ContextAt then returns the *agentmem.BudgetError too).
	Context *agentmem.Context
	// Format and Counter are the rendering used; Fit the budget fitted to.
	Format  agentmem.Format
	Counter tokenizer.Counter
	Fit     int
}

// ContextAt returns the context a session's working set gave as of log
// sequence number at (before the entry at), or now when at is 0. The log is
// read up to there. The working set it gives is restored into a memory as a
// bound memory loads it (store.WorkingSet), and fitted as Context fits. The
// cache is not used, since it holds only the present. When the
// pinned steps do not fit the budget, it returns the LogContext without
// a Context and the *agentmem.BudgetError.
func (s *Service) ContextAt(ctx context.Context, req ContextRequest, at int64) (*LogContext, error) {
	if at < 0 {
		return nil, &agentmem.InvalidError{Field: "at", Reason: "is negative"}
	}
	if _, _, _, err := s.rendering(&req); err != nil { // refused before the read
		return nil, err
	}
	rr := store.ReadRequest{Tenant: req.Tenant, SessionID: req.SessionID}
	if at > 0 {
		rr.Limit = int(at) // the entries before at, and at itself
	}
	resp, err := s.st.Read(ctx, rr)
	if err != nil {
		return nil, err
	}
	entries := resp.Entries
	var produced *store.Entry
	if at > 0 {
		for i, e := range resp.Entries {
			if e.Seq >= at {
				if e.Seq == at {
					produced = &resp.Entries[i]
				}
				entries = resp.Entries[:i]
				break
			}
		}
	}
	lc, err := s.ContextOfLog(ctx, resp.Session, entries, req)
	if lc != nil {
		lc.Produced = produced
	}
	return lc, err
}

// ContextOfLog fits the working set that a log's entries give as Context
// fits it, for a caller that has the log already. The entries are a prefix
// of a session's log, in order, as read (store.WorkingSet). It restores
// them into a memory as a bound memory loads them, pinning what sess pins
// (store.Session.EffectivePinning; nil: the default pinning). req's
// Tenant and SessionID are not used but in errors; the LogContext's
// Session is sess. When the pinned steps do not fit the budget, it
// returns the LogContext without a Context and the *agentmem.BudgetError.
func (s *Service) ContextOfLog(ctx context.Context, sess *store.Session, entries []store.Entry, req ContextRequest) (*LogContext, error) {
	format, counter, fit, err := s.rendering(&req)
	if err != nil {
		return nil, err
	}
	lc := &LogContext{Session: sess, Entries: entries, Format: format, Counter: counter, Fit: fit}
	lc.WorkingSet = store.WorkingSet(entries)
	next := 0
	for _, e := range entries {
		next = max(next, int(e.Seq)+1)
	}
	pin := agentmem.DefaultPinning
	if sess != nil {
		pin = sess.EffectivePinning()
	}
	m := agentmem.New(agentmem.Options{Format: format, Counter: counter, Pinning: &pin, Policy: &agentmem.Policy{}})
	if err := m.Restore(&agentmem.Snapshot{Version: agentmem.SnapshotVersion, NextNumber: next, Steps: lc.WorkingSet}); err != nil {
		// A stored log that does not restore is a failure, not a bad
		// request: %v keeps ErrInvalid from making it one.
		return nil, fmt.Errorf("sessions: session %s: the log's working set does not restore: %v", req.SessionID, err)
	}
	lc.Context, err = m.Context(ctx, agentmem.ContextOptions{Budget: fit, Format: format, Counter: counter, TruncateToFill: req.TruncateToFill})
	if err != nil {
		lc.Context = nil
		return lc, err
	}
	return lc, nil
}

// History is a session's working set as the context cache holds it
// (History).
type History struct {
	// Steps are copies of the working set's steps, in order, pending
	// actions included.
	Steps []agentmem.Step
	// LastSeq is the log sequence number the steps reflect at least: an
	// append conditional on it (ExpectedLastSeq) fails if another writer
	// got in since.
	LastSeq int64
	// UserID is the session's user.
	UserID string
	// Omitted, when the request asked for the ends only, is the number of
	// steps left out between the first ones and the last ones of Steps
	// (at Steps[Head]); 0 when Steps is the whole working set.
	Omitted, Head int
}

// HistoryRequest asks for a session's working set (History).
type HistoryRequest struct {
	Tenant    string
	SessionID string
	// Head and Tail, when either is positive, ask for the first Head and
	// the last Tail steps only, without copying those between: what
	// recognising a request of new messages looks at. Both 0: every step.
	Head, Tail int
}

// History returns a session's working set from the service's cache of
// session replicas, brought up to date with the log first, as Context does.
// A writer that recognises what a session already holds compares with it,
// such as the proxy's requests resending their history. So it need not read
// the whole working set from the store on every call.
func (s *Service) History(ctx context.Context, req HistoryRequest) (*History, error) {
	st, err := s.cache.get(ctx, req.Tenant, req.SessionID, s.defaultForm())
	if err != nil {
		return nil, err
	}
	if req.Head <= 0 && req.Tail <= 0 {
		return &History{Steps: st.rep.Steps(), LastSeq: st.seq, UserID: st.user}, nil
	}
	first, last, omitted := st.rep.StepEnds(max(req.Head, 0), max(req.Tail, 0))
	return &History{Steps: append(first, last...), Head: len(first), Omitted: omitted, LastSeq: st.seq, UserID: st.user}, nil
}
