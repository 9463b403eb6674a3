package proxy

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// A request the proxy refuses changes nothing. Everything that can refuse
// it is checked before the first write: creating its session, amending the
// system prompt, popping, appending. What depends on the request alone is
// checked first: its headers, body and messages, the budget, facts without
// a user. What depends on the session too is checked on what the request
// would make of it, without writing. The steps the session would pin must
// fit the budget, else 422 budget_too_small, as the context would fail.
// For a session the request would create, its messages must make valid
// steps.

// fitCheck is what a request's context is fitted to.
type fitCheck struct {
	format  agentmem.Format
	counter tokenizer.Counter
	// fit is the budget the steps are fitted to (the request's less
	// what facts and recalled turns take): what the pinned steps must
	// fit.
	fit int
	// pin is the session's pinning (store.Session.EffectivePinning), or
	// the one a request that creates it gives it.
	pin agentmem.Pinning
}

// stepCost is what a step costs in the context, as the memory counts it.
func (fc *fitCheck) stepCost(s agentmem.Step) int {
	n := 0
	for _, m := range fc.format.StepMessages(s, agentmem.RenderOptions{}) {
		n += agentmem.MessageTokens(fc.counter, m)
	}
	return n
}

// refuse returns the error of a context whose pinned steps need more
// than the budget, as the context would fail.
func (fc *fitCheck) refuse(need int) error {
	if need <= fc.fit {
		return nil
	}
	return &agentmem.BudgetError{Budget: fc.fit, Required: need}
}

// pinnedNeed returns what the session's pinned steps need now, reply
// priming included: a context of one token fails saying so.
func (p *Proxy) pinnedNeed(ctx context.Context, tenant, sid string, fc *fitCheck) (int, error) {
	_, err := p.svc.Context(ctx, sessions.ContextRequest{Tenant: tenant, SessionID: sid, Budget: 1, Format: fc.format.Name(), Counter: fc.counter})
	var be *agentmem.BudgetError
	if errors.As(err, &be) {
		return be.Required, nil
	}
	if err != nil {
		return 0, err
	}
	return agentmem.ReplyPriming, nil
}

// addedNeed returns what the steps of messages appended to a working set
// would add to its pinned steps' need. hasTask says whether the working
// set has a task.
func (fc *fitCheck) addedNeed(msgs []agentmem.Message, hasTask bool) (int, error) {
	n := 0
	for _, m := range msgs {
		kind := agentmem.KindSystemPrompt
		switch m.Role {
		case agentmem.RoleSystem:
		case agentmem.RoleUser:
			kind = agentmem.KindTask
		default:
			continue
		}
		// The pinning of a step of that kind after one task, or none.
		kinds := []agentmem.StepKind{kind}
		if hasTask {
			kinds = []agentmem.StepKind{agentmem.KindTask, kind}
		}
		flags := fc.pin.Flags(kinds)
		hasTask = hasTask || kind == agentmem.KindTask
		if !flags[len(flags)-1] {
			continue
		}
		f, err := agentmem.FoldMessages(nil, []agentmem.Message{m}, agentmem.FoldOptions{KeepPending: true})
		if err != nil {
			return 0, err
		}
		for _, s := range f.Steps {
			n += fc.stepCost(s)
		}
	}
	return n, nil
}

// needsTask reports whether what messages add to the pinned steps
// depends on whether the working set has a task.
func (fc *fitCheck) needsTask(msgs []agentmem.Message) bool {
	if !fc.pin.FirstTask || fc.pin.Tasks {
		return false
	}
	for _, m := range msgs {
		if m.Role == agentmem.RoleUser {
			return true
		}
	}
	return false
}

// hasTask reports whether a working set has a task, given its first steps
// (all of them unless partial). It reads the working set whole only when
// they do not tell.
func (p *Proxy) hasTask(ctx context.Context, tenant, sid string, head []agentmem.Step, partial bool) (bool, error) {
	for _, s := range head {
		if s.Kind() == agentmem.KindTask {
			return true, nil
		}
	}
	if !partial {
		return false, nil
	}
	h, err := p.svc.History(ctx, sessions.HistoryRequest{Tenant: tenant, SessionID: sid})
	if err != nil {
		return false, err
	}
	return p.hasTask(ctx, tenant, sid, h.Steps, false)
}

