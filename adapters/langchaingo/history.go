package langchaingo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/client/remote"
	"github.com/agentmem/agentmem/store"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"
)

// replaceAttempts bounds how many times Clear and SetMessages try their
// conditional append when other writers of the session get in first.
const replaceAttempts = 10

// ChatMessageHistory is a langchaingo schema.ChatMessageHistory over an
// agentmem session, on an agentmem server (through a *client.Client).
// Every message is stored as it is added, in one request; the first also
// creates the session. The session's log keeps everything, and Messages
// returns the session's working set. See the package documentation for how
// each type of message is stored.
//
// A ChatMessageHistory is safe for concurrent use; several processes may
// share a session.
type ChatMessageHistory struct {
	// st is the client as a store (its errors are the store's).
	st        *store.Store
	remote    *remote.Store // st's driver, for AppendMessages
	sessionID string
	create    store.CreateRequest
}

var _ schema.ChatMessageHistory = (*ChatMessageHistory)(nil)

// Option configures a ChatMessageHistory.
type Option func(*ChatMessageHistory)

// WithSession sets the attributes of the session the history creates when
// its first message is added to a session that does not exist. They are
// its user, agent, metadata, retention and settings. Its ID is the
// history's. Without it the session is created with none. Either way a
// session created without a pinning gets agentmem.ChatPinning: a chat's
// first question is one among many, not a task to pin for ever.
func WithSession(req store.CreateRequest) Option {
	return func(h *ChatMessageHistory) { h.create = req }
}

// NewChatMessageHistory returns the history of the session sessionID on
// the server c talks to. The session need not exist: reading it gives no
// messages until the first is added, which creates it (see WithSession).
// An invalid session ID is an error wrapping agentmem.ErrInvalid.
func NewChatMessageHistory(c *client.Client, sessionID string, opts ...Option) (*ChatMessageHistory, error) {
	if c == nil {
		return nil, errors.New("agentmem langchaingo: NewChatMessageHistory needs a client")
	}
	if err := store.ValidateID(sessionID); err != nil {
		return nil, err
	}
	d := remote.NewDriver(c)
	h := &ChatMessageHistory{st: store.New(d), remote: d, sessionID: sessionID}
	for _, o := range opts {
		o(h)
	}
	h.create.ID = sessionID
	if h.create.Pinning == nil {
		p := agentmem.ChatPinning
		h.create.Pinning = &p
	}
	return h, nil
}

// SessionID returns the ID of the history's session.
func (h *ChatMessageHistory) SessionID() string { return h.sessionID }

// AddUserMessage adds a human message.
func (h *ChatMessageHistory) AddUserMessage(ctx context.Context, text string) error {
	return h.AddMessage(ctx, llms.HumanChatMessage{Content: text})
}

// AddAIMessage adds an AI message.
func (h *ChatMessageHistory) AddAIMessage(ctx context.Context, text string) error {
	return h.AddMessage(ctx, llms.AIChatMessage{Content: text})
}

// AddMessage adds a message of any langchaingo type. A tool message must
// answer a tool call of an AI message added before it and not answered yet
// (ErrInvalid otherwise). One that repeats the result its call has is a
// retry and stores nothing; one that contradicts it is refused
// (agentmem.ErrConflict). A message of a type langchaingo does not define
// is an error wrapping llms.ErrUnexpectedChatMessageType.
func (h *ChatMessageHistory) AddMessage(ctx context.Context, message llms.ChatMessage) error {
	m, err := toMessage(message)
	if err != nil {
		return err
	}
	if m.Role == agentmem.RoleTool {
		// The server completes the action that made the call, in its
		// working set: no read of it here.
		_, err := h.remote.AppendMessages(ctx, h.sessionID, []agentmem.Message{m}, client.AppendOptions{})
		return err
	}
	// Any other message is a step of its own; an AI message's calls wait,
	// pending, for their results. It is folded here so that it keeps its
	// metadata, and appended as it is.
	f, err := agentmem.FoldMessages(nil, []agentmem.Message{m}, agentmem.FoldOptions{KeepPending: true, NewID: agentmem.NewID, Now: time.Now})
	if err != nil {
		return err
	}
	req := store.AppendRequest{SessionID: h.sessionID, Steps: f.Steps}
	_, err = h.st.Append(ctx, req)
	if errors.Is(err, agentmem.ErrNotFound) {
		if err := h.createSession(ctx); err != nil {
			return err
		}
		_, err = h.st.Append(ctx, req)
	}
	return err
}

