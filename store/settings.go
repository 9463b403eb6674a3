package store

import "github.com/agentmem/agentmem"

// Summarizers of automatic compaction (AutoCompact.Summarizer), the
// summarize strategy's names on the wire.
const (
	// SummarizerExtractive writes summaries from the steps' own
	// sentences, with no model call.
	SummarizerExtractive = "extractive"
	// SummarizerLLM asks the server's language model for each summary.
	SummarizerLLM = "llm"
)

// Bounds of AutoCompact, checked by ValidateAutoCompact.
const (
	// MaxAutoCompactTokens bounds MaxTokens: far above any model's
	// context window, low enough for every client's integers.
	MaxAutoCompactTokens = 1 << 30
	// MaxAutoCompactKeepRecent bounds KeepRecent.
	MaxAutoCompactKeepRecent = 1 << 20
)

// AutoCompact is a session's automatic compaction: when its working set
// costs more than MaxTokens, the oldest unpinned whole turns are replaced
// by a summary until it costs TargetTokens or less, off the request path.
// A target below the trigger makes compaction run once per
// MaxTokens - TargetTokens tokens of growth rather than on every step.
//
// Zero fields but MaxTokens take defaults (see WithDefaults); a session
// created through sessions.Service stores them filled in, so that what
// Get returns is what applies.
type AutoCompact struct {
	// MaxTokens is the trigger: the working set's cost (its full
	// rendering, in the default format and tokenizer) above which it is
	// compacted. Required, from 1 to MaxAutoCompactTokens.
	MaxTokens int `json:"max_tokens"`
	// TargetTokens is what a compaction brings the working set down to,
	// below MaxTokens; 0 means half of MaxTokens.
	TargetTokens int `json:"target_tokens,omitempty"`
	// KeepRecent is the number of newest unpinned steps kept as they are;
	// 0 means agentmem.DefaultKeepRecent.
	KeepRecent int `json:"keep_recent,omitempty"`
	// Summarizer is SummarizerExtractive or SummarizerLLM; empty leaves
	// the choice to whoever creates the session (sessions.Service picks
	// the LLM summarizer when it has one, the extractive one otherwise).
	Summarizer string `json:"summarizer,omitempty"`
}

// Target returns the token count a compaction brings the working set
// down to: TargetTokens, or half of MaxTokens when it is 0.
func (a AutoCompact) Target() int {
	if a.TargetTokens > 0 {
		return a.TargetTokens
	}
	return a.MaxTokens / 2
}

// WithDefaults returns a with its zero fields filled in: TargetTokens
// (Target), KeepRecent (agentmem.DefaultKeepRecent) and Summarizer
// (summarizer, the creator's default).
func (a AutoCompact) WithDefaults(summarizer string) AutoCompact {
	a.TargetTokens = a.Target()
	if a.KeepRecent == 0 {
		a.KeepRecent = agentmem.DefaultKeepRecent
	}
	if a.Summarizer == "" {
		a.Summarizer = summarizer
	}
	return a
}

// ValidateAutoCompact checks automatic compaction settings: MaxTokens
// from 1 to MaxAutoCompactTokens, TargetTokens from 0 (the default) to
// below MaxTokens, KeepRecent from 0 (the default) to
// MaxAutoCompactKeepRecent, and an empty or known Summarizer. nil (no
// automatic compaction) is valid. Errors are *agentmem.InvalidError
// naming the field ("auto_compact.max_tokens", ...).
func ValidateAutoCompact(a *AutoCompact) error {
	if a == nil {
		return nil
	}
	switch {
	case a.MaxTokens < 1 || a.MaxTokens > MaxAutoCompactTokens:
		return invalid("auto_compact.max_tokens", "is %d; it must be from 1 to %d", a.MaxTokens, MaxAutoCompactTokens)
	case a.TargetTokens < 0:
		return invalid("auto_compact.target_tokens", "is negative")
	case a.TargetTokens >= a.MaxTokens:
		return invalid("auto_compact.target_tokens", "is %d; it must be below max_tokens (%d), or 0 for half of it", a.TargetTokens, a.MaxTokens)
	case a.KeepRecent < 0 || a.KeepRecent > MaxAutoCompactKeepRecent:
		return invalid("auto_compact.keep_recent", "is %d; it must be from 0 (the default, %d) to %d", a.KeepRecent, agentmem.DefaultKeepRecent, MaxAutoCompactKeepRecent)
	}
	switch a.Summarizer {
	case "", SummarizerExtractive, SummarizerLLM:
		return nil
	}
	return invalid("auto_compact.summarizer", "unknown summarizer %q (want %q or %q)", a.Summarizer, SummarizerExtractive, SummarizerLLM)
}

// EffectivePinning returns the pinning the session's contexts use: its
// own, or agentmem.DefaultPinning for a session that has none (created
// without one, or before sessions had settings).
func (s *Session) EffectivePinning() agentmem.Pinning {
	if s.Pinning != nil {
		return *s.Pinning
	}
	return agentmem.DefaultPinning
}

// cloneSettings returns copies of a session's settings, so that a store
// never shares them with its callers.
func cloneSettings(p *agentmem.Pinning, a *AutoCompact) (*agentmem.Pinning, *AutoCompact) {
	if p != nil {
		c := *p
		p = &c
	}
	if a != nil {
		c := *a
		a = &c
	}
	return p, a
}

// cloneBool returns a copy of a setting that may be absent (nil).
func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	c := *b
	return &c
}
