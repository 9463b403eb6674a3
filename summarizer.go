package agentmem

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/textcut"
	"github.com/agentmem/agentmem/tokenizer"
)

// A Summarizer condenses steps into a summary text: an LLM call, or an
// extractive summarizer that needs no model. The Summarize strategy and
// Memory.Summarize call it. Implementations must not modify the request.
type Summarizer interface {
	Summarize(ctx context.Context, req SummaryRequest) (string, error)
}

// SummaryRequest is what a Summarizer is asked to summarize.
type SummaryRequest struct {
	// Previous is an earlier summary to extend with Steps (a summary of
	// summaries), or, when Condense is set, the summary to shorten.
	Previous string
	// Steps are the steps to summarize, oldest first, excluding any
	// earlier summary step (whose text is in Previous). They are copies.
	Steps []Step
	// Messages are the same steps rendered in summary mode
	// (RenderOptions{SummaryMode: true}), in canonical form.
	Messages []Message
	// MaxTokens is the length the summary should keep within, in tokens
	// of the memory's counter.
	MaxTokens int
	// Condense asks for Previous to be rewritten shorter, within
	// MaxTokens; Steps and Messages are then empty.
	Condense bool
}

// SummarizerFunc adapts a function to the Summarizer interface.
type SummarizerFunc func(ctx context.Context, req SummaryRequest) (string, error)

// Summarize implements Summarizer.
func (f SummarizerFunc) Summarize(ctx context.Context, req SummaryRequest) (string, error) {
	return f(ctx, req)
}

// Defaults of SummarizeOptions (DefaultKeepRecent is MMROptions' too).
const (
	DefaultKeepRecent       = 6
	DefaultMaxSummaryTokens = 1000
)

// SummarizeOptions configures the Summarize strategy.
type SummarizeOptions struct {
	// KeepRecent is the number of newest unpinned steps kept verbatim.
	// Zero means DefaultKeepRecent (6); a negative value keeps none.
	KeepRecent int
	// Trigger: summarize when there are more than Trigger unpinned steps.
	// Zero means 2*KeepRecent; a negative value turns the count trigger
	// off (use it with TriggerTokens).
	Trigger int
	// TriggerTokens, when above zero, also triggers a summary when the
	// unpinned steps cost more than this many tokens (Env.Tokens).
	TriggerTokens int
	// MaxSummaryTokens bounds the summary text, counted with
	// Env.Counter. It is passed to the summarizer as
	// SummaryRequest.MaxTokens. Zero or less means DefaultMaxSummaryTokens.
	MaxSummaryTokens int
}

// summarizeConfig is SummarizeOptions with its defaults resolved.
type summarizeConfig struct {
	keepRecent    int
	trigger       int // < 0: off
	triggerTokens int // <= 0: off
	maxTokens     int
	always        bool // summarize whenever there is something to summarize
}

func (o SummarizeOptions) config() summarizeConfig {
	c := summarizeConfig{keepRecent: o.KeepRecent, trigger: o.Trigger, triggerTokens: o.TriggerTokens, maxTokens: o.MaxSummaryTokens}
	switch {
	case c.keepRecent == 0:
		c.keepRecent = DefaultKeepRecent
	case c.keepRecent < 0:
		c.keepRecent = 0
	}
	if c.trigger == 0 {
		c.trigger = 2 * c.keepRecent
	}
	if c.maxTokens <= 0 {
		c.maxTokens = DefaultMaxSummaryTokens
	}
	return c
}

// Summarize returns a strategy that replaces older steps with a summary.
// It is the seeds' messages_to_summarize → LLM → set_summary →
// trim_to_recent as one atomic step. It runs when there are more than
// opts.Trigger unpinned steps, or when they cost more than
// opts.TriggerTokens. The oldest steps are then replaced by one
// SummaryStep whose text s writes from them. The newest whole turns that
// hold opts.KeepRecent unpinned steps are kept verbatim (see
// ReplaceWithSummary and SummaryUnits). A turn is summarized whole or not
// at all, so the turns kept have their questions.
//
// Run by a Policy with a token limit, the strategy aims at the policy's
// target instead (Env.Target). It keeps the newest whole turns that fit in
// the target together with the pinned steps and a summary of up to
// opts.MaxSummaryTokens, and summarizes the rest. So the working set grows
// by the difference between the policy's limit and its target before the
// next summary. The newest unit (a turn, or an agent run's newest step) is
// always kept.
//
// Earlier summaries are not summarized again as steps. Their text is
// passed as SummaryRequest.Previous, so that the new summary extends it.
// The new summary covers what they covered and takes their place, pinned
// or not. If the summary text costs more than opts.MaxSummaryTokens, s is
// asked once to condense it: a request with only Previous, MaxTokens and
// Condense set. If it is still too long it is cut to fit, so the summary
// stays bounded however long the run.
//
// An error from s, or an empty summary, is returned by Apply, and a Prune
// that applies the strategy then leaves the memory unchanged. Under Prune
// the summarizer runs without holding the memory's lock.
func Summarize(s Summarizer, opts SummarizeOptions) Strategy {
	return summarizeStrategy(s, opts.config())
}

