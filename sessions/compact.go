package sessions

import (
	"context"
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/summarize"
)

// Plan is a compaction to run (Compact): a strategy (api.Strategy*) and
// its parameters.
type Plan struct {
	Strategy string
	// N: keep_last_n keeps the pinned steps and the newest N others.
	N int
	// Budget: token_budget keeps the pinned steps and the newest that fit.
	Budget int
	// KeepLastN and MaxLength: prune_old_observations truncates the tool
	// results of all but the newest KeepLastN actions to MaxLength bytes.
	KeepLastN, MaxLength int
	// KeepRecent and Summarizer: summarize replaces all but the newest
	// KeepRecent unpinned steps with a summary by the summarizer
	// (api.SummarizerExtractive or api.SummarizerLLM).
	KeepRecent int
	Summarizer string
}

// SummarizerError is the error of a compaction whose summarizer failed:
// nothing was written, and the call may be retried.
type SummarizerError struct {
	// Summarizer names it (Plan.Summarizer).
	Summarizer string
	Err        error
}

func (e *SummarizerError) Error() string { return "summarizer " + e.Summarizer + ": " + e.Err.Error() }

// Unwrap returns the summarizer's error.
func (e *SummarizerError) Unwrap() error { return e.Err }

// CompactRequest runs a compaction on a session of a tenant (Compact).
type CompactRequest struct {
	Tenant    string
	SessionID string
	Plan
}

// Compacted is what a compaction did.
type Compacted struct {
	*agentmem.Compaction
	// LastSeq is the session's last sequence number after it.
	LastSeq int64
}

