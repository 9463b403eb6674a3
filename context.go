package agentmem

import (
	"context"
	"fmt"
	"math/bits"
	"slices"

	"github.com/agentmem/agentmem/tokenizer"
)

// ContextOptions selects how Memory.Context renders.
type ContextOptions struct {
	// Budget is the most tokens the rendered request may cost (messages
	// plus reply priming, see RequestTokens). Zero or less means no limit.
	Budget int
	// Format overrides the memory's default format.
	Format Format
	// Counter overrides the memory's default token counter.
	Counter tokenizer.Counter
	// Strategy, when set, is applied to a copy of the working set before
	// fitting; the working set itself is not changed. It costs time
	// proportional to the history, unlike plain fitting.
	Strategy Strategy
	// TruncateToFill lets the newest step that does not fit be shown with
	// its observations truncated so that the context fills the budget.
	TruncateToFill bool
	// DropOversizedNewest turns off what a context does by default when the
	// newest step alone costs more than the budget leaves after the pinned
	// steps. By default the step is shown with its tool results and
	// observation truncated to fit (Context.NewestTruncated), so that the
	// model is not left without its last result. With DropOversizedNewest
	// the step is dropped like any other that does not fit. Only an action
	// step can be truncated so; other steps that do not fit are dropped.
	DropOversizedNewest bool
	// SummaryMode renders steps as summarizer input (see RenderOptions).
	SummaryMode bool
	// Reuse, when set, is a Context from an earlier call that the caller no
	// longer needs, for example because the request built from it has been
	// sent. Its storage is reused for the result, so a render in a steady
	// agent loop allocates almost nothing. The returned Context may be Reuse
	// itself, and Reuse's old contents are overwritten.
	Reuse *Context
}

// Context is a rendered view of the working set, and a record of what the
// model was shown.
type Context struct {
	// Messages are the messages to send, in order. They are copies the
	// caller may modify.
	Messages []Message `json:"messages"`
	// Tokens is what the messages cost under Counter, reply priming included.
	Tokens  int    `json:"tokens"`
	Budget  int    `json:"budget,omitempty"`
	Format  string `json:"format"`
	Counter string `json:"counter"`
	// Steps lists the numbers of the steps shown, in order.
	Steps []int `json:"steps"`
	// Dropped lists the runs of working-set steps that were left out.
	Dropped []DroppedRun `json:"dropped,omitempty"`
	// DroppedSteps counts the steps left out.
	DroppedSteps int `json:"dropped_steps"`
	// Truncated lists the numbers of steps shown with truncated observations.
	Truncated []int `json:"truncated,omitempty"`
	// NewestTruncated reports that the newest step alone cost more than the
	// budget left after the pinned steps. It is then shown with its
	// observations truncated to fit (its number is in Truncated) rather than
	// dropped (see ContextOptions.DropOversizedNewest).
	NewestTruncated bool `json:"newest_truncated,omitempty"`
	// Summarized lists the step numbers covered by the summaries shown.
	Summarized []Range `json:"summarized,omitempty"`
	// Pending lists the pending actions of the working set, whose tool
	// calls await results (ActionStep.Pending). They are never shown, so
	// every tool call shown has its result, nor counted as dropped.
	Pending []PendingAction `json:"pending,omitempty"`

	delta int // what assembling added to the cost of the steps shown

	// Storage kept for ContextOptions.Reuse.
	shown []*entry
	muted []*entry // final answers among shown that end the context
	head  []int    // indexes of the steps shown before the window
	parts []Part
	calls []ToolCall
}

// reset empties c for reuse, keeping its storage.
func (c *Context) reset(budget int, format, counter string) *Context {
	clear(c.shown) // drop references to entries
	clear(c.muted)
	*c = Context{
		Budget: budget, Format: format, Counter: counter,
		Messages: c.Messages[:0], Steps: c.Steps[:0], Dropped: c.Dropped[:0],
		Truncated: c.Truncated[:0], Summarized: c.Summarized[:0], Pending: c.Pending[:0],
		shown: c.shown[:0], muted: c.muted[:0], head: c.head[:0], parts: c.parts[:0], calls: c.calls[:0],
	}
	return c
}

// PendingAction is a pending action of the working set, which a context
// leaves out. It holds its step number and the IDs of its calls that await
// results, in call order.
type PendingAction struct {
	Step        int      `json:"step"`
	ToolCallIDs []string `json:"tool_call_ids"`
}

