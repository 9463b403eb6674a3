package agentmem

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentmem/agentmem/tokenizer"
)

// Compaction reports a change to the working set. Nothing is lost by
// accident. The steps a compaction takes out of the working set are
// returned here so that a durable log can keep them.
type Compaction struct {
	// Removed are the steps no longer in the working set.
	Removed []Step `json:"removed,omitempty"`
	// Replaced are the original versions of steps that are now in the
	// working set in modified form (for example truncated).
	Replaced []Step `json:"replaced,omitempty"`
	// Added are new steps inserted by the strategy, such as summaries,
	// with the numbers the memory gave them.
	Added []Step `json:"added,omitempty"`
	// Before and After are the sizes of the working set.
	Before int `json:"before"`
	After  int `json:"after"`
}

// Changed reports whether the compaction changed anything.
func (c *Compaction) Changed() bool {
	return c != nil && (len(c.Removed) > 0 || len(c.Replaced) > 0 || len(c.Added) > 0)
}

// cloneForStrategy copies the working set for a strategy run, mapping
// each copy back to its entry so unchanged steps keep their caches.
func (m *workingSet) cloneForStrategy() ([]Step, map[Step]*entry, uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	in := make([]Step, len(m.entries))
	byStep := make(map[Step]*entry, len(m.entries))
	for i, e := range m.entries {
		in[i] = e.step.clone()
		byStep[in[i]] = e
	}
	return in, byStep, m.epoch
}

// Prune applies a strategy to the working set and returns what changed.
// A nil strategy means the memory's default (Options.Prune), the seeds'
// prune(); without one it is an error wrapping ErrInvalid.
//
// The strategy runs without holding the memory's locks, so an LLM
// summarizer does not block readers or writers. Steps appended while it
// runs are kept after its result. If another compaction changed the
// working set in the meantime, Prune returns an error wrapping ErrConflict
// and changes nothing; call it again. With a journal, the compaction is
// recorded before the memory changes.
func (m *Memory) Prune(ctx context.Context, s Strategy) (*Compaction, error) {
	if s == nil {
		s = m.prune
	}
	if s == nil {
		return nil, invalidf("strategy", "is nil and the memory has no default strategy (Options.Prune)")
	}
	return m.pruneTo(ctx, s, 0)
}

// pruneTo implements Prune, with the Env's target (see Env.Target).
func (m *Memory) pruneTo(ctx context.Context, s Strategy, target int) (*Compaction, error) {
	in, byStep, epoch := m.cloneForStrategy()
	env := m.env(in, byStep, m.format, m.counter)
	env.target = target
	out, err := s.Apply(ctx, slices.Clone(in), env)
	if err != nil {
		return nil, err
	}
	m.wmu.Lock()
	comp, err := m.compact(ctx, epoch, in, byStep, out)
	m.wmu.Unlock()
	m.notify(comp, err)
	return comp, err
}

// compactPlan is a validated compaction, ready to journal and apply.
type compactPlan struct {
	comp     *Compaction
	entries  []*entry // the new working set
	added    []int    // indexes in entries of new steps
	replaced []int    // indexes in entries of modified copies
	removed  []int    // numbers of the removed steps
}

