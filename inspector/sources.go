package inspector

import (
	"context"
	"time"
)

// FactsSource lists a user's facts for the facts page. The facts package
// (or an adapter over it) implements it; the inspector needs nothing else
// from it.
type FactsSource interface {
	// List returns the facts of user in tenant, superseded ones included,
	// in any order. A tenant or user with no facts is an empty list, not
	// an error. Errors wrapping agentmem.ErrInvalid are shown as a bad
	// request; any other error as an internal one.
	List(ctx context.Context, tenant, user string) ([]FactView, error)
}

// FactView is what the facts page shows of one fact.
type FactView struct {
	// ID identifies the fact; it may be empty.
	ID string
	// Text is the fact itself.
	Text string
	// Confidence is the fact's base confidence, in [0, 1]: what it was
	// when it was last reinforced, before decay.
	Confidence float64
	// CreatedAt is when the fact was first recorded.
	CreatedAt time.Time
	// ReinforcedAt is when the fact was last reinforced; zero means never
	// (the page then treats CreatedAt as the last reinforcement).
	ReinforcedAt time.Time
	// Reinforcements counts how many times the fact was seen again after
	// it was first recorded.
	Reinforcements int
	// Superseded reports that a newer fact replaced this one; it is kept for
	// history. SupersededBy optionally names or quotes the newer one: its
	// ID, when the page links it to that fact's row, or its text.
	// SupersededAt is when it was replaced, if the source knows.
	Superseded   bool
	SupersededBy string
	SupersededAt time.Time
	// ValidFrom and ValidTo are when the fact was true in the world, if
	// the source knows: zero ValidFrom means unknown, zero ValidTo that
	// it still holds. A superseded fact held until its successor began.
	ValidFrom, ValidTo time.Time
	// EffectiveAt returns the fact's confidence at time t, decay applied,
	// for t from CreatedAt on. The chart samples it from CreatedAt to a
	// little past now. Nil means the fact does not decay: Confidence at
	// every time.
	EffectiveAt func(t time.Time) float64
}

// FactHistorySource is a FactsSource that also keeps what happened to
// each fact: the facts page then links every fact to its history. The
// source of FactsFrom is one.
type FactHistorySource interface {
	FactsSource
	// Changes returns the changes of user's fact id, oldest first: its
	// addition, edits, supersession and forgetting. A fact the user has
	// no change of is an error wrapping agentmem.ErrNotFound.
	Changes(ctx context.Context, tenant, user, id string) ([]FactChangeView, error)
}

// FactChangeView is one change of a fact's history.
type FactChangeView struct {
	// Action is what happened: "added", "updated", "superseded" or
	// "forgotten" (facts.Action).
	Action string
	// By is who did it, Reason why, if given; At when.
	By, Reason string
	At         time.Time
	// Successor is, when the fact was superseded, the ID of the fact
	// that replaced it.
	Successor string
	// Before and After are what the fact said before and after the
	// change, when the history keeps them (a forgotten fact's are
	// erased).
	Before, After *FactStateView
}

// FactStateView is what a fact said at one point of its history.
type FactStateView struct {
	Text               string
	Confidence         float64
	ValidFrom, ValidTo time.Time
}

// RecallSource searches the recall index for the recall page. The recall
// package (or an adapter over it) implements it.
type RecallSource interface {
	// Search returns at most k hits for query among tenant's entries, best
	// first, within scope. scope is "session:ID", "user:ID" or "agent:ID"
	// (as recall.ParseScope reads it), or "" for the whole tenant. Errors
	// wrapping agentmem.ErrInvalid are shown as a bad request; any other
	// error as an internal one.
	Search(ctx context.Context, tenant, query, scope string, k int) ([]HitView, error)
}

// HitView is what the recall page shows of one hit.
type HitView struct {
	// ID identifies the recalled entry.
	ID string
	// Text is the entry's text.
	Text string
	// Score is the hit's score; higher is better.
	Score float64
	// SessionID and Seq, when set, name the session and step the entry
	// came from; the page links to them.
	SessionID string
	Seq       int64
	// UserID is the user the entry belongs to, if any.
	UserID string
	// Time is when the entry was recorded, if known.
	Time time.Time
}