// Compact runs a compaction on a session of a tenant. It runs on a memory
// bound to the session (store.OpenTenantMemory). So it is recorded in the
// log through the bound memory's journal, atomically and only if no other
// writer appended in between. If one did, the memory is reloaded and the
// compaction planned and tried again, within the service's policy (see
// Retry; then a *store.ContendedError). Each try is in the session's turn
// unless it waits for the LLM summarizer. A failure of the summarizer is a
// *SummarizerError; an unknown strategy or summarizer an
// *agentmem.InvalidError.
func (s *Service) Compact(ctx context.Context, req CompactRequest) (*Compacted, error) {
	tenant, id, p := req.Tenant, req.SessionID, req.Plan
	var sum agentmem.Summarizer
	switch p.Strategy {
	case api.StrategyKeepLastN, api.StrategyTokenBudget, api.StrategyPruneOldObservations:
	case api.StrategySummarize:
		var err error
		if sum, err = s.summarizer(p.Summarizer); err != nil {
			return nil, err
		}
	default:
		return nil, &agentmem.InvalidError{Field: "strategy", Reason: fmt.Sprintf("unknown strategy %q", p.Strategy)}
	}
	// The compaction keeps what the session pins (fixed at its creation).
	sess, err := s.st.Get(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	pin := sess.EffectivePinning()
	b, err := store.OpenTenantMemory(ctx, s.st, tenant, id, agentmem.Options{Counter: s.counter, Clock: s.clock, Pinning: &pin, Policy: &agentmem.Policy{}})
	if err != nil {
		return nil, err
	}
	// b is not closed: Close would delete a single-run session, and a
	// bound memory holds nothing but memory.
	var comp *agentmem.Compaction
	err = s.compactRetry(tenant, id, sum).Do(ctx, "compact", func(attempt int) error {
		if attempt > 1 {
			// Another writer got in between: catch up with the log.
			if err := b.Reload(ctx); err != nil {
				return err
			}
		}
		var err error
		switch p.Strategy {
		case api.StrategyKeepLastN:
			comp, err = b.Prune(ctx, agentmem.KeepLastN(p.N))
		case api.StrategyTokenBudget:
			comp, err = b.Prune(ctx, agentmem.TokenBudget(p.Budget))
		case api.StrategyPruneOldObservations:
			comp, err = b.Prune(ctx, agentmem.PruneOldObservations(p.KeepLastN, p.MaxLength))
		case api.StrategySummarize:
			comp, err = b.Summarize(ctx, sum, p.KeepRecent)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Compacted{Compaction: comp, LastSeq: b.Session().LastSeq}, nil
}

// compactRetry returns the retry policy of a compaction whose summarizer
// is sum (nil: none): its tries take the session's turn (Retry), unless
// they wait for an LLM, which would hold up the session's other writes
// for as long; those compete with them.
func (s *Service) compactRetry(tenant, id string, sum agentmem.Summarizer) *store.RetryPolicy {
	if t, ok := sum.(tagSummarizer); ok && t.name == api.SummarizerLLM {
		return s.retry
	}
	return s.retryIn(tenant, id)
}

// summarizer returns the summarizer a compaction names (empty is the
// extractive one), whose errors are *SummarizerError; an unknown one, or
// the LLM one on a service without it, is an *agentmem.InvalidError.
func (s *Service) summarizer(name string) (agentmem.Summarizer, error) {
	var sum agentmem.Summarizer
	switch name {
	case api.SummarizerExtractive, "":
		sum, name = summarize.Extractive{Counter: s.counter}, api.SummarizerExtractive
	case api.SummarizerLLM:
		if s.cfg.Summarizer == nil {
			return nil, &agentmem.InvalidError{Field: "summarizer", Reason: `"llm" needs an LLM summarizer, and this server has none configured`}
		}
		sum = s.cfg.Summarizer
	default:
		return nil, &agentmem.InvalidError{Field: "summarizer", Reason: fmt.Sprintf("unknown summarizer %q", name)}
	}
	return tagSummarizer{name, sum}, nil
}

// tagSummarizer marks the errors of a summarizer, to tell them from the
// store's.
type tagSummarizer struct {
	name string
	s    agentmem.Summarizer
}

func (t tagSummarizer) Summarize(ctx context.Context, req agentmem.SummaryRequest) (string, error) {
	text, err := t.s.Summarize(ctx, req)
	if err != nil && ctx.Err() == nil {
		return "", &SummarizerError{Summarizer: t.name, Err: err}
	}
	return text, err
}

// AutoCompact compacts a session whose settings ask for automatic
// compaction (store.Session.AutoCompact) if its working set costs more
// than AutoCompact.MaxTokens, summarizing the oldest whole turns down to
// AutoCompact.TargetTokens, and reports whether it did. The automatic
// compactor (package views/autocompact) calls it for the sessions the
// log says were appended to.
func (s *Service) AutoCompact(ctx context.Context, sess *store.Session) (bool, error) {
	if sess.AutoCompact == nil {
		return false, nil
	}
	ac := sess.AutoCompact.WithDefaults(s.defaultSummarizer())
	// What the working set costs now, from the context cache: a lookup
	// of the counts of its steps, rendered once.
	st, err := s.cache.get(ctx, sess.Tenant, sess.ID, s.defaultForm())
	if err != nil {
		return false, err
	}
	if st.rep.Tokens() <= ac.MaxTokens {
		return false, nil
	}
	sum, err := s.summarizer(ac.Summarizer)
	if err != nil {
		return false, err
	}
	// The summary takes at most a quarter of the target, so that the
	// turns kept have the rest.
	opts := agentmem.SummarizeOptions{KeepRecent: ac.KeepRecent, MaxSummaryTokens: max(ac.TargetTokens/4, 1)}
	policy := &agentmem.Policy{MaxTokens: ac.MaxTokens, TargetTokens: ac.TargetTokens, Strategy: agentmem.Summarize(sum, opts)}
	pin := sess.EffectivePinning()
	changed := false
	err = s.compactRetry(sess.Tenant, sess.ID, sum).Do(ctx, "auto_compact", func(int) error {
		b, err := store.OpenTenantMemory(ctx, s.st, sess.Tenant, sess.ID, agentmem.Options{Counter: s.counter, Clock: s.clock, Pinning: &pin, Policy: policy})
		if err != nil {
			return err
		}
		comp, err := b.ApplyPolicy(ctx)
		if err == nil {
			changed = comp.Changed()
		}
		return err
	})
	return changed, err
}
