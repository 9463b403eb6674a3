package agentmem

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/agentmem/tokenizer"
)

// Options configures a Memory. The zero value works. It means the OpenAI
// format, o200k_base token counts, the system clock and UUIDv7 step IDs.
// The system prompts, the first task and the newest summary are pinned. As
// the seeds' MemoryManager does, KeepRecent(DefaultKeepSteps) is applied
// past DefaultMaxSteps (1,000) steps.
//
// The seeds' MemoryManager(system_prompt, prune_strategy) is
// Options{SystemPrompt: ..., Prune: ...}. The prompt is the first step,
// and Memory.Prune(ctx, nil) applies the strategy. An add that takes the
// working set past DefaultMaxSteps (1,000) steps applies it too.
type Options struct {
	// Format is the default rendering format; nil means OpenAI.
	Format Format
	// Counter is the default token counter; nil means o200k_base.
	Counter tokenizer.Counter
	// Policy, when set, prunes the working set automatically after an add
	// makes it exceed the policy's limits. When it is nil, the policy is
	// Policy{MaxSteps: DefaultMaxSteps, Strategy: Prune}, as the seeds'
	// MemoryManager prunes past 1,000 steps. Give a Policy without limits
	// (&Policy{}) for no automatic pruning.
	Policy *Policy
	// Prune is the memory's default strategy: what Memory.Prune applies
	// when it is given none (the seeds' prune()). Nil means
	// KeepRecent(DefaultKeepSteps), the seeds' keep_last_n_steps(50) in
	// whole turns.
	Prune Strategy
	// SystemPrompt, when not empty, is added by New as the memory's first
	// step, a SystemPromptStep (invalid UTF-8 in it is replaced by
	// U+FFFD). With a Journal, New adds nothing, since the journal's
	// session has steps of its own: store.CreateMemory adds the prompt to
	// the session it creates.
	SystemPrompt string
	// Pinning chooses the steps that are pinned: always shown by Context
	// and kept by the built-in strategies. Nil means DefaultPinning (the
	// system prompts and the first task); &Pinning{} pins nothing.
	Pinning *Pinning
	// Clock returns the current time; nil means time.Now. Step times,
	// age-based pruning and the strategies' Env read it.
	Clock func() time.Time
	// NewID returns a new step ID; nil means NewID.
	NewID func() string
	// Journal, when set, durably records every add and compaction before
	// the memory changes, and numbers the steps (see Journal).
	Journal Journal
	// OnCompact, when set, is called after every change to the working set
	// that removes or replaces steps: Prune, TrimToFit, SetSummary and
	// automatic pruning. It gets the compaction, or the error that stopped
	// an automatic one. A store uses it to record compactions in its log.
	OnCompact func(*Compaction, error)
}

// DefaultMaxSteps is the number of steps past which a memory with no
// Policy prunes itself with its default strategy (Options.Prune). It is
// the seeds' automatic prune past 1,000 steps.
const DefaultMaxSteps = 1000

// DefaultKeepSteps is the number of unpinned steps the default strategy,
// KeepRecent, keeps (rounded up to whole turns): the seeds'
// keep_last_n_steps(50).
const DefaultKeepSteps = 50

// Policy triggers automatic pruning. After an add, Strategy is applied if
// the working set has more than MaxSteps steps, or if its full rendering
// (default format and counter) costs more than MaxTokens. A zero limit is
// not checked.
//
// MaxTokens is a trigger, and TargetTokens the low-water mark the
// compaction aims at (Env.Target). A compaction that brought the working
// set just under the trigger would run again on the next add. With an LLM
// summarizer that is one more model call per step. Aiming lower, a policy
// compacts once per MaxTokens − TargetTokens tokens of growth.
type Policy struct {
	MaxSteps  int
	MaxTokens int
	// TargetTokens is the size a compaction triggered by MaxTokens aims
	// at; zero means DefaultTargetShare of MaxTokens. It must be below
	// MaxTokens.
	TargetTokens int
	Strategy     Strategy
}