// DroppedRun is a run of consecutive working-set steps left out of a
// context: Count steps, from step number First to step number Last.
type DroppedRun struct {
	First int `json:"first"`
	Last  int `json:"last"`
	Count int `json:"count"`
}

// Context renders the working set to fit a token budget, without changing
// it. What is shown, in the working set's order:
//
//   - the pinned steps (Options.Pinning: by default the system prompts,
//     the first task and the newest summary), always;
//   - then the newest turns that fit, whole. A turn is a user's message
//     and every step up to the next one (StartsTurn), so the model never
//     sees an answer or a tool result without the question it answers:
//     fitting walks back from the newest turn and stops at the first that
//     does not fit. A turn whose question is pinned (an agent run's task)
//     and the steps before the first question are shown step by step
//     instead, newest first, as far as they fit. A tool call and its
//     results belong to one step and so are kept or dropped together.
//
// When the newest turn alone does not fit, its question is shown with the
// newest of its steps that fit after it. If none does, the newest step is
// shown with its observations truncated to fit (Context.NewestTruncated;
// see ContextOptions.DropOversizedNewest). With TruncateToFill, the turn
// that did not fit is shown so too: its question first, then its newest
// steps, the oldest of them truncated to fill the budget.
//
// Pending actions (whose calls await results) are never shown: they are
// listed in Context.Pending, not in Dropped. A final answer is shown as
// the assistant's message when later steps follow it. It renders nothing
// when it ends the context (see FinalAnswerStep).
//
// Each step is rendered and counted once per format and counter, and the
// result cached. So the cost of a call follows the number of steps kept,
// not the length of the history. The pinned steps alone may exceed the
// budget, or they and the newest turn's question may. The error is then a
// *BudgetError wrapping ErrBudgetTooSmall: a context without the question
// it should answer is not worth sending.
func (m *workingSet) Context(ctx context.Context, opts ContextOptions) (*Context, error) {
	f, c := opts.Format, opts.Counter
	if f == nil {
		f = m.format
	}
	if c == nil {
		c = m.counter
	}
	if opts.Strategy != nil {
		view, err := m.strategyView(ctx, opts.Strategy, f, c)
		if err != nil {
			return nil, err
		}
		return view.fit(opts, f, c)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	v := workingView{entries: m.entries, layout: m.layout}
	return v.fit(opts, f, c)
}

// workingView is a working set to fit: the memory's own, or a strategy's
// rearrangement of it.
type workingView struct {
	entries []*entry
	layout
}

// fit implements Context over a view. A format may insert messages when it
// assembles the request (Anthropic's leading user message). If that takes
// the request over the budget, fitting is redone with the budget lowered
// by the excess.
func (v workingView) fit(opts ContextOptions, f Format, c tokenizer.Counter) (*Context, error) {
	budget := opts.Budget
	for range 3 {
		res, err := v.fitOnce(opts, budget, f, c)
		if err != nil || opts.Budget <= 0 || res.Tokens <= opts.Budget {
			if res != nil {
				res.Budget = opts.Budget
			}
			if be, ok := err.(*BudgetError); ok {
				be.Budget = opts.Budget
				be.Required += opts.Budget - budget
			}
			return res, err
		}
		// The steps shown must leave room for what assembling adds.
		budget = min(budget-1, opts.Budget-res.delta)
	}
	return nil, fmt.Errorf("agentmem: format %s keeps exceeding the budget when assembling", f.Name())
}

// fitting is the state of one fit: what is chosen so far, walking back
// from the newest step.
type fitting struct {
	v      workingView
	f      Format
	c      tokenizer.Counter
	ro     RenderOptions
	budget int // <= 0: no limit
	used   int
	muted  []int // final answers that end the view: shown, at no cost

	pinned, waiting cursor
	// start is the oldest index of the window of steps shown whole at the
	// end of the view. Every step from it on is shown but the pending.
	start int
	// kept reports that an unpinned step that renders something is shown.
	kept bool
}

// cost returns what step i costs shown.
func (ft *fitting) cost(i int) int { return ft.v.entries[i].render(ft.f, ft.c, ft.ro).total }

func (ft *fitting) fits(n int) bool { return ft.budget <= 0 || ft.used+n <= ft.budget }

// free reports whether step i is shown without being chosen: pinned
// (counted already), pending (never shown) or a muted final answer.
func (ft *fitting) free(i int) bool {
	return ft.pinned.has(i) || ft.waiting.has(i) || slices.Contains(ft.muted, i)
}

// steps shows the steps from hi down to lo, newest first, as far as they
// fit. It returns the index of the first that did not, or -1.
func (ft *fitting) steps(hi, lo int) int {
	for i := hi; i >= lo; i-- {
		if ft.free(i) {
			ft.start = i
			continue
		}
		n := ft.cost(i)
		if !ft.fits(n) {
			return i
		}
		ft.used += n
		ft.start = i
		ft.kept = ft.kept || n > 0
	}
	return -1
}

// whole shows the steps from hi down to lo if they all fit, and reports
// whether they did. If not, it shows none and leaves the cursors as they
// were. Its cost is bounded by the budget, not by the turn's length: it
// stops adding up once the sum is over.
func (ft *fitting) whole(hi, lo int) bool {
	saved := *ft
	sum, kept := 0, false
	for i := hi; i >= lo; i-- {
		if ft.free(i) {
			continue
		}
		n := ft.cost(i)
		if sum += n; !ft.fits(sum) {
			*ft = saved
			return false
		}
		kept = kept || n > 0
	}
	ft.used += sum
	ft.start = lo
	ft.kept = ft.kept || kept
	return true
}

// fitOnce fits the view to budget once.
func (v workingView) fitOnce(opts ContextOptions, budget int, f Format, c tokenizer.Counter) (*Context, error) {
	opts.Budget = budget
	ro := RenderOptions{SummaryMode: opts.SummaryMode}
	ft := &fitting{
		v: v, f: f, c: c, ro: ro, budget: budget, start: len(v.entries),
		pinned:  newCursor(v.pinned),
		waiting: newCursor(v.waiting),
	}
	ft.used = ReplyPriming
	for _, i := range v.pinned {
		ft.used += ft.cost(i)
	}
	if !ft.fits(0) {
		return nil, &BudgetError{Budget: budget, Required: ft.used}
	}
	// Final answers that end the context render nothing and cost nothing.
	ft.muted = trailingAnswers(v.entries, f, c, ro)
	// Walk back turn by turn. stop ends as the index of the step that did
	// not fit, the one truncate-to-fill may show cut. question ends as the
	// unpinned question shown before the window, of a turn shown in part.
	stop, question := -1, -1
	turns := newCursor(v.turns)
	pinnedQ := newCursor(v.pinned)
	for end := len(v.entries) - 1; end >= 0; {
		q := turns.last(end) // the turn's question; -1: the steps before the first
		if q < 0 || pinnedQ.has(q) {
			// Shown step by step: the question is pinned, or there is none.
			if stop = ft.steps(end, max(q, 0)); stop >= 0 {
				break
			}
			end = q - 1
			continue
		}
		if ft.whole(end, q) {
			end = q - 1
			continue
		}
		// The turn does not fit whole. The newest turn, and with
		// TruncateToFill any, is shown in part: its question, then as many
		// of its newest steps as fit.
		newest := q == v.turns[len(v.turns)-1]
		if ft.kept && !opts.TruncateToFill {
			break
		}
		qc := ft.cost(q)
		if !ft.fits(qc) {
			if newest && !ft.kept {
				return nil, &BudgetError{Budget: budget, Required: ft.used + qc}
			}
			break
		}
		ft.used += qc
		question = q
		stop = ft.steps(end, q+1)
		break
	}
	out := opts.Reuse
	if out == nil {
		out = new(Context)
	}
	out.reset(opts.Budget, f.Name(), c.Name())
	// The step that did not fit, truncated to fill the budget: on request,
	// and by default when nothing newer is shown.
	var filler *entry
	if stop >= 0 && budget > 0 && (opts.TruncateToFill || (!ft.kept && !opts.DropOversizedNewest)) {
		if a, ok := v.entries[stop].step.(*ActionStep); ok {
			if t, r := fitTruncated(a, v.entries[stop].render(f, c, ro).total, budget-ft.used, f, c, ro); t != nil {
				filler = &entry{step: t, renders: []rendered{r}}
				ft.used += r.total
				out.NewestTruncated = !ft.kept
			}
		}
	}
	v.assemble(out, ft, question, stop, filler)
	copyMessages(out, f, c, ro)
	assembled, delta := f.Assemble(out.Messages, c)
	out.Messages = assembled
	out.Tokens = ft.used + delta
	out.delta = delta
	return out, nil
}

// assemble lists what a fit chose in out, in the view's order. First come
// the pinned steps before the window, with the question of a turn shown in
// part and the filler among them. The filler is the truncated copy of the
// step at index stop. Then come the window, and the runs of steps dropped
// between them.
func (v workingView) assemble(out *Context, ft *fitting, question, stop int, filler *entry) {
	addEntry := func(e *entry) {
		out.shown = append(out.shown, e)
		if e.step.Kind() == KindFinalAnswer {
			for _, i := range ft.muted {
				if v.entries[i] == e {
					out.muted = append(out.muted, e)
				}
			}
		}
		if s, ok := e.step.(*SummaryStep); ok {
			out.Summarized = append(out.Summarized, s.Covers...)
		}
	}
	for _, i := range v.waiting {
		a := v.entries[i].step.(*ActionStep)
		out.Pending = append(out.Pending, PendingAction{Step: a.Number, ToolCallIDs: a.Unanswered()})
	}
	// Runs of dropped steps (pending actions there are not dropped steps:
	// they split the runs).
	wi := 0
	dropRun := func(from, to int) {
		for from <= to {
			for wi < len(v.waiting) && v.waiting[wi] < from {
				wi++
			}
			end := to
			if wi < len(v.waiting) && v.waiting[wi] <= to {
				end = v.waiting[wi] - 1
			}
			if end >= from {
				out.Dropped = append(out.Dropped, DroppedRun{
					First: v.entries[from].step.Info().Number,
					Last:  v.entries[end].step.Info().Number,
					Count: end - from + 1,
				})
				out.DroppedSteps += end - from + 1
			}
			from = end + 2 // past the pending action
		}
	}
	// The steps shown before the window, ascending: the pinned ones, the
	// question and the filler (neither of which is pinned).
	head := out.head[:0]
	for _, p := range v.pinned {
		if p >= ft.start {
			break
		}
		head = append(head, p)
	}
	insert := func(i int) {
		at, _ := slices.BinarySearch(head, i)
		head = slices.Insert(head, at, i)
	}
	if question >= 0 {
		insert(question)
	}
	if filler != nil {
		insert(stop)
	}
	out.head = head
	next := 0 // next index not yet accounted for
	for _, i := range head {
		if i > next {
			dropRun(next, i-1)
		}
		if i == stop {
			addEntry(filler)
			out.Truncated = append(out.Truncated, filler.step.Info().Number)
		} else {
			addEntry(v.entries[i])
		}
		next = i + 1
	}
	if ft.start > next {
		dropRun(next, ft.start-1)
	}
	wi = 0
	for i := ft.start; i < len(v.entries); i++ {
		for wi < len(v.waiting) && v.waiting[wi] < i {
			wi++
		}
		if wi < len(v.waiting) && v.waiting[wi] == i {
			continue
		}
		addEntry(v.entries[i])
	}
}

// copyMessages fills out.Messages and out.Steps with copies of the cached
// messages of out.shown, deep enough that callers may modify them. Parts
// and tool calls are carved out of one slice each, rather than allocated
// per message; that slice is out's own storage when it is reused. So a
// render allocates little, or nothing once its storage has grown.
func copyMessages(out *Context, f Format, c tokenizer.Counter, ro RenderOptions) {
	nMsgs, nParts, nCalls := 0, 0, 0
	for _, e := range out.shown {
		if slices.Contains(out.muted, e) {
			continue
		}
		for _, m := range e.render(f, c, ro).msgs {
			nMsgs++
			nParts += len(m.Content)
			nCalls += len(m.ToolCalls)
		}
	}
	msgs := grow(out.Messages, nMsgs)
	parts := grow(out.parts, nParts)
	calls := grow(out.calls, nCalls)
	steps := grow(out.Steps, len(out.shown))
	for _, e := range out.shown {
		steps = append(steps, e.step.Info().Number)
		if slices.Contains(out.muted, e) {
			continue
		}
		for _, m := range e.render(f, c, ro).msgs {
			if m.Content != nil {
				at := len(parts)
				parts = append(parts, m.Content...)
				m.Content = parts[at:len(parts):len(parts)]
				for j := range m.Content {
					m.Content[j] = clonePart(m.Content[j])
				}
			}
			if m.ToolCalls != nil {
				at := len(calls)
				calls = append(calls, m.ToolCalls...)
				m.ToolCalls = calls[at:len(calls):len(calls)]
			}
			m.AgentCalls = cloneSlice(m.AgentCalls)
			m.Data = cloneSlice(m.Data)
			m.Metadata = cloneMap(m.Metadata)
			msgs = append(msgs, m)
		}
	}
	out.Messages, out.parts, out.calls, out.Steps = msgs, parts, calls, steps
}

// grow returns s emptied, with room for n elements.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	clear(s[:cap(s)])
	return s[:0]
}