func summarizeStrategy(sum Summarizer, cfg summarizeConfig) Strategy {
	return StrategyFunc(func(ctx context.Context, steps []Step, env *Env) ([]Step, error) {
		if sum == nil {
			return nil, invalidf("summarizer", "is nil")
		}
		env, pinned := pinEnv(steps, env)
		units := SummaryUnits(steps, pinned)
		var replace []int
		if target := env.Target(); target > 0 {
			replace = cfg.toTarget(steps, pinned, units, env, target)
		} else {
			var unpinned []int
			for i := range steps {
				if !pinned[i] && steps[i].Kind() != KindSummary {
					unpinned = append(unpinned, i)
				}
			}
			if len(unpinned) <= cfg.keepRecent || !cfg.triggered(steps, unpinned, env) {
				return slices.Clone(steps), nil
			}
			replace = olderUnits(units, cfg.keepRecent, steps)
		}
		req := SummaryRequest{MaxTokens: cfg.maxTokens}
		var previous []string
		for _, i := range replace {
			if s, ok := steps[i].(*SummaryStep); ok {
				previous = append(previous, s.Summary)
				continue
			}
			req.Steps = append(req.Steps, CloneStep(steps[i]))
			req.Messages = append(req.Messages, steps[i].Messages(RenderOptions{SummaryMode: true})...)
		}
		if len(req.Steps) == 0 {
			return slices.Clone(steps), nil // only earlier summaries: nothing new to say
		}
		req.Previous = strings.Join(previous, "\n\n")
		text, err := summarizeBounded(ctx, sum, req, env.Counter())
		if err != nil {
			return nil, err
		}
		return replaceUnits(steps, replace, text), nil
	})
}

// toTarget returns, ascending, the indexes of the units to summarize. The
// pinned steps, a summary of at most c.maxTokens and the newest units kept
// must fit in target. It returns every unit but the newest that fit; the
// newest one is always kept.
func (c summarizeConfig) toTarget(steps []Step, pinned []bool, units [][]int, env *Env, target int) []int {
	used := ReplyPriming + c.maxTokens
	for i, s := range steps {
		if pinned[i] && s.Kind() != KindSummary {
			used += env.Tokens(s)
		}
	}
	k := len(units)
	for ; k > 0; k-- {
		cost := 0
		for _, i := range units[k-1] {
			if steps[i].Kind() != KindSummary {
				cost += env.Tokens(steps[i])
			}
		}
		if k < len(units) && used+cost > target {
			break
		}
		used += cost
	}
	var idx []int
	for _, u := range units[:k] {
		idx = append(idx, u...)
	}
	return idx
}

// triggered reports whether the unpinned steps call for a summary.
func (c summarizeConfig) triggered(steps []Step, unpinned []int, env *Env) bool {
	if c.always || (c.trigger >= 0 && len(unpinned) > c.trigger) {
		return true
	}
	if c.triggerTokens <= 0 {
		return false
	}
	total := 0
	for _, i := range unpinned {
		if total += env.Tokens(steps[i]); total > c.triggerTokens {
			return true
		}
	}
	return false
}

// summarizeBounded asks sum for a summary and makes sure it fits
// req.MaxTokens: by asking once to condense it, then by cutting it.
func summarizeBounded(ctx context.Context, sum Summarizer, req SummaryRequest, c tokenizer.Counter) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	text, err := sum.Summarize(ctx, req)
	if err != nil {
		return "", fmt.Errorf("agentmem: summarize %d steps: %w", len(req.Steps), err)
	}
	if strings.TrimSpace(text) == "" {
		return "", invalidf("summary", "the summarizer returned no text")
	}
	if c.Count(text) <= req.MaxTokens {
		return text, nil
	}
	short, err := sum.Summarize(ctx, SummaryRequest{Previous: text, MaxTokens: req.MaxTokens, Condense: true})
	if err != nil {
		return "", fmt.Errorf("agentmem: condense a summary of %d tokens: %w", c.Count(text), err)
	}
	if strings.TrimSpace(short) != "" {
		text = short
	}
	return cutToTokens(text, req.MaxTokens, c), nil
}

// cutToTokens returns the longest prefix of text, cut on a UTF-8
// boundary, that costs at most maxTokens; text itself if it fits.
func cutToTokens(text string, maxTokens int, c tokenizer.Counter) string {
	if c.Count(text) <= maxTokens {
		return text
	}
	lo, hi := 0, len(text)-1 // text[:lo] fits; text[:hi+1] is not known to
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if c.Count(text[:textcut.Floor(text, mid)]) <= maxTokens {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return text[:textcut.Floor(text, lo)]
}

// Summarize summarizes the working set in one call. The steps
// StepsToSummarize(keepRecent) returns are passed to s, an earlier summary
// among them as SummaryRequest.Previous. They are replaced by one
// SummaryStep holding its text, as SetSummary does. keepRecent counts
// unpinned steps literally: zero keeps none. The summary is bounded by
// DefaultMaxSummaryTokens as in the Summarize strategy.
//
// The summarizer runs without holding the memory's lock. If another
// compaction changes the working set meanwhile, the result wraps
// ErrConflict and nothing changes, as with Prune. An error from s leaves
// the memory unchanged. When there is nothing to summarize, s is not
// called and the returned Compaction reports no change (Changed is false).
func (m *Memory) Summarize(ctx context.Context, s Summarizer, keepRecent int) (*Compaction, error) {
	if s == nil {
		return nil, invalidf("summarizer", "is nil")
	}
	keepRecent = max(keepRecent, 0)
	fresh := 0 // steps to summarize that are not earlier summaries
	for _, st := range m.StepsToSummarize(keepRecent) {
		if st.Kind() != KindSummary {
			fresh++
		}
	}
	if fresh == 0 {
		// Checked before Prune so that a no-op does not count as a
		// compaction that would make a concurrent Prune conflict.
		n := m.Len()
		return &Compaction{Before: n, After: n}, nil
	}
	cfg := summarizeConfig{keepRecent: keepRecent, trigger: -1, maxTokens: DefaultMaxSummaryTokens, always: true}
	return m.Prune(ctx, summarizeStrategy(s, cfg))
}