// DefaultTargetShare is the share of Policy.MaxTokens a compaction aims
// at when Policy.TargetTokens is zero: half.
const DefaultTargetShare = 0.5

// target returns the policy's TargetTokens, or its default; 0 without a
// token limit.
func (p *Policy) target() int {
	switch {
	case p == nil || p.MaxTokens <= 0:
		return 0
	case p.TargetTokens > 0 && p.TargetTokens < p.MaxTokens:
		return p.TargetTokens
	}
	return int(float64(p.MaxTokens) * DefaultTargetShare)
}

// Memory is an agent's short-term memory: the ordered working set of steps
// of one run, rendered to messages on demand. It is safe for concurrent
// use.
//
// The working set is what pruning changes. Pruning never edits a step in
// place, and every compaction reports the steps it removed so a durable
// log can keep them.
type Memory struct {
	// workingSet holds the steps and answers what reads them: contexts,
	// renders, copies. A Replica shares it.
	workingSet

	policy  *Policy
	prune   Strategy
	newID   func() string
	onComp  func(*Compaction, error)
	journal Journal

	// wmu serializes writers (adds, compactions, clears, restores), so a
	// journal write can run without holding mu, which readers take. The
	// working set and tokens change only with wmu and mu both held; a
	// writer holding wmu may read them without mu.
	wmu    sync.Mutex
	tokens int // sum of default costs, maintained only when the policy has MaxTokens
}

// workingSet is a working set of numbered steps with their render caches,
// and the reads a Memory and a Replica share: Context, Steps, Tokens and
// the like. Its writers are theirs.
type workingSet struct {
	format  Format
	counter tokenizer.Counter
	pin     Pinning
	now     func() time.Time

	// mu guards what follows: readers take it for reading, writers for
	// writing.
	mu      sync.RWMutex
	entries []*entry
	next    int    // next step number: above every number in use
	epoch   uint64 // bumped by every change other than an append
	layout         // of entries
}

// init sets the working set's defaults: the OpenAI format, o200k_base
// counts, the system clock and DefaultPinning.
func (m *workingSet) init(f Format, c tokenizer.Counter, pin *Pinning, now func() time.Time) {
	m.format, m.counter, m.now, m.pin = f, c, now, DefaultPinning
	if m.format == nil {
		m.format = OpenAI
	}
	if m.counter == nil {
		m.counter = tokenizer.Default()
	}
	if m.now == nil {
		m.now = time.Now
	}
	if pin != nil {
		m.pin = *pin
	}
}

// entry is one step of the working set with its render cache.
type entry struct {
	step Step

	mu      sync.Mutex
	renders []rendered
}

// rendered caches a step's messages and their cost for one format,
// counter and render mode. A step is counted once per combination.
type rendered struct {
	format  string
	counter string
	summary bool
	msgs    []Message
	costs   []int
	total   int
}

// New returns an empty Memory.
func New(opts Options) *Memory {
	m := &Memory{
		policy:  opts.Policy,
		prune:   opts.Prune,
		newID:   opts.NewID,
		onComp:  opts.OnCompact,
		journal: opts.Journal,
	}
	m.init(opts.Format, opts.Counter, opts.Pinning, opts.Clock)
	if m.newID == nil {
		m.newID = NewID
	}
	if m.prune == nil {
		m.prune = KeepRecent(DefaultKeepSteps)
	}
	if m.policy == nil {
		m.policy = &Policy{MaxSteps: DefaultMaxSteps, Strategy: m.prune}
	}
	if opts.SystemPrompt != "" && m.journal == nil {
		s := &SystemPromptStep{Content: strings.ToValidUTF8(opts.SystemPrompt, "\uFFFD")}
		s.setInfo(StepInfo{ID: m.newID(), Time: m.now()})
		e := &entry{step: s}
		e.render(m.format, m.counter, RenderOptions{})
		m.appendLocked(e) // nobody else can see m yet
	}
	return m
}

// Pinning returns the working set's pinning (Options.Pinning,
// ReplicaOptions.Pinning).
func (m *workingSet) Pinning() Pinning { return m.pin }

