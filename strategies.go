package agentmem

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file holds the built-in strategies of the seeds: sliding windows
// (KeepLastN, KeepLastNActions, KeepSystemAndRecent), observation
// truncation (PruneOldObservations, PruneObservationsOlderThan), a token
// budget (TokenBudget) and DropKinds. Summarize is in summarizer.go and
// the diversity strategy MMR in mmr.go.
//
// Every strategy here keeps the steps it does not change as the very
// values it was given (so a Memory reuses their cached token counts),
// returns a new slice in the original order, and never modifies its input.

// KeepLastN keeps the pinned steps (system prompts and the first task) and
// the newest n other steps, of any kind, dropping the rest: the sliding
// window most agents want. A negative n counts as zero.
func KeepLastN(n int) Strategy {
	n = max(n, 0)
	return StrategyFunc(func(_ context.Context, steps []Step, env *Env) ([]Step, error) {
		_, pinned := pinEnv(steps, env)
		keep := slices.Clone(pinned)
		left := n
		for i := len(steps) - 1; i >= 0 && left > 0; i-- {
			if !pinned[i] {
				keep[i] = true
				left--
			}
		}
		return keepMasked(steps, keep), nil
	})
}

// KeepLastNActions is tinyAgent's keep_last_n_steps: it keeps the pinned
// steps, every step that is not an action (plans, notes, summaries,
// messages, later tasks) and the newest n action steps, dropping older
// actions. A negative n counts as zero.
func KeepLastNActions(n int) Strategy {
	n = max(n, 0)
	return StrategyFunc(func(_ context.Context, steps []Step, env *Env) ([]Step, error) {
		_, pinned := pinEnv(steps, env)
		keep := make([]bool, len(steps))
		left := n
		for i := len(steps) - 1; i >= 0; i-- {
			switch {
			case pinned[i] || steps[i].Kind() != KindAction:
				keep[i] = true
			case left > 0:
				keep[i] = true
				left--
			}
		}
		return keepMasked(steps, keep), nil
	})
}

// KeepSystemAndRecent is the seeds' keep_system_and_recent: every system
// prompt plus the newest n steps of any kind (system prompts among them
// count towards n). Unlike every other strategy here it does not pin the
// first task, because the seeds do not: once the task is older than the
// newest n steps it is dropped. KeepLastN, which keeps the task, is
// usually what an agent wants. A negative n counts as zero.
func KeepSystemAndRecent(n int) Strategy {
	n = max(n, 0)
	return StrategyFunc(func(_ context.Context, steps []Step, _ *Env) ([]Step, error) {
		keep := make([]bool, len(steps))
		for i, s := range steps {
			keep[i] = s.Kind() == KindSystemPrompt || i >= len(steps)-n
		}
		return keepMasked(steps, keep), nil
	})
}

// DropKinds drops every step of the given kinds, for example
// DropKinds(KindScratchpad) to forget working notes. Pinned steps are kept
// even when their kind is listed.
func DropKinds(kinds ...StepKind) Strategy {
	drop := make(map[StepKind]bool, len(kinds))
	for _, k := range kinds {
		drop[k] = true
	}
	return StrategyFunc(func(_ context.Context, steps []Step, env *Env) ([]Step, error) {
		_, pinned := pinEnv(steps, env)
		keep := make([]bool, len(steps))
		for i, s := range steps {
			keep[i] = pinned[i] || !drop[s.Kind()]
		}
		return keepMasked(steps, keep), nil
	})
}

// PruneOldObservations keeps every step but shortens the tool results and
// observations of the action steps older than the newest keepLastN
// actions to at most maxLength bytes each, as ActionStep.Truncate does
// (the seeds' prune_old_observations). An action is replaced by its
// truncated copy only when that changes it, and text this strategy (or
// Truncate) already cut to maxLength bytes or less is not cut again, so
// applying it repeatedly reports no further changes. Negative arguments
// count as zero.
func PruneOldObservations(keepLastN, maxLength int) Strategy {
	keepLastN, maxLength = max(keepLastN, 0), max(maxLength, 0)
	return StrategyFunc(func(_ context.Context, steps []Step, _ *Env) ([]Step, error) {
		out := make([]Step, len(steps))
		recent := 0
		for i := len(steps) - 1; i >= 0; i-- {
			out[i] = steps[i]
			a, ok := steps[i].(*ActionStep)
			if !ok {
				continue
			}
			if recent < keepLastN {
				recent++
				continue
			}
			if t, changed := truncateAction(a, maxLength); changed {
				out[i] = t
			}
		}
		return out, nil
	})
}

// PruneObservationsOlderThan shortens, like PruneOldObservations, the tool
// results and observations of the action steps whose time is more than
// maxAge before Env.Now (the injected clock of a Memory) to at most
// maxLength bytes each. This is the seeds' age-based
// prune_old_observations(max_age_seconds). Steps with no time (the zero
// time) have no known age and are left alone. Negative arguments count as
// zero.
func PruneObservationsOlderThan(maxAge time.Duration, maxLength int) Strategy {
	maxAge, maxLength = max(maxAge, 0), max(maxLength, 0)
	return StrategyFunc(func(_ context.Context, steps []Step, env *Env) ([]Step, error) {
		cutoff := env.Now().Add(-maxAge)
		out := make([]Step, len(steps))
		for i, s := range steps {
			out[i] = s
			a, ok := s.(*ActionStep)
			if !ok || a.Time.IsZero() || !a.Time.Before(cutoff) {
				continue
			}
			if t, changed := truncateAction(a, maxLength); changed {
				out[i] = t
			}
		}
		return out, nil
	})
}

