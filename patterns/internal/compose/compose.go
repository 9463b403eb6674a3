package compose

import (
	"context"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/tokenizer"
)

// Block is a system message made of a header line and item lines, with
// its exact cost.
type Block struct {
	// Message is the rendered block; its content is empty when no line fit.
	Message agentmem.Message
	// Kept is how many of the lines offered are in the block (a prefix).
	Kept int
	// Tokens is agentmem.MessageTokens of Message, 0 for an empty block.
	Tokens int
}

// Empty reports whether the block holds no line.
func (b Block) Empty() bool { return b.Kept == 0 }

// Fit renders header and the longest prefix of lines whose message costs
// at most budget tokens under c (agentmem.MessageTokens). Lines are kept
// in order, and a line that does not fit ends the block. So what is shown
// is always the most relevant first. A budget too small for the header and
// the first line gives an empty block.
func Fit(c tokenizer.Counter, header string, lines []string, budget int) Block {
	var b Block
	if budget <= 0 || len(lines) == 0 {
		return b
	}
	var sb strings.Builder
	sb.WriteString(header)
	for i, line := range lines {
		sb.WriteString("\n- ")
		sb.WriteString(line)
		msg := agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text(sb.String())}
		cost := agentmem.MessageTokens(c, msg)
		if cost > budget {
			// Count is not additive: each cost is measured on the
			// whole message, never summed from the lines.
			break
		}
		b = Block{Message: msg, Kept: i + 1, Tokens: cost}
	}
	return b
}

// Insert returns msgs with the non-empty blocks' messages inserted, in the
// order given, after the leading system messages. So a system prompt stays
// first and the blocks read as part of the instructions.
func Insert(msgs []agentmem.Message, blocks ...Block) []agentmem.Message {
	var extra []agentmem.Message
	for _, b := range blocks {
		if !b.Empty() {
			extra = append(extra, b.Message)
		}
	}
	if len(extra) == 0 {
		return msgs
	}
	at := 0
	for at < len(msgs) && msgs[at].Role == agentmem.RoleSystem {
		at++
	}
	out := make([]agentmem.Message, 0, len(msgs)+len(extra))
	out = append(out, msgs[:at]...)
	out = append(out, extra...)
	return append(out, msgs[at:]...)
}

// Summarize condenses steps with sum, bounded to maxTokens tokens of c,
// and returns the summary text and the step numbers it covers. The text is
// empty, with no error, when every step is a system prompt. It goes
// through agentmem's Summarize strategy, so that the summary is bounded
// exactly as a memory's summaries are: a condense request, then a cut. The
// steps are preceded by a placeholder task, which the strategy pins in
// place of a task of their own, so every step given is summarized. System
// prompts are pinned by the strategy and so left out of the summary.
func Summarize(ctx context.Context, sum agentmem.Summarizer, c tokenizer.Counter, steps []agentmem.Step, maxTokens int) (string, []agentmem.Range, error) {
	if sum == nil {
		return "", nil, &agentmem.InvalidError{Field: "summarizer", Reason: "is nil"}
	}
	if len(steps) == 0 {
		return "", nil, nil
	}
	in := make([]agentmem.Step, 0, len(steps)+1)
	in = append(in, &agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: -1, ID: "compose-placeholder"}, Task: "(placeholder)"})
	in = append(in, steps...)
	strategy := agentmem.Summarize(sum, agentmem.SummarizeOptions{KeepRecent: -1, MaxSummaryTokens: maxTokens})
	out, err := strategy.Apply(ctx, in, agentmem.NewEnv(agentmem.EnvOptions{Counter: c}))
	if err != nil {
		return "", nil, err
	}
	for _, s := range out {
		if ss, ok := s.(*agentmem.SummaryStep); ok {
			return ss.Summary, agentmem.MergeRanges(ss.Covers), nil
		}
	}
	return "", nil, nil // only pinned steps (system prompts): nothing to say
}

// PinnedCost returns what a memory's pinned steps (system prompts and the
// first task) cost in a request, reply priming included. That is the least
// budget its Context accepts, measured in the memory's format with its
// counter.
func PinnedCost(m *agentmem.Memory) int {
	env := agentmem.NewEnv(agentmem.EnvOptions{Counter: m.Counter(), Format: m.Format()})
	steps := m.Steps()
	cost := agentmem.ReplyPriming
	for i, p := range agentmem.PinnedFlags(steps) {
		if p {
			cost += env.Tokens(steps[i])
		}
	}
	return cost
}