// Format returns the default format.
func (m *workingSet) Format() Format { return m.format }

// Counter returns the default token counter.
func (m *workingSet) Counter() tokenizer.Counter { return m.counter }

// render returns the cached rendering of e, computing it on first use.
func (e *entry) render(f Format, c tokenizer.Counter, opts RenderOptions) *rendered {
	fn, cn := f.Name(), c.Name()
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.renders {
		r := &e.renders[i]
		if r.format == fn && r.counter == cn && r.summary == opts.SummaryMode {
			return r
		}
	}
	r := renderStep(e.step, f, c, opts)
	e.renders = append(e.renders, r)
	return &e.renders[len(e.renders)-1]
}

// renderStep renders and counts one step.
func renderStep(s Step, f Format, c tokenizer.Counter, opts RenderOptions) rendered {
	msgs := f.StepMessages(s, opts)
	r := rendered{format: f.Name(), counter: c.Name(), summary: opts.SummaryMode, msgs: msgs, costs: make([]int, len(msgs))}
	for i, msg := range msgs {
		r.costs[i] = MessageTokens(c, msg)
		r.total += r.costs[i]
	}
	return r
}

// newEntries returns entries for steps, each counted in the default form
// (f and c): a writer counts its steps before readers can see them, so
// that renders stay cache lookups.
func newEntries(steps []Step, f Format, c tokenizer.Counter) []*entry {
	entries := make([]*entry, len(steps))
	for i, s := range steps {
		entries[i] = &entry{step: s}
		entries[i].render(f, c, RenderOptions{})
	}
	return entries
}

// Add validates a step, appends a copy of it to the working set and
// returns the header it was stored with. The memory assigns the step
// number (any number set on the step is ignored) and fills in an empty ID
// and time. Invalid steps are refused with an error wrapping ErrInvalid
// and change nothing. If a Policy is set and the add exceeds it, the
// working set is pruned before Add returns. A failure of that pruning does
// not undo the add and is reported to Options.OnCompact.
func (m *Memory) Add(ctx context.Context, s Step) (StepInfo, error) {
	if s == nil {
		return StepInfo{}, invalidf("step", "is nil")
	}
	if err := s.Validate(); err != nil {
		return StepInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return StepInfo{}, err
	}
	m.wmu.Lock()
	infos, err := m.commit(ctx, []Step{s.clone()})
	trigger := err == nil && m.overPolicy()
	m.wmu.Unlock()
	if err != nil {
		return StepInfo{}, err
	}
	if trigger {
		m.autoPrune(ctx)
	}
	return infos[0], nil
}

// commit stamps validated, copied steps with IDs, times and numbers, and
// appends them to the working set. The numbers come from the journal when
// there is one, after it has recorded the steps. m.wmu must be held.
func (m *Memory) commit(ctx context.Context, steps []Step) ([]StepInfo, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	infos := make([]StepInfo, len(steps))
	for i, s := range steps {
		info := s.Info()
		if info.ID == "" {
			info.ID = m.newID()
		}
		if info.Time.IsZero() {
			info.Time = m.now()
		}
		info.Number = m.next + i
		s.setInfo(info)
		infos[i] = info
	}
	if m.journal != nil {
		numbers, err := m.journal.Append(ctx, steps)
		if err != nil {
			return nil, err
		}
		if len(numbers) != len(steps) {
			return nil, fmt.Errorf("agentmem: journal returned %d numbers for %d steps", len(numbers), len(steps))
		}
		for i, s := range steps {
			infos[i].Number = numbers[i]
			s.setInfo(infos[i])
		}
	}
	// Count the steps now, in the default format, before readers can see
	// them. The writer pays for counting once, and renders stay cache
	// lookups whose cost does not depend on the history.
	entries := newEntries(steps, m.format, m.counter)
	m.mu.Lock()
	for _, e := range entries {
		m.appendLocked(e)
	}
	m.mu.Unlock()
	return infos, nil
}

