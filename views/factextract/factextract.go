// Package factextract is fact extraction as a view of the log. It follows
// the store's change feed (package views). A turn is the user's messages
// and the assistant's answer. For every turn of a session with a user, it
// asks an extractor (an LLM, facts.LLMExtractor) what the turn teaches
// about the user. It applies the extractor's decisions to the user's
// facts (facts.Memory.Extract).
package factextract

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views"
)

// Consumer is the name of the extraction's cursor in the store's feed.
const Consumer = "fact-extract"

// Settle is the Learner's views.Options.Settle when it is 0. Extraction
// is on no request's path and waits for a model anyway, so it lets
// appends gather for a second: a turn's user message and answer are
// often appended a moment apart.
const Settle = time.Second

// Window is the most log entries read back from a turn's answer to find
// the user messages it answers.
const Window = 64

// Learner extracts facts, in the background, from the turns of the
// sessions that have a user (store.Session.UserID) and that Config.Select
// accepts. It follows the store's change feed. An appended step ends a
// turn when it is an assistant message that calls no tool: a message or
// final answer step. The turn is that answer and the user messages since
// the previous turn's end, within Window entries. Its facts are the
// session's user's, in the session's tenant, with the session and the
// answer's sequence number as their source.
//
// Nothing of this is on a request's path. A model outage (the model
// cannot be reached, answers 5xx or 429) or a store that is unavailable
// fails the batch. The follower reads the batch again after a backoff (up
// to 5s), so turns are delayed, never lost. This process does not extract
// again the turns of the batch it extracted already. A turn that can
// never be extracted (the model's output is rejected twice, or it refuses
// the request as malformed) is reported (Options.OnError) and skipped.
//
// Of the Learners of every process sharing a store, one extracts. Its
// follower is Exclusive (views.Options): it extracts while it holds the
// lease on its consumer's name. The others wait, and take over from its
// cursor when it stops or crashes (after the lease's TTL). The cursor is
// saved in the feed after every batch, only while the lease is held. A
// holder that crashes, or loses its lease, between applying a batch and
// saving its cursor leaves that batch to be read again by the next.
//
// Each turn is still extracted once (facts.Turn.Once), named by its
// session and its answer's sequence number. What the turn taught and the
// record that it was extracted are written together, in the user's
// facts. A turn read again that has its record is skipped without a model
// call. Of two extractions of a turn that race (a lease
// lost while its holder's extraction is under way), one is applied.
type Learner struct {
	*views.Follower
	cfg Config
	// done holds the turns extracted in the batch being applied, so that
	// a batch retried after a failure does not extract them again.
	done map[turnKey]bool
}

// turnKey names a turn: its session and its answer's sequence number.
type turnKey struct {
	tenant, session string
	seq             int64
}

// Config configures a Learner.
type Config struct {
	// Store is the sessions' store, to read a turn's user messages.
	// Required.
	Store *store.Store
	// Facts is where the facts go; required.
	Facts *facts.Memory
	// Extractor decides what to remember; required.
	Extractor facts.Extractor
	// Select, when set, says which sessions with a user are extracted;
	// nil means all of them.
	Select func(*store.Session) bool
	// Follow configures the follower; a zero Consumer is Consumer, a zero
	// Settle Settle, SaveEvery is always after every batch, and the
	// follower is always Exclusive (LeaseTTL, LeasePoll, Holder and
	// OnLease apply).
	Follow views.Options
}

// New returns a Learner that follows feed, the change feed of
// cfg.Store, which must have leases (store.Leaser, as every backend's
// does). It does nothing until Run; Start runs one.
func New(feed store.Feed, cfg Config) (*Learner, error) {
	if cfg.Store == nil || cfg.Facts == nil || cfg.Extractor == nil || feed == nil {
		return nil, errors.New("factextract: a store, its feed, a facts memory and an extractor are required")
	}
	if _, ok := store.LeaserOf(feed); !ok {
		return nil, fmt.Errorf("factextract: the feed %T has no leases (store.Leaser): every process sharing the store would extract each turn", feed)
	}
	opts := cfg.Follow.WithDefaults(Consumer, Settle)
	// A turn extracted costs a model call: the cursor is saved after
	// every batch, so that a restart repeats none, and one process
	// extracts at a time.
	opts.SaveEvery = -1
	opts.Exclusive = true
	l := &Learner{cfg: cfg, done: map[turnKey]bool{}}
	l.Follower = views.NewFollower(feed, l.apply, opts)
	return l, nil
}