// compact validates a strategy's output against the first len(in)
// entries of the working set, journals it and applies it. m.wmu must be
// held.
func (m *Memory) compact(ctx context.Context, epoch uint64, in []Step, byStep map[Step]*entry, out []Step) (*Compaction, error) {
	if m.epoch != epoch {
		return nil, fmt.Errorf("%w: the working set was compacted while the strategy ran", ErrConflict)
	}
	plan, err := m.plan(in, byStep, out)
	if err != nil {
		return nil, err
	}
	if len(plan.added) == 0 && len(plan.removed) == 0 && len(plan.replaced) == 0 {
		// Nothing changed: leave the working set and its epoch alone, so
		// a concurrent compaction does not fail for no reason.
		return plan.comp, nil
	}
	for _, i := range plan.added {
		info := plan.entries[i].step.Info()
		info.ID = m.newID()
		if info.Time.IsZero() {
			info.Time = m.now()
		}
		plan.entries[i].step.setInfo(info)
	}
	numbers := make([]int, len(plan.added))
	for k := range plan.added {
		numbers[k] = m.next + k
	}
	if m.journal != nil {
		working := make([]Step, len(plan.entries))
		for i, e := range plan.entries {
			working[i] = e.step
		}
		got, err := m.journal.Compact(ctx, JournalCompaction{Working: working, Added: plan.added, Replaced: plan.replaced, Removed: plan.removed})
		if err != nil {
			return nil, err
		}
		if len(got) != len(plan.added) {
			return nil, fmt.Errorf("agentmem: journal returned %d numbers for %d new steps", len(got), len(plan.added))
		}
		numbers = got
	}
	for k, i := range plan.added {
		info := plan.entries[i].step.Info()
		info.Number = numbers[k]
		plan.entries[i].step.setInfo(info)
		plan.entries[i].render(m.format, m.counter, RenderOptions{}) // count before readers see it
		plan.comp.Added = append(plan.comp.Added, plan.entries[i].step.clone())
	}
	for _, i := range plan.replaced {
		plan.entries[i].render(m.format, m.counter, RenderOptions{})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range numbers {
		m.next = max(m.next, n+1)
	}
	m.entries = plan.entries
	m.layout = m.pin.layoutOf(plan.entries)
	m.epoch++
	m.recountLocked()
	plan.comp.After = len(plan.entries)
	return plan.comp, nil
}

// orderResult checks a strategy's result against the steps it was given
// and returns it in working-set order (see Strategy on order). known
// reports whether a step is one of in, unchanged. A step with an ID that
// is not known is a modified copy and must have the number, ID and kind of
// a step of in. It changes neither slice.
func orderResult(in, out []Step, known func(Step) bool) ([]Step, error) {
	pos := make(map[int]int, len(in)) // number -> index in in
	for i, s := range in {
		pos[s.Info().Number] = i
	}
	at := make([]int, len(out)) // index in in of each kept step, -1 for a new one
	seen := make(map[int]int, len(out))
	sorted, fresh := true, -1
	last := -1
	for i, s := range out {
		if s == nil {
			return nil, &StrategyError{Index: i, Step: -1, Reason: "is nil"}
		}
		info := s.Info()
		if !known(s) && info.ID == "" {
			at[i] = -1
			if fresh < 0 {
				fresh = i
			}
			continue
		}
		k, ok := pos[info.Number]
		if !ok || in[k].Info().ID != info.ID || in[k].Kind() != s.Kind() {
			return nil, &StrategyError{Index: i, Step: info.Number, Reason: fmt.Sprintf("step %d (%s) is not a step of the working set; new steps must have no ID", info.Number, info.ID)}
		}
		if j, dup := seen[info.Number]; dup {
			return nil, &StrategyError{Index: i, Step: info.Number, Reason: fmt.Sprintf("step %d is repeated (already at result[%d]): a strategy keeps a step at most once", info.Number, j)}
		}
		seen[info.Number] = i
		at[i] = k
		if k < last {
			sorted = false
		}
		last = max(last, k)
	}
	if sorted {
		return out, nil
	}
	if fresh >= 0 {
		return nil, &StrategyError{Index: fresh, Step: -1, Reason: "a new step comes with kept steps out of their order: where it belongs is ambiguous; a strategy that inserts steps must return the kept ones in their order"}
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return at[a] - at[b] })
	ordered := make([]Step, len(out))
	for i, j := range idx {
		ordered[i] = out[j]
	}
	return ordered, nil
}

// plan checks a strategy's output and works out the new working set. It
// reads the working set under m.wmu and changes nothing.
func (m *Memory) plan(in []Step, byStep map[Step]*entry, out []Step) (*compactPlan, error) {
	out, err := orderResult(in, out, func(s Step) bool { _, ok := byStep[s]; return ok })
	if err != nil {
		return nil, err
	}
	pos := make(map[int]int, len(in)) // number -> index in in
	for i, s := range in {
		pos[s.Info().Number] = i
	}
	p := &compactPlan{comp: &Compaction{Before: len(m.entries), After: len(m.entries)}}
	kept := make(map[int]bool, len(out))
	for i, s := range out {
		if e, ok := byStep[s]; ok { // unchanged
			kept[s.Info().Number] = true
			p.entries = append(p.entries, e)
			continue
		}
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("strategy result[%d]: %w", i, err)
		}
		info := s.Info()
		if info.ID == "" { // a new step
			p.added = append(p.added, len(p.entries))
			p.entries = append(p.entries, &entry{step: s.clone()})
			continue
		}
		at := pos[info.Number] // orderResult checked it is a step of in
		kept[info.Number] = true
		p.replaced = append(p.replaced, len(p.entries))
		p.entries = append(p.entries, &entry{step: s.clone()})
		p.comp.Replaced = append(p.comp.Replaced, byStep[in[at]].step.clone())
	}
	for _, s := range in {
		if n := s.Info().Number; !kept[n] {
			p.removed = append(p.removed, n)
			p.comp.Removed = append(p.comp.Removed, byStep[s].step.clone())
		}
	}
	p.entries = append(p.entries, m.entries[len(in):]...)
	return p, nil
}