// TokenBudget keeps the pinned steps and then the newest steps whose
// total cost (Env.Tokens, plus ReplyPriming for the request) fits in
// budget, walking back from the newest step and stopping at the first
// that does not fit, so the kept window has no gaps. This is the choice
// Memory.Context makes, applied as a strategy (for example to compact the
// working set, or before another strategy in a Chain). The costs are
// those of each step rendered on its own, an upper bound on what a format
// that merges messages sends, so the kept steps never exceed the budget.
//
// If the pinned steps alone exceed the budget, Apply returns a
// *BudgetError (wrapping ErrBudgetTooSmall). A budget of zero or less
// keeps everything.
func TokenBudget(budget int) Strategy {
	return StrategyFunc(func(_ context.Context, steps []Step, env *Env) ([]Step, error) {
		if budget <= 0 {
			return slices.Clone(steps), nil
		}
		env, pinned := pinEnv(steps, env)
		used := ReplyPriming
		for i, s := range steps {
			if pinned[i] {
				used += env.Tokens(s)
			}
		}
		if used > budget {
			return nil, &BudgetError{Budget: budget, Required: used}
		}
		keep := slices.Clone(pinned)
		for i := len(steps) - 1; i >= 0; i-- {
			if pinned[i] {
				continue
			}
			cost := env.Tokens(steps[i])
			if used+cost > budget {
				break
			}
			used += cost
			keep[i] = true
		}
		return keepMasked(steps, keep), nil
	})
}

// pinEnv returns the pinned flags of steps and an Env that reports exactly
// those steps as pinned, so that helpers such as ReplaceWithSummary agree
// with the caller. A step is pinned if env pins it, if it is a system
// prompt, or if it is a modified copy (same number and ID) of a step env
// pins: Env.Pinned alone knows only the very values a Memory handed to the
// first strategy of a Chain. An Env that knows no steps
// (a nil Env, or one from NewEnv) pins every system prompt and the first
// task among steps, as Env's documentation promises.
func pinEnv(steps []Step, env *Env) (*Env, []bool) {
	pinned := make([]bool, len(steps))
	var derived Env
	if env != nil {
		derived = *env
	} else {
		derived = *NewEnv(EnvOptions{})
	}
	if env == nil || env.pinned == nil {
		seenTask := false
		for i, s := range steps {
			switch s.Kind() {
			case KindSystemPrompt:
				pinned[i] = true
			case KindTask:
				if !seenTask {
					pinned[i], seenTask = true, true
				}
			}
		}
	} else {
		type key struct {
			number int
			id     string
		}
		var byKey map[key]bool
		for i, s := range steps {
			if env.pinned[s] || s.Kind() == KindSystemPrompt {
				pinned[i] = true
				continue
			}
			info := s.Info()
			if info.ID == "" {
				continue
			}
			if byKey == nil {
				byKey = make(map[key]bool, len(env.pinned))
				for p, ok := range env.pinned {
					if ok {
						pi := p.Info()
						byKey[key{pi.Number, pi.ID}] = true
					}
				}
			}
			pinned[i] = byKey[key{info.Number, info.ID}]
		}
	}
	derived.pinned = make(map[Step]bool)
	for i, s := range steps {
		if pinned[i] {
			derived.pinned[s] = true
		}
	}
	return &derived, pinned
}

// keepMasked returns the steps whose flag is set, in order, in a new slice.
func keepMasked(steps []Step, keep []bool) []Step {
	out := make([]Step, 0, len(steps))
	for i, s := range steps {
		if keep[i] {
			out = append(out, s)
		}
	}
	return out
}

// truncateAction returns a copy of a with its tool results and
// observation truncated to maxLen bytes as ActionStep.Truncate does, and
// whether anything changed. Unlike Truncate it does not cut again text that
// TruncateText already cut to maxLen bytes or less.
func truncateAction(a *ActionStep, maxLen int) (*ActionStep, bool) {
	obs, changed := truncateOnce(a.Observation, maxLen)
	var results []ToolResult
	for i, r := range a.Results {
		t, ok := truncateOnce(r.Content, maxLen)
		if !ok {
			continue
		}
		if results == nil {
			results = slices.Clone(a.Results)
		}
		results[i].Content, changed = t, true
	}
	if !changed {
		return a, false
	}
	c := a.clone().(*ActionStep)
	c.Observation = obs
	if results != nil {
		c.Results = results
	}
	return c, true
}

// truncMarker starts the note TruncateText appends to text it cuts.
const truncMarker = "\n…[truncated "

// truncateOnce is TruncateText made idempotent: text that TruncateText
// already cut to at most maxLen bytes is returned unchanged, and text it
// cut to more is cut further with the marker counting every byte cut from
// the original, so that truncateOnce(TruncateText(s, n), m) equals
// TruncateText(s, min(n, m)). It reports whether it changed s.
func truncateOnce(s string, maxLen int) (string, bool) {
	if len(s) <= maxLen {
		return s, false
	}
	prefix, cut, ok := splitTruncated(s)
	if !ok {
		return TruncateText(s, maxLen), true
	}
	if len(prefix) <= maxLen {
		return s, false
	}
	keep := maxLen
	for keep > 0 && !utf8.RuneStart(prefix[keep]) {
		keep--
	}
	return prefix[:keep] + truncMarker + strconv.Itoa(cut+len(prefix)-keep) + " bytes]", true
}

// splitTruncated splits text produced by TruncateText into the kept
// prefix and the number of bytes cut.
func splitTruncated(s string) (prefix string, cut int, ok bool) {
	i := strings.LastIndex(s, truncMarker)
	if i < 0 {
		return "", 0, false
	}
	num, found := strings.CutSuffix(s[i+len(truncMarker):], " bytes]")
	if !found {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || strconv.Itoa(n) != num {
		return "", 0, false
	}
	return s[:i], n, true
}
