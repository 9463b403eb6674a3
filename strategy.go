package agentmem

import (
	"context"
	"time"

	"github.com/agentmem/agentmem/tokenizer"
)

// A Strategy selects and compresses steps: given the working set, it
// returns the steps to keep. It may leave steps out, or replace a step
// with a modified copy (same number and ID, for example from
// ActionStep.Truncate). It may insert new steps with no ID, such as a
// SummaryStep. It must not modify the steps it is given: they are copies,
// and changes made to them in place are ignored.
//
// Order: the working set, and every context rendered from it, keeps its
// steps in the order they were added, whatever order a strategy returns
// them in. A tool result, a later task or a reply only makes sense after
// what came before it. A result that only reorders the steps it keeps is
// accepted and put back in that order; the seeds' custom strategies return
// the system prompt and task first. New steps go where the strategy put
// them among the kept ones. So a result that both inserts new steps and
// reorders kept ones is refused. So is one that repeats a step or holds a
// step with an ID that is not in the working set. Memory.Prune and
// Memory.Context then return a *StrategyError.
//
// Strategies compose with Chain, and a custom strategy is one function
// wrapped in StrategyFunc.
type Strategy interface {
	Apply(ctx context.Context, steps []Step, env *Env) ([]Step, error)
}

// StrategyFunc adapts a function to the Strategy interface.
type StrategyFunc func(ctx context.Context, steps []Step, env *Env) ([]Step, error)

// Apply implements Strategy.
func (f StrategyFunc) Apply(ctx context.Context, steps []Step, env *Env) ([]Step, error) {
	return f(ctx, steps, env)
}

// Env is what a strategy may know about the memory it runs in. That is the
// time, the token cost of a step under the memory's format and counter
// (cached for the memory's own steps), and which steps are pinned. A nil
// *Env is valid: it reads the system clock, counts with o200k_base in
// OpenAI format, and pins system prompts and the first task.
type Env struct {
	now     time.Time
	format  Format
	counter tokenizer.Counter
	cost    func(Step) (int, bool)
	// pinning is the rule pins came from. When the Env knows no working set,
	// it is the rule to apply to the steps a strategy is given.
	pinning *Pinning
	// pins holds the (number, ID) of the pinned steps of the working set the
	// strategy runs on. It is nil when the Env knows no working set.
	pins map[stepKey]bool
	// target is what a policy's compaction aims the working set at, in
	// tokens (Target).
	target int
}

// stepKey identifies a step across copies: modified copies keep the
// number and ID of the step they replace.
type stepKey struct {
	number int
	id     string
}

func keyOf(s Step) stepKey {
	i := s.Info()
	return stepKey{i.Number, i.ID}
}

// EnvOptions configures NewEnv.
type EnvOptions struct {
	Now     time.Time         // zero means time.Now()
	Format  Format            // nil means OpenAI
	Counter tokenizer.Counter // nil means o200k_base
	// Pinning, when set, is the pinning the built-in strategies apply to
	// the steps they are given; nil means DefaultPinning.
	Pinning *Pinning
}

// NewEnv returns an Env for applying strategies outside a Memory.
func NewEnv(opts EnvOptions) *Env {
	e := &Env{now: opts.Now, format: opts.Format, counter: opts.Counter}
	if opts.Pinning != nil {
		p := *opts.Pinning
		e.pinning = &p
	}
	return e.withDefaults()
}

func (e *Env) withDefaults() *Env {
	if e.now.IsZero() {
		e.now = time.Now()
	}
	if e.format == nil {
		e.format = OpenAI
	}
	if e.counter == nil {
		e.counter = tokenizer.Default()
	}
	return e
}

// Now returns the time the strategy runs at.
func (e *Env) Now() time.Time {
	if e == nil || e.now.IsZero() {
		return time.Now()
	}
	return e.now
}

// Format returns the format costs are measured in.
func (e *Env) Format() Format {
	if e == nil || e.format == nil {
		return OpenAI
	}
	return e.format
}

// Counter returns the counter costs are measured with.
func (e *Env) Counter() tokenizer.Counter {
	if e == nil || e.counter == nil {
		return (&Env{}).withDefaults().counter
	}
	return e.counter
}