// recountLocked recomputes the running token total the policy checks.
func (m *Memory) recountLocked() {
	if m.policy == nil || m.policy.MaxTokens <= 0 {
		return
	}
	m.tokens = 0
	for _, e := range m.entries {
		if IsPending(e.step) {
			continue
		}
		m.tokens += e.render(m.format, m.counter, RenderOptions{}).total
	}
}

// TrimToFit drops steps from the working set so that it fits the budget,
// as Context would show it, and returns what it removed. It is the
// mutating counterpart of Context (the seeds' trim_to_fit). Pinned steps
// stay. TruncateToFill and Strategy are not used, and a newest step that
// does not fit is dropped (DropOversizedNewest is implied).
func (m *Memory) TrimToFit(ctx context.Context, opts ContextOptions) (*Compaction, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, c := opts.Format, opts.Counter
	if f == nil {
		f = m.format
	}
	if c == nil {
		c = m.counter
	}
	opts.TruncateToFill, opts.DropOversizedNewest, opts.Strategy = false, true, nil
	m.wmu.Lock()
	comp, err := m.trim(ctx, opts, f, c)
	m.wmu.Unlock()
	m.notify(comp, err)
	return comp, err
}

// trim implements TrimToFit. m.wmu must be held.
func (m *Memory) trim(ctx context.Context, opts ContextOptions, f Format, c tokenizer.Counter) (*Compaction, error) {
	m.mu.RLock()
	res, err := workingView{entries: m.entries, layout: m.layout}.fit(opts, f, c)
	m.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	keep := make(map[int]bool, len(res.Steps)+len(res.Pending))
	for _, n := range res.Steps {
		keep[n] = true
	}
	for _, p := range res.Pending { // they cost nothing until complete
		keep[p.Step] = true
	}
	in := make([]Step, len(m.entries))
	byStep := make(map[Step]*entry, len(m.entries))
	out := make([]Step, 0, len(res.Steps))
	for i, e := range m.entries {
		in[i] = e.step.clone()
		byStep[in[i]] = e
		if keep[e.step.Info().Number] {
			out = append(out, in[i])
		}
	}
	return m.compact(ctx, m.epoch, in, byStep, out)
}

// notify reports a compaction (or the error that stopped one) to
// Options.OnCompact.
func (m *Memory) notify(comp *Compaction, err error) {
	if m.onComp != nil && (err != nil || comp.Changed()) {
		m.onComp(comp, err)
	}
}

// StepsToSummarize returns copies of the steps a summary would replace if
// the newest keepRecent unpinned steps were kept verbatim, oldest first.
// SummaryUnits says how whole turns round that up. It is the seeds'
// messages_to_summarize, in steps. An earlier summary among them is the
// summary to extend.
func (m *Memory) StepsToSummarize(keepRecent int) []Step {
	m.mu.RLock()
	defer m.mu.RUnlock()
	steps := make([]Step, len(m.entries))
	flags := make([]bool, len(m.entries))
	for i, e := range m.entries {
		steps[i] = e.step
	}
	for _, i := range m.pinned {
		flags[i] = true
	}
	idx := olderUnits(SummaryUnits(steps, flags), keepRecent, steps)
	out := make([]Step, len(idx))
	for i, j := range idx {
		out[i] = m.entries[j].step.clone()
	}
	return out
}

// MessagesToSummarize renders StepsToSummarize in summary mode.
func (m *Memory) MessagesToSummarize(keepRecent int) []Message {
	var msgs []Message
	for _, s := range m.StepsToSummarize(keepRecent) {
		msgs = append(msgs, s.Messages(RenderOptions{SummaryMode: true})...)
	}
	return msgs
}

// SummaryUnits splits the steps a summary may replace into units, oldest
// first, each a list of indexes into steps. A summary replaces whole
// units, so that what stays is whole turns. A turn (see StartsTurn) whose
// question is not pinned is one unit of its unpinned steps. In a turn
// whose question is pinned (an agent run's task), and before the first
// question, each unpinned step is a unit of its own. Summaries are units
// even when pinned: a new summary folds the older ones in. pinned flags
// the pinned steps.
func SummaryUnits(steps []Step, pinned []bool) [][]int {
	var units [][]int
	whole := false // in a turn whose question is not pinned
	for i, s := range steps {
		if StartsTurn(s) {
			whole = !pinned[i]
			if whole {
				units = append(units, []int{i})
			}
			continue
		}
		if pinned[i] && s.Kind() != KindSummary {
			continue
		}
		if whole {
			units[len(units)-1] = append(units[len(units)-1], i)
		} else {
			units = append(units, []int{i})
		}
	}
	return units
}