// Messages returns the messages of the session's working set, in order.
// That is what the session holds since it was created or last cleared,
// less what a compaction of the server took out; the log keeps all of it.
// A session that does not exist has none.
func (h *ChatMessageHistory) Messages(ctx context.Context) ([]llms.ChatMessage, error) {
	ws, err := h.st.Read(ctx, store.ReadRequest{SessionID: h.sessionID, WorkingSet: true})
	if errors.Is(err, agentmem.ErrNotFound) {
		return []llms.ChatMessage{}, nil
	}
	if err != nil {
		return nil, err
	}
	return fromSteps(ws.Steps), nil
}

// Clear empties the session's working set. Messages and the contexts the
// server renders have nothing of it after. The session's log keeps every
// message, as after any compaction, with its attributes and branches. To
// erase the messages, delete the session (client.Client.DeleteSession).
func (h *ChatMessageHistory) Clear(ctx context.Context) error {
	return h.replace(ctx, nil)
}

// SetMessages replaces the session's working set by messages, atomically:
// a reader sees the old messages or the new ones. A tool message among
// them must answer a call of an AI message before it in the list. As with
// Clear, the log keeps the messages replaced.
func (h *ChatMessageHistory) SetMessages(ctx context.Context, messages []llms.ChatMessage) error {
	msgs := make([]agentmem.Message, len(messages))
	for i, lm := range messages {
		m, err := toMessage(lm)
		if err != nil {
			return fmt.Errorf("messages[%d]: %w", i, err)
		}
		msgs[i] = m
	}
	f, err := agentmem.FoldMessages(nil, msgs, agentmem.FoldOptions{KeepPending: true, NewID: agentmem.NewID})
	if err != nil {
		return err
	}
	return h.replace(ctx, f.Steps)
}

// replace makes steps the session's working set, in one append conditional
// on the working set it read: the new steps and a compaction that keeps
// only them. Another writer getting in between makes it read again and
// retry, after a random wait that grows with each attempt. So writers
// replacing one history at once spread out rather than collide again.
func (h *ChatMessageHistory) replace(ctx context.Context, steps []agentmem.Step) error {
	for attempt := 1; ; attempt++ {
		ws, err := h.st.Read(ctx, store.ReadRequest{SessionID: h.sessionID, WorkingSet: true})
		if errors.Is(err, agentmem.ErrNotFound) {
			if len(steps) == 0 {
				return nil // nothing to clear
			}
			if err := h.createSession(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if len(ws.Steps) == 0 && len(steps) == 0 {
			return nil
		}
		rec := &store.CompactionRecord{Working: make([]int64, len(steps)), Removed: make([]int64, len(ws.Steps))}
		for i := range steps {
			rec.Working[i] = store.NewStepRef(i)
		}
		for i, s := range ws.Steps {
			rec.Removed[i] = int64(s.Info().Number)
		}
		last := ws.Session.LastSeq
		_, err = h.st.Append(ctx, store.AppendRequest{SessionID: h.sessionID, Steps: steps, Compaction: rec, ExpectedLastSeq: &last})
		if err == nil {
			return nil
		}
		if !store.LostRace(err) || attempt >= replaceAttempts {
			return err
		}
		if err := store.Backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

// createSession creates the history's session; one created meanwhile by
// another writer will do.
func (h *ChatMessageHistory) createSession(ctx context.Context) error {
	_, err := h.st.Create(ctx, h.create)
	if errors.Is(err, agentmem.ErrConflict) {
		return nil
	}
	return err
}