// Target returns the size, in tokens, that the strategy should bring the
// working set to or below, or 0 when there is none. A Policy with a token
// limit runs its strategy with its TargetTokens. So a compaction makes
// room for a stretch of growth rather than for the next step only.
// Strategies that can choose how much to compact (Summarize) aim at it;
// others ignore it.
func (e *Env) Target() int {
	if e == nil {
		return 0
	}
	return e.target
}

// Tokens returns the cost of rendering s (its messages, without reply
// priming).
func (e *Env) Tokens(s Step) int {
	if e != nil && e.cost != nil {
		if n, ok := e.cost(s); ok {
			return n
		}
	}
	return renderStep(s, e.Format(), e.Counter(), RenderOptions{}).total
}

// Pinned reports whether s is pinned under the memory's pinning, or is a
// modified copy of a pinned step: pins follow a step's number and ID. The
// pinning is Options.Pinning; by default it pins a system prompt, or the
// first task of the working set. Strategies should keep pinned steps. An
// Env that knows no working set (nil, or from NewEnv) pins the kinds its
// pinning names: by default system prompts and every task. The built-in
// strategies then apply the pinning to the steps they are given, pinning
// only the first of their tasks.
func (e *Env) Pinned(s Step) bool {
	switch {
	case e == nil || e.pins == nil:
		p := e.pinRule()
		return p.pinsKind(s.Kind(), s.Kind() == KindTask && !p.FirstTask)
	case s.Info().ID == "":
		return false // a new step a strategy made
	}
	return e.pins[keyOf(s)]
}

// pinRule returns the Env's pinning, DefaultPinning when it has none.
func (e *Env) pinRule() Pinning {
	if e == nil || e.pinning == nil {
		return DefaultPinning
	}
	return *e.pinning
}

// headPinning pins the head of a run: its system prompts and its first
// task. It is the rule PinnedFlags and PinnedKinds apply.
var headPinning = Pinning{SystemPrompts: true, FirstTask: true}

// PinnedFlags flags the head of a run among a list of steps: every system
// prompt and the first task. These are the steps a compaction record must
// keep unless it names them removed (see PinnedKinds). DefaultPinning pins
// the newest summary besides, which a compaction replaces when it writes a
// new one.
func PinnedFlags(steps []Step) []bool {
	return headPinning.stepFlags(steps)
}

// PinnedKinds is PinnedFlags for the kinds of a list of steps, in order:
// every system prompt and the first task are pinned. A store checks a
// compaction with it, knowing the kinds of a working set's steps without
// decoding them.
func PinnedKinds(kinds []StepKind) []bool {
	return headPinning.Flags(kinds)
}

// withPins returns a copy of e that pins exactly the flagged steps.
func (e *Env) withPins(steps []Step, flags []bool) *Env {
	var d Env
	if e != nil {
		d = *e
	} else {
		d = *NewEnv(EnvOptions{})
	}
	d.pins = make(map[stepKey]bool)
	for i, s := range steps {
		if flags[i] {
			d.pins[keyOf(s)] = true
		}
	}
	return &d
}

// env builds the Env for a strategy run over clones of the working set.
func (m *workingSet) env(in []Step, byStep map[Step]*entry, f Format, c tokenizer.Counter) *Env {
	pin := m.pin
	e := &Env{now: m.now(), format: f, counter: c, pinning: &pin}
	e.cost = func(s Step) (int, bool) {
		if en, ok := byStep[s]; ok {
			return en.render(f, c, RenderOptions{}).total, true
		}
		return 0, false
	}
	return e.withPins(in, m.pin.stepFlags(in))
}

// Chain applies strategies in order, each to the output of the one before.
func Chain(strategies ...Strategy) Strategy {
	return StrategyFunc(func(ctx context.Context, steps []Step, env *Env) ([]Step, error) {
		var err error
		for _, s := range strategies {
			if s == nil {
				continue
			}
			if steps, err = s.Apply(ctx, steps, env); err != nil {
				return nil, err
			}
		}
		return steps, nil
	})
}

// NoPruning returns the steps unchanged.
func NoPruning() Strategy {
	return StrategyFunc(func(_ context.Context, steps []Step, _ *Env) ([]Step, error) {
		return steps, nil
	})
}