// checkNew checks a request that creates its session, on the steps its
// messages would make; all of them are appended. The steps must be valid
// for the store, and the pinned ones must fit the budget.
func (p *Proxy) checkNew(tenant, sid string, msgs []agentmem.Message, fc *fitCheck) error {
	if err := validAppend(tenant, sid, nil, msgs); err != nil {
		return err
	}
	f, err := agentmem.FoldMessages(nil, msgs, agentmem.FoldOptions{KeepPending: true})
	if err != nil {
		return err
	}
	kinds := make([]agentmem.StepKind, len(f.Steps))
	for i, s := range f.Steps {
		kinds[i] = s.Kind()
	}
	need := agentmem.ReplyPriming
	for i, pinned := range fc.pin.Flags(kinds) {
		if pinned {
			need += fc.stepCost(f.Steps[i])
		}
	}
	return fc.refuse(need)
}

// checkPlan checks a plan for a session (planHistory, planNewOnly) before
// it is carried out. The steps the session would pin after it must fit the
// budget. When the plan writes before it appends (it amends the system
// prompt, or pops), the messages it appends must make valid steps; an
// append alone that fails writes nothing. h is the working set the plan
// was made on, whole unless partial. A partial h holds its ends
// (sessions.Service.History with Head and Tail).
func (p *Proxy) checkPlan(ctx context.Context, tenant, sid string, h *sessions.History, partial bool, pl *plan, fc *fitCheck) error {
	need, err := p.pinnedNeed(ctx, tenant, sid, fc)
	if err != nil {
		return err
	}
	if pl.system != nil && fc.pin.SystemPrompts {
		for i, s := range pl.systemSteps {
			c := *s
			c.Content = ""
			if i == 0 {
				c.Content = *pl.system
			}
			need += fc.stepCost(&c) - fc.stepCost(s)
		}
	}
	steps, left := h.Steps, pl.held
	if pl.rule == ruleRewind {
		// The pops recordOnce makes, on a copy; planHistory had the whole
		// working set. A tool result leaves its action in the working set
		// without it; any other message takes its step.
		kinds := make([]agentmem.StepKind, len(steps))
		for i, s := range steps {
			kinds[i] = s.Kind()
		}
		flags := fc.pin.Flags(kinds)
		steps = slices.Clone(steps)
		for left > pl.from && len(steps) > 0 {
			i := len(steps) - 1
			if _, rest := agentmem.PopMessage(steps[i]); rest != nil {
				steps[i] = rest
				left--
				continue
			}
			left -= max(1, len(agentmem.OpenAI.StepMessages(steps[i], agentmem.RenderOptions{})))
			if flags[i] {
				need -= fc.stepCost(steps[i])
			}
			steps = steps[:i]
		}
	}
	add := pl.appended(max(left, 0))
	hasTask := true
	if fc.needsTask(add) {
		head := steps
		if partial {
			head = h.Steps[:h.Head]
		}
		if hasTask, err = p.hasTask(ctx, tenant, sid, head, partial); err != nil {
			return err
		}
	}
	added, err := fc.addedNeed(add, hasTask)
	if err != nil {
		return err
	}
	if err := fc.refuse(need + added); err != nil {
		return err
	}
	if (pl.system != nil || pl.rule == ruleRewind) && len(add) > 0 {
		if partial {
			whole, err := p.svc.History(ctx, sessions.HistoryRequest{Tenant: tenant, SessionID: sid})
			if err != nil {
				return err
			}
			steps = whole.Steps
		}
		return validAppend(tenant, sid, steps, add)
	}
	return nil
}

// validAppend checks that messages appended to a working set make valid
// steps, as the store's append folds and validates them. The working set's
// actions are those their tool results may answer.
func validAppend(tenant, sid string, steps []agentmem.Step, msgs []agentmem.Message) error {
	var open []*agentmem.ActionStep
	for _, s := range steps {
		if a, ok := s.(*agentmem.ActionStep); ok {
			open = append(open, a)
		}
	}
	f, err := agentmem.FoldMessages(open, msgs, agentmem.FoldOptions{KeepPending: true, NewID: agentmem.NewID, Now: time.Now})
	if err != nil || len(f.Steps) == 0 {
		return err
	}
	return store.ValidateAppend(store.AppendRequest{Tenant: tenant, SessionID: sid, Steps: f.Steps})
}
