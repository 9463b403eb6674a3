package agentmem

import (
	"context"
	"slices"
	"time"
)

// This file holds the built-in strategies of the seeds. They are sliding
// windows (KeepLastN, KeepLastNActions, KeepSystemAndRecent, Tail,
// KeepLastNAndTasks), observation truncation (PruneOldObservations,
// PruneObservationsOlderThan), a token budget (TokenBudget) and DropKinds.
// Summarize is in summarizer.go and the diversity strategy MMR in mmr.go.
//
// Every strategy here keeps the steps it does not change as the very
// values it was given, so a Memory reuses their cached token counts. It
// returns a new slice in the original order, and never modifies its input.

// KeepLastN keeps the pinned steps (system prompts and the first task) and
// the newest n other steps, of any kind, dropping the rest. It is the
// sliding window most agents want. A negative n counts as zero.
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

// KeepRecent keeps the pinned steps and the newest whole turns that hold
// at least n other steps, dropping the older ones. It is KeepLastN rounded
// up to whole turns (see SummaryUnits), so that no turn left loses its
// question. In an agent run, whose task is pinned, it keeps the newest n
// steps. It is a memory's default strategy (see Options.Prune). A negative
// n counts as zero.
func KeepRecent(n int) Strategy {
	n = max(n, 0)
	return StrategyFunc(func(_ context.Context, steps []Step, env *Env) ([]Step, error) {
		_, pinned := pinEnv(steps, env)
		keep := make([]bool, len(steps))
		for i := range keep {
			keep[i] = true
		}
		for _, i := range olderUnits(SummaryUnits(steps, pinned), n, steps) {
			keep[i] = pinned[i]
		}
		return keepMasked(steps, keep), nil
	})
}

// KeepLastNActions is tinyAgent's keep_last_n_steps. It keeps the pinned
// steps, every step that is not an action (plans, notes, summaries,
// messages, later tasks) and the newest n action steps. It drops older
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
// prompt plus the newest n steps of any kind. System prompts among them
// count towards n. Unlike every other strategy here it does not pin the
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

// Tail keeps the newest n steps of any kind and nothing else: seed 001's
// keep_last_n_steps, steps[-n:]. Nothing is pinned, not even the system
// prompt: once it is older than the newest n steps it goes. KeepLastN,
// which keeps the pinned steps, is usually what an agent wants. A
// negative n counts as zero.
func Tail(n int) Strategy {
	n = max(n, 0)
	return StrategyFunc(func(_ context.Context, steps []Step, _ *Env) ([]Step, error) {
		return slices.Clone(steps[max(len(steps)-n, 0):]), nil
	})
}

// KeepLastNAndTasks is seed 002's keep_last_n_steps: it keeps every system
// prompt and every task, whatever the memory pins, and the newest n other
// steps. The seed returns the system prompts and tasks first and the other
// steps after them. Here every step stays in its place (see Strategy on
// order), so a later task still comes after the actions that preceded it.
// A negative n counts as zero.
func KeepLastNAndTasks(n int) Strategy {
	n = max(n, 0)
	return StrategyFunc(func(_ context.Context, steps []Step, _ *Env) ([]Step, error) {
		keep := make([]bool, len(steps))
		left := n
		for i := len(steps) - 1; i >= 0; i-- {
			switch k := steps[i].Kind(); {
			case k == KindSystemPrompt || k == KindTask:
				keep[i] = true
			case left > 0:
				keep[i] = true
				left--
			}
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

// PruneOldObservations keeps every step but shortens some tool results and
// observations to at most maxLength bytes each, as ActionStep.Truncate
// does. It shortens those of the action steps older than the newest
// keepLastN actions (the seeds' prune_old_observations). An action is
// replaced by its truncated copy only when that changes it. Text this
// strategy (or Truncate) already cut to maxLength bytes or less is not cut
// again. So applying it repeatedly reports no further changes. Negative
// arguments count as zero.
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
// results and observations of some action steps to at most maxLength bytes
// each. It shortens those of the steps whose time is more than maxAge
// before Env.Now (the injected clock of a Memory). This is the seeds'
// age-based prune_old_observations(max_age_seconds). Steps with no time
// (the zero time) have no known age and are left alone. Negative arguments
// count as zero.
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

// TokenBudget keeps the pinned steps and then the newest steps whose total
// cost (Env.Tokens, plus ReplyPriming for the request) fits in budget. It
// walks back from the newest step and stops at the first that does not
// fit, so the kept window has no gaps. This is the choice Memory.Context
// makes, applied as a strategy: for example to compact the working set, or
// before another strategy in a Chain. The costs are those of each step
// rendered on its own. That is an upper bound on what a format that merges
// messages sends, so the kept steps never exceed the budget.
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
// those steps as pinned. So helpers such as ReplaceWithSummary agree with
// the caller. An Env that knows the memory's working set pins by step
// number and ID, so modified copies stay pinned through a Chain. One that
// knows none (nil, or from NewEnv) applies its pinning to steps; by
// default that pins system prompts and the first task.
func pinEnv(steps []Step, env *Env) (*Env, []bool) {
	if env == nil || env.pins == nil {
		flags := env.pinRule().stepFlags(steps)
		return env.withPins(steps, flags), flags
	}
	flags := make([]bool, len(steps))
	for i, s := range steps {
		flags[i] = env.Pinned(s)
	}
	return env, flags
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
// observation truncated to maxLen bytes, and whether anything changed.
// Text TruncateText already cut to maxLen bytes or less is left alone.
func truncateAction(a *ActionStep, maxLen int) (*ActionStep, bool) {
	t := a.Truncate(maxLen)
	changed := t.Observation != a.Observation
	for i := range a.Results {
		changed = changed || t.Results[i].Content != a.Results[i].Content
	}
	if !changed {
		return a, false
	}
	return t, true
}
