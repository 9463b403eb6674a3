package agentmem

import (
	"context"
	"time"

	"github.com/agentmem/agentmem/tokenizer"
)

// A Strategy selects and compresses steps: given the working set, it
// returns the steps to keep, in their original order. It may leave steps
// out, replace a step with a modified copy (same number and ID, for example
// from ActionStep.Truncate) or insert new steps with no ID, such as a
// SummaryStep. It must not modify the steps it is given: they are copies,
// and changes made to them in place are ignored.
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

// Env is what a strategy may know about the memory it runs in: the time,
// the token cost of a step under the memory's format and counter (cached
// for the memory's own steps), and which steps are pinned. A nil *Env is
// valid: it reads the system clock, counts with o200k_base in OpenAI format,
// and pins system prompts and the first task.
type Env struct {
	now     time.Time
	format  Format
	counter tokenizer.Counter
	cost    func(Step) (int, bool)
	// pins holds the (number, ID) of the pinned steps of the working set
	// the strategy runs on; nil when the Env knows no working set.
	pins map[stepKey]bool
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
}

// NewEnv returns an Env for applying strategies outside a Memory.
func NewEnv(opts EnvOptions) *Env {
	e := &Env{now: opts.Now, format: opts.Format, counter: opts.Counter}
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
		c, err := tokenizer.Get(tokenizer.O200kBase)
		if err != nil {
			c = tokenizer.NewHeuristic()
		}
		e.counter = c
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

// Pinned reports whether s is pinned: a system prompt, or the first task
// of the memory's working set (or a modified copy of it: pins follow a
// step's number and ID). Strategies should keep pinned steps. An Env that
// knows no working set (nil, or from NewEnv) pins system prompts and every
// task; the built-in strategies then pin the first task of the steps they
// are given.
func (e *Env) Pinned(s Step) bool {
	switch {
	case s.Kind() == KindSystemPrompt:
		return true
	case e == nil || e.pins == nil:
		return s.Kind() == KindTask
	case s.Info().ID == "":
		return false // a new step a strategy made
	}
	return e.pins[keyOf(s)]
}

// PinnedFlags applies the pinning rule to a list of steps: every system
// prompt and the first task are pinned.
func PinnedFlags(steps []Step) []bool {
	kinds := make([]StepKind, len(steps))
	for i, s := range steps {
		kinds[i] = s.Kind()
	}
	return PinnedKinds(kinds)
}

// PinnedKinds is PinnedFlags for the kinds of a list of steps, in order:
// every system prompt and the first task are pinned. A store checks a
// compaction with it, knowing the kinds of a working set's steps without
// decoding them.
func PinnedKinds(kinds []StepKind) []bool {
	flags := make([]bool, len(kinds))
	seenTask := false
	for i, k := range kinds {
		switch k {
		case KindSystemPrompt:
			flags[i] = true
		case KindTask:
			if !seenTask {
				flags[i], seenTask = true, true
			}
		}
	}
	return flags
}

// withPins returns a copy of e that pins exactly the flagged steps (and
// system prompts).
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
func (m *Memory) env(in []Step, byStep map[Step]*entry, f Format, c tokenizer.Counter) *Env {
	e := &Env{now: m.now(), format: f, counter: c}
	e.cost = func(s Step) (int, bool) {
		if en, ok := byStep[s]; ok {
			return en.render(f, c, RenderOptions{}).total, true
		}
		return 0, false
	}
	return e.withPins(in, PinnedFlags(in))
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
