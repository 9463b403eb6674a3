package hierarchy

import (
	"context"
	"fmt"
	"math"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/patterns/internal/compose"
)

// Context is what Context assembled, and where each part came from.
type Context struct {
	// Messages are the messages to send: the working tier's leading system
	// messages, the core block, the episodic block, then the rest of the
	// working window. Each block is one system message, left out when empty.
	Messages []agentmem.Message `json:"messages"`
	// Tokens is what Messages cost, reply priming included, counted with
	// the working memory's counter; it never exceeds Budget.
	Tokens int `json:"tokens"`
	Budget int `json:"budget,omitempty"`
	// Core lists the core entries shown, CoreTokens what their block
	// costs. Core entries that the working window shows anyway are not
	// repeated in the block.
	Core       []Item `json:"core,omitempty"`
	CoreTokens int    `json:"core_tokens"`
	// CoreLeftOut lists core entries that did not fit the budget: keep
	// the core tier small (Options.CoreMaxTokens) so that none is.
	CoreLeftOut []Item `json:"core_left_out,omitempty"`
	// Episodic lists the episodic entries shown, most relevant first, as
	// they were before this recall counted; EpisodicTokens what their
	// block costs.
	Episodic       []Item `json:"episodic,omitempty"`
	EpisodicTokens int    `json:"episodic_tokens"`
	// Working is the working tier's own view (its Steps, Dropped and
	// Tokens, reply priming included).
	Working *agentmem.Context `json:"working"`
}

// Context assembles the context for a model call within budget tokens
// (zero or less: no limit). The pinned working steps (system prompt and
// task) come first, then every core entry that fits. Then come the
// episodic entries most relevant to query, within Options.EpisodicShare of
// the budget. The newest working steps that fit fill the rest. Counts are
// exact (agentmem.MessageTokens with the working memory's counter), so
// Tokens never exceeds the budget. Each episodic entry shown counts as a
// recall (see Recall). If the pinned steps alone exceed the budget the
// error is an *agentmem.BudgetError.
func (m *Memory) Context(ctx context.Context, query string, budget int) (*Context, error) {
	m.mu.Lock()
	defer m.mu.Unlock()

	pinnedCost := compose.PinnedCost(m.working.Memory)
	avail := math.MaxInt / 4
	if budget > 0 {
		if pinnedCost > budget {
			return nil, &agentmem.BudgetError{Budget: budget, Required: pinnedCost}
		}
		avail = budget - pinnedCost
	}

	coreItems := m.coreItems()
	core := compose.Fit(m.counter, coreHeader, lines(coreItems), avail)
	avail -= core.Tokens

	found, err := m.searchEpisodic(ctx, query, m.opts.EpisodicK)
	if err != nil {
		return nil, err
	}
	epiBudget := avail
	if budget > 0 {
		epiBudget = min(avail, int(m.opts.EpisodicShare*float64(budget)))
	}
	epi := compose.Fit(m.counter, episodicHeader, lines(found), epiBudget)

	workBudget := 0
	if budget > 0 {
		workBudget = budget - core.Tokens - epi.Tokens
	}
	wctx, err := m.working.Context(ctx, agentmem.ContextOptions{Budget: workBudget})
	if err != nil {
		return nil, err
	}

	// Core entries the working window shows need no second copy.
	kept, leftOut := coreItems[:core.Kept], coreItems[core.Kept:]
	shown := make(map[int]bool, len(wctx.Steps))
	for _, n := range wctx.Steps {
		shown[n] = true
	}
	var rest []*Item
	for _, it := range kept {
		if !m.inWorking(it) || !shown[it.Covers[0].From] {
			rest = append(rest, it)
		}
	}
	if len(rest) < len(kept) {
		// Counts are not additive, so the smaller block is measured
		// again and used only if it is no dearer.
		if again := compose.Fit(m.counter, coreHeader, lines(rest), core.Tokens); again.Kept == len(rest) {
			core, kept = again, rest
		}
	}

	out := &Context{
		Messages:       compose.Insert(wctx.Messages, core, epi),
		Tokens:         wctx.Tokens + core.Tokens + epi.Tokens,
		Budget:         budget,
		CoreTokens:     core.Tokens,
		EpisodicTokens: epi.Tokens,
		Working:        wctx,
	}
	if budget > 0 && out.Tokens > budget {
		return nil, fmt.Errorf("hierarchy: context of %d tokens over budget %d (a bug)", out.Tokens, budget)
	}
	for _, it := range kept {
		out.Core = append(out.Core, *it.clone())
	}
	for _, it := range leftOut {
		out.CoreLeftOut = append(out.CoreLeftOut, *it.clone())
	}
	for _, it := range found[:epi.Kept] {
		out.Episodic = append(out.Episodic, *it.clone())
	}
	if _, err := m.countRecalls(ctx, found[:epi.Kept]); err != nil {
		return nil, err
	}
	return out, nil
}
