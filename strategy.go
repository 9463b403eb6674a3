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
	pinned  map[Step]bool
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
// of the steps the strategy was given. Strategies should keep pinned steps.
func (e *Env) Pinned(s Step) bool {
	if e != nil && e.pinned != nil {
		return e.pinned[s]
	}
	return s.Kind() == KindSystemPrompt
}

// env builds the Env for a strategy run over clones of the working set.
func (m *Memory) env(in []Step, byStep map[Step]*entry, f Format, c tokenizer.Counter) *Env {
	e := &Env{now: m.now(), format: f, counter: c, pinned: make(map[Step]bool)}
	e.cost = func(s Step) (int, bool) {
		if en, ok := byStep[s]; ok {
			return en.render(f, c, RenderOptions{}).total, true
		}
		return 0, false
	}
	seenTask := false
	for _, s := range in {
		switch s.Kind() {
		case KindSystemPrompt:
			e.pinned[s] = true
		case KindTask:
			if !seenTask {
				e.pinned[s], seenTask = true, true
			}
		}
	}
	return e
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