// appendLocked appends a stamped step. m.mu and m.wmu must be held.
func (m *Memory) appendLocked(e *entry) {
	m.pushLocked(e)
	// A pending action costs nothing until it is complete: contexts leave
	// it out.
	if !IsPending(e.step) && m.policy != nil && m.policy.MaxTokens > 0 {
		m.tokens += e.render(m.format, m.counter, RenderOptions{}).total
	}
}

// pushLocked appends a numbered step to the working set. m.mu must be
// held for writing.
func (m *workingSet) pushLocked(e *entry) {
	s := e.step
	m.next = max(m.next, s.Info().Number+1)
	m.entries = append(m.entries, e)
	i := len(m.entries) - 1
	if m.pinsNext(s.Kind()) {
		if s.Kind() == KindSummary {
			// Only the newest summary is pinned.
			m.pinned = slices.DeleteFunc(m.pinned, func(j int) bool { return m.entries[j].step.Kind() == KindSummary })
		}
		m.pinned = append(m.pinned, i)
	}
	if StartsTurn(s) {
		m.turns = append(m.turns, i)
	}
	if IsPending(s) {
		m.waiting = append(m.waiting, i)
	}
}

// pinsNext reports whether a step of this kind appended now is pinned
// (Options.Pinning).
func (m *workingSet) pinsNext(k StepKind) bool {
	hasTask := false
	if k == KindTask && m.pin.FirstTask && !m.pin.Tasks {
		// With FirstTask, the working set's first task, if any, is pinned.
		for _, i := range m.pinned {
			if m.entries[i].step.Kind() == KindTask {
				hasTask = true
				break
			}
		}
	}
	return m.pin.pinsKind(k, hasTask)
}

// overPolicy reports whether the working set exceeds the policy. m.wmu
// (or m.mu) must be held.
func (m *Memory) overPolicy() bool {
	p := m.policy
	if p == nil || p.Strategy == nil {
		return false
	}
	return (p.MaxSteps > 0 && len(m.entries) > p.MaxSteps) ||
		(p.MaxTokens > 0 && m.tokens+ReplyPriming > p.MaxTokens)
}

// ApplyPolicy compacts the working set now if it exceeds the memory's
// Policy, as an add that took it past the policy would. It returns the
// compaction, one that changed nothing when the working set is within the
// policy. A memory loaded from a log (a store's bound memory) may hold
// more than its policy allows without an add to trigger it. A server's
// automatic compaction, which runs apart from the appends, calls it.
func (m *Memory) ApplyPolicy(ctx context.Context) (*Compaction, error) {
	m.wmu.Lock()
	over := m.overPolicy()
	n := len(m.entries)
	m.wmu.Unlock()
	if !over {
		return &Compaction{Before: n, After: n}, nil
	}
	return m.pruneTo(ctx, m.policy.Strategy, m.policy.target())
}

// autoPrune applies the policy's strategy. Prune reports the outcome to
// Options.OnCompact; a conflict means another compaction just ran, which
// is what the policy wanted anyway.
func (m *Memory) autoPrune(ctx context.Context) {
	_, _ = m.pruneTo(ctx, m.policy.Strategy, m.policy.target())
}

// Len returns the number of steps in the working set.
func (m *workingSet) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.entries)
}

// NextNumber returns the number the next added step will get: one past
// the highest number the working set's steps have had. A Memory gives it
// to the next step Add adds (with no Journal); a Replica's Put takes no
// lower number.
func (m *workingSet) NextNumber() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.next
}

// Steps returns copies of the steps of the working set, in order.
func (m *workingSet) Steps() []Step {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Step, len(m.entries))
	for i, e := range m.entries {
		out[i] = e.step.clone()
	}
	return out
}

// StepEnds returns copies of the first head and the last tail steps of the
// working set, at once, and the number of steps left out between them. So
// a caller gets the ends of a long working set without copying all of it.
// When they would overlap, first holds every step, last none and omitted
// is 0.
func (m *workingSet) StepEnds(head, tail int) (first, last []Step, omitted int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := len(m.entries)
	head, tail = max(head, 0), max(tail, 0)
	if head+tail >= n {
		head, tail = n, 0
	}
	clone := func(es []*entry) []Step {
		out := make([]Step, len(es))
		for i, e := range es {
			out[i] = e.step.clone()
		}
		return out
	}
	return clone(m.entries[:head]), clone(m.entries[n-tail:]), n - head - tail
}