// Start runs a Learner over the service's store and feed (nil: the
// store's own, if it is a store.Feed) until the returned stop is called;
// the service's appends wake it. Without a feed it returns nil and a stop
// that does nothing. Stop waits for the extraction in flight, which its
// context cancels, saves the cursor and releases the lease: a turn whose
// extraction is cut short is extracted again by the next follower, from
// the cursor saved.
func Start(svc *sessions.Service, feed store.Feed, cfg Config) (*Learner, func(), error) {
	feed, ok := views.FeedOf(feed, svc.Store())
	if !ok {
		return nil, func() {}, nil
	}
	if cfg.Store == nil {
		cfg.Store = svc.Store()
	}
	l, err := New(feed, cfg)
	if err != nil {
		return nil, nil, err
	}
	return l, views.Start(l, svc), nil
}

// apply extracts the turns that a batch of changes ends, in order.
func (l *Learner) apply(ctx context.Context, changes []store.Change, _ store.FeedCursor) (int, error) {
	written := 0
	for _, ch := range changes {
		sess := ch.Session
		if ch.Kind != store.ChangeAppend || sess == nil || sess.UserID == "" || ch.Entry == nil ||
			ch.Entry.Kind != store.StepEntry || !endsTurn(ch.Entry.Step) {
			continue
		}
		if l.cfg.Select != nil && !l.cfg.Select(sess) {
			continue
		}
		key := turnKey{sess.Tenant, sess.ID, ch.Entry.Seq}
		if l.done[key] {
			continue
		}
		n, err := l.extract(ctx, sess, ch.Entry)
		if err != nil {
			if retry(ctx, err) {
				return written, fmt.Errorf("fact extraction: session %q, turn ending at step %d: %w", sess.ID, ch.Entry.Seq, err)
			}
			l.Report(fmt.Errorf("fact extraction: skipping the turn of session %q ending at step %d: %w", sess.ID, ch.Entry.Seq, err))
		}
		l.done[key] = true
		written += n
	}
	clear(l.done) // the batch is applied: the cursor moves past it
	return written, nil
}

// extract learns from the turn that answer ends and returns the number of
// facts written.
func (l *Learner) extract(ctx context.Context, sess *store.Session, answer *store.Entry) (int, error) {
	if answer.Seq <= 1 {
		return 0, nil // nothing before it
	}
	after := max(answer.Seq-Window-1, 0)
	resp, err := l.cfg.Store.Read(ctx, store.ReadRequest{Tenant: sess.Tenant, SessionID: sess.ID, After: after, Limit: int(answer.Seq - after - 1)})
	if err != nil {
		if errors.Is(err, agentmem.ErrNotFound) {
			return 0, nil // deleted since
		}
		return 0, err
	}
	var user []agentmem.Message
	for i := len(resp.Entries) - 1; i >= 0; i-- {
		e := resp.Entries[i]
		if e.Kind != store.StepEntry || e.Step == nil || e.Seq >= answer.Seq {
			continue
		}
		if endsTurn(e.Step) {
			break
		}
		msgs := e.Step.Messages(agentmem.RenderOptions{})
		for j := len(msgs) - 1; j >= 0; j-- {
			if msgs[j].Role == agentmem.RoleUser {
				user = append(user, msgs[j])
			}
		}
	}
	if len(user) == 0 {
		return 0, nil // an answer to nothing the user said
	}
	turn := make([]agentmem.Message, 0, len(user)+1)
	for i := len(user) - 1; i >= 0; i-- {
		turn = append(turn, user[i])
	}
	turn = append(turn, answer.Step.Messages(agentmem.RenderOptions{})...)
	ex, err := l.cfg.Facts.Extract(ctx, l.cfg.Extractor, facts.Turn{
		Tenant: sess.Tenant, UserID: sess.UserID, Messages: turn,
		Source: facts.Source{SessionID: sess.ID, StepSeq: answer.Seq, Agent: sess.Agent}, Once: true,
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range ex.Results {
		if r.Outcome != facts.OutcomeIgnored {
			n++
		}
	}
	return n, nil
}

// endsTurn reports whether a step ends a turn: it renders as an assistant
// message with text that calls no tool.
func endsTurn(s agentmem.Step) bool {
	if s == nil {
		return false
	}
	msgs := s.Messages(agentmem.RenderOptions{})
	if len(msgs) == 0 {
		return false
	}
	last := msgs[len(msgs)-1]
	return last.Role == agentmem.RoleAssistant && len(last.ToolCalls) == 0 && last.Text() != ""
}

// retry reports whether a failed extraction may pass if tried again: the
// model or the store was unavailable, or the follower is stopping. A
// model that answered with output rejected twice, or refused the request
// itself as malformed, would fail the same way again.
func retry(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, agentmem.ErrUnavailable) {
		return true
	}
	var xe *facts.ExtractionError
	if !errors.As(err, &xe) {
		return false
	}
	var inv *agentmem.InvalidError
	if errors.As(xe.Err, &inv) {
		return false // the model answered, twice, with what could not be used
	}
	var ae *llm.APIError
	if errors.As(xe.Err, &ae) {
		switch ae.StatusCode {
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
			return false
		}
	}
	return true
}