// trailingAnswers returns the indexes, newest first, of the final answers
// that end entries. After such an answer no step renders a message but a
// pending action, which contexts leave out. They render nothing: a final
// answer is the run's output, and a request that ended with it would ask
// the model to continue its own answer.
func trailingAnswers(entries []*entry, f Format, c tokenizer.Counter, ro RenderOptions) []int {
	var idx []int
	for i := len(entries) - 1; i >= 0; i-- {
		s := entries[i].step
		switch {
		case IsPending(s):
		case s.Kind() == KindFinalAnswer:
			idx = append(idx, i)
		case len(entries[i].render(f, c, ro).msgs) > 0:
			return idx
		}
	}
	return idx
}

// fitTruncated returns a copy of a whose observations are truncated so
// that it costs at most room tokens, and its rendering. It returns nil if
// even an empty observation does not fit or the step has nothing to
// truncate. full is what a costs whole (more than room).
//
// It looks for the largest per-observation byte limit that fits, a limit
// whose successor does not. It counts only the truncated step at each
// probe. A step's cost grows about linearly with the limit. So each probe
// is where the line through the two ends of the bracket meets room (false
// position). It bisects instead once the ends are a token apart, or after
// as many probes as a bisection would take, so that there are at most
// twice as many. On realistic steps that takes fewer probes than a
// bisection (TestFitTruncated), each a count of a step of about the final
// size.
func fitTruncated(a *ActionStep, full, room int, f Format, c tokenizer.Counter, ro RenderOptions) (*ActionStep, rendered) {
	longest := len(a.Observation)
	for _, r := range a.Results {
		longest = max(longest, len(r.Content))
	}
	if longest == 0 || room <= 0 {
		return nil, rendered{}
	}
	// The probes count ever shorter cuts of the same texts. A chunk cache
	// tokenizes each shared chunk once.
	c = tokenizer.ChunkCache(c)
	cost := func(limit int) int { return renderStep(a.Truncate(limit), f, c, ro).total }
	lo, hi := 0, longest // lo fits; hi, the whole step, does not
	costLo, costHi := cost(lo), full
	if costLo > room {
		return nil, rendered{}
	}
	// False position converges in a few probes on a cost that is about
	// linear, and could take many on one that is not. After as many probes
	// as a bisection takes, it bisects.
	interpolate := bits.Len(uint(longest))
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if costHi-costLo > 1 && interpolate > 0 {
			interpolate--
			// Where the line through the bracket's ends reaches room,
			// a little inside it: the cost rises by steps of a token.
			at := (float64(room-costLo) + 0.5) / float64(costHi-costLo) * float64(hi-lo)
			mid = lo + min(max(int(at), 1), hi-lo-1)
		}
		if m := cost(mid); m <= room {
			lo, costLo = mid, m
		} else {
			hi, costHi = mid, m
		}
	}
	if lo == 0 {
		return nil, rendered{} // nothing of the observations would show
	}
	t := a.Truncate(lo)
	return t, renderStep(t, f, c, ro) // every chunk counted already
}

// strategyView applies a strategy to a copy of the working set. It returns
// a view of the result that reuses the memory's caches for unchanged
// steps.
func (m *workingSet) strategyView(ctx context.Context, s Strategy, f Format, c tokenizer.Counter) (workingView, error) {
	in, byStep, _ := m.cloneForStrategy()
	env := m.env(in, byStep, f, c)
	out, err := s.Apply(ctx, slices.Clone(in), env)
	if err != nil {
		return workingView{}, err
	}
	if out, err = orderResult(in, out, func(s Step) bool { _, ok := byStep[s]; return ok }); err != nil {
		return workingView{}, err
	}
	v := workingView{entries: make([]*entry, 0, len(out))}
	for i, st := range out {
		if e, ok := byStep[st]; ok {
			v.entries = append(v.entries, e)
			continue
		}
		if err := st.Validate(); err != nil {
			return workingView{}, fmt.Errorf("strategy result[%d]: %w", i, err)
		}
		v.entries = append(v.entries, &entry{step: st})
	}
	v.layout = m.pin.layoutOf(v.entries)
	return v, nil
}