// Step returns a copy of the step with the given number, if it is in the
// working set.
func (m *workingSet) Step(number int) (Step, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if i := m.indexOf(number); i >= 0 {
		return m.entries[i].step.clone(), true
	}
	return nil, false
}

// indexOf finds the entry with step number n. Numbers increase along the
// working set except where a summary was inserted, so a binary search is
// tried first and a scan is the fallback. A number from m.next on is no
// step's yet, since every number in use is below it. A Replica's Put
// asks that before each step it adds, and it is answered without the
// scan.
func (m *workingSet) indexOf(n int) int {
	if n >= m.next {
		return -1
	}
	lo, hi := 0, len(m.entries)
	for lo < hi {
		mid := (lo + hi) / 2
		if m.entries[mid].step.Info().Number < n {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(m.entries) && m.entries[lo].step.Info().Number == n {
		return lo
	}
	for i, e := range m.entries {
		if e.step.Info().Number == n {
			return i
		}
	}
	return -1
}

// StepsOf returns copies of the steps of type T in the working set, in
// order; for example StepsOf[*agentmem.ActionStep](m).
func StepsOf[T Step](m *Memory) []T {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []T
	for _, e := range m.entries {
		if _, ok := e.step.(T); ok {
			out = append(out, e.step.clone().(T))
		}
	}
	return out
}

// ActionCount returns the number of action steps in the working set.
func (m *workingSet) ActionCount() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := 0
	for _, e := range m.entries {
		if e.step.Kind() == KindAction {
			n++
		}
	}
	return n
}

// Clear empties the working set, including a pending action of the
// message-level API. Step numbers keep increasing after a Clear. With a
// journal, the clearing is recorded as a compaction that removes every
// step (the log keeps them); a journal error leaves the memory unchanged.
func (m *Memory) Clear(ctx context.Context) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if m.journal != nil {
		removed := make([]int, len(m.entries))
		for i, e := range m.entries {
			removed[i] = e.step.Info().Number
		}
		if _, err := m.journal.Compact(ctx, JournalCompaction{Removed: removed}); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = nil
	m.layout = layout{}
	m.tokens = 0
	m.epoch++
	return nil
}

// Messages renders the whole working set in the memory's default format,
// with no budget: the seeds' to_messages(). Pending actions are left out,
// as Context leaves them out, and so is a final answer that ends the
// working set (see FinalAnswerStep).
func (m *workingSet) Messages(opts RenderOptions) []Message {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var msgs []Message
	muted := trailingAnswers(m.entries, m.format, m.counter, opts)
	for i, e := range m.entries {
		if IsPending(e.step) || slices.Contains(muted, i) {
			continue
		}
		for _, msg := range e.render(m.format, m.counter, opts).msgs {
			msgs = append(msgs, msg.Clone())
		}
	}
	out, _ := m.format.Assemble(msgs, m.counter)
	return out
}

// Tokens returns the cost of rendering the whole working set in the
// default format, reply priming included. Pending actions cost nothing,
// and so does a final answer that ends the working set; contexts leave
// them out.
func (m *workingSet) Tokens() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := ReplyPriming
	muted := trailingAnswers(m.entries, m.format, m.counter, RenderOptions{})
	for i, e := range m.entries {
		if IsPending(e.step) || slices.Contains(muted, i) {
			continue
		}
		n += e.render(m.format, m.counter, RenderOptions{}).total
	}
	return n
}

// Summary returns the text of the newest summary step in the working set,
// or "" if there is none.
func (m *workingSet) Summary() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i := len(m.entries) - 1; i >= 0; i-- {
		if s, ok := m.entries[i].step.(*SummaryStep); ok {
			return s.Summary
		}
	}
	return ""
}