// olderUnits returns, ascending, the indexes of the units older than the
// newest ones that hold keepRecent steps other than summaries. When
// keepRecent is zero or less, it returns all of them.
func olderUnits(units [][]int, keepRecent int, steps []Step) []int {
	k := len(units)
	for kept := 0; k > 0 && kept < keepRecent; k-- {
		for _, i := range units[k-1] {
			if steps[i].Kind() != KindSummary {
				kept++
			}
		}
	}
	var idx []int
	for _, u := range units[:k] {
		idx = append(idx, u...)
	}
	return idx
}

// SetSummary replaces the steps StepsToSummarize(keepRecent) returns with
// one SummaryStep, atomically. The summary holds text and covers their
// numbers, and those of any summary among them. It is the seeds'
// set_summary followed by trim_to_recent. It returns the compaction; the
// summary survives Snapshot and Restore like any step.
//
// The text is always kept, as the seeds' set_summary keeps it. When no
// step is older than the newest keepRecent unpinned ones, the summary is
// put before the oldest unpinned step, or at the end when every step is
// pinned. It takes the place of the summaries already in the working set,
// covering what they covered. Summary then returns text.
func (m *Memory) SetSummary(ctx context.Context, text string, keepRecent int) (*Compaction, error) {
	if err := validText("summary", text); err != nil {
		return nil, err
	}
	return m.Prune(ctx, StrategyFunc(func(_ context.Context, steps []Step, env *Env) ([]Step, error) {
		if out := ReplaceWithSummary(steps, env, text, keepRecent); !slices.Equal(out, steps) {
			return out, nil
		}
		return insertSummary(steps, env, text), nil
	}))
}

// insertSummary returns steps with a SummaryStep holding text in place of
// the summaries among them. The summary goes before the first summary or
// unpinned step, or at the end when there is none.
func insertSummary(steps []Step, env *Env, text string) []Step {
	sum := &SummaryStep{Summary: text}
	out := make([]Step, 0, len(steps)+1)
	placed := false
	for _, s := range steps {
		isSum := s.Kind() == KindSummary
		if !placed && (isSum || !env.Pinned(s)) {
			out, placed = append(out, sum), true
		}
		if isSum {
			sum.Covers = append(sum.Covers, CoveredBy(s)...)
			continue
		}
		out = append(out, s)
	}
	if !placed {
		out = append(out, sum)
	}
	sum.Covers = MergeRanges(sum.Covers)
	return out
}

// ReplaceWithSummary returns steps with some units of SummaryUnits
// replaced by one SummaryStep holding text. The units replaced are those
// older than the newest units that hold keepRecent unpinned steps. The
// summary is placed where the first replaced step was: the older turns go
// whole, and the turns kept are whole. It covers the replaced steps'
// numbers and, for replaced summaries, the numbers they covered.
func ReplaceWithSummary(steps []Step, env *Env, text string, keepRecent int) []Step {
	_, pinned := pinEnv(steps, env)
	return replaceUnits(steps, olderUnits(SummaryUnits(steps, pinned), keepRecent, steps), text)
}

// replaceUnits returns steps with those at the indexes replace (ascending)
// replaced by one SummaryStep holding text, where the first of them was.
func replaceUnits(steps []Step, replace []int, text string) []Step {
	if len(replace) == 0 {
		return steps
	}
	gone := make(map[int]bool, len(replace))
	var covers []Range
	for _, i := range replace {
		gone[i] = true
		covers = append(covers, CoveredBy(steps[i])...)
	}
	sum := &SummaryStep{Summary: text, Covers: MergeRanges(covers)}
	out := make([]Step, 0, len(steps)-len(replace)+1)
	for i, s := range steps {
		if i == replace[0] {
			out = append(out, sum)
		}
		if !gone[i] {
			out = append(out, s)
		}
	}
	return out
}

// CoveredBy returns the step numbers a step stands for: a summary stands
// for the steps it covers, any other step for itself.
func CoveredBy(s Step) []Range {
	if sum, ok := s.(*SummaryStep); ok {
		return slices.Clone(sum.Covers)
	}
	n := s.Info().Number
	return []Range{{From: n, To: n}}
}

// MergeRanges sorts ranges and merges overlapping and adjacent ones.
func MergeRanges(rs []Range) []Range {
	if len(rs) == 0 {
		return nil
	}
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b Range) int { return a.From - b.From })
	out := []Range{rs[0]}
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.From <= last.To+1 {
			last.To = max(last.To, r.To)
			continue
		}
		out = append(out, r)
	}
	return out
}
