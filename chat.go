package agentmem

import (
	"context"
	"fmt"
	"strings"
)

// The message-level surface, for callers that have chat messages rather
// than steps. Messages are folded into steps as they arrive:
//
//   - a system message becomes a SystemPromptStep;
//   - a user message becomes a TaskStep (text and images);
//   - an assistant message with tool calls opens an ActionStep that is
//     added once every call has its tool result; until then it is pending
//     and not rendered, so a call is never shown without its result;
//   - an assistant message without tool calls becomes an ActionStep with
//     the model's output;
//   - agent_call and agent_response messages become MessageSteps.
//
// A tool result that answers no pending call is refused (ErrInvalid). If
// another message arrives while calls are still unanswered, the pending
// step is added with an error result for each unanswered call, so the
// rendered history stays valid.

// MetaIsError is the metadata key that marks a tool message as an error
// result ("true"): chat APIs have no field for it, Anthropic's has.
const MetaIsError = "is_error"

// MissingResult is the content given to a tool call whose result never
// arrived.
const MissingResult = "(no result was recorded for this tool call)"

// AddMessage adds one chat message.
func (m *Memory) AddMessage(ctx context.Context, msg Message) error {
	if err := msg.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	msg = msg.Clone()
	m.wmu.Lock()
	steps, pending, err := m.fold(msg)
	if err == nil {
		_, err = m.commit(ctx, steps)
	}
	if err == nil {
		m.mu.Lock()
		m.pending = pending
		m.mu.Unlock()
	}
	trigger := err == nil && len(steps) > 0 && m.overPolicy()
	m.wmu.Unlock()
	if trigger {
		m.autoPrune(ctx)
	}
	return err
}

// AddUser adds a user message with the given text.
func (m *Memory) AddUser(ctx context.Context, text string) error {
	return m.AddMessage(ctx, Message{Role: RoleUser, Content: Text(text)})
}

// AddAssistant adds an assistant message (its role is forced to assistant).
func (m *Memory) AddAssistant(ctx context.Context, msg Message) error {
	msg.Role = RoleAssistant
	return m.AddMessage(ctx, msg)
}

// AddToolResult adds the result of the pending tool call callID.
func (m *Memory) AddToolResult(ctx context.Context, callID, content string, isError bool) error {
	msg := Message{Role: RoleTool, ToolCallID: callID, Content: Text(content)}
	if isError {
		msg.Metadata = map[string]string{MetaIsError: "true"}
	}
	return m.AddMessage(ctx, msg)
}

// Pending returns a copy of the action whose tool calls still await
// results, or nil.
func (m *Memory) Pending() *ActionStep {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.pending == nil {
		return nil
	}
	return m.pending.clone().(*ActionStep)
}

// fold turns one validated message into the steps to commit and the
// pending action to keep afterwards. It changes nothing itself. m.wmu must
// be held.
func (m *Memory) fold(msg Message) (steps []Step, pending *ActionStep, err error) {
	pending = m.pending
	if msg.Role == RoleTool {
		if pending == nil {
			return nil, nil, invalidf("tool_call_id", "tool result for %q has no pending tool call", msg.ToolCallID)
		}
		if pending.callName(msg.ToolCallID) == "" {
			return nil, pending, invalidf("tool_call_id", "tool result for %q answers none of the pending calls", msg.ToolCallID)
		}
		for _, r := range pending.Results {
			if r.CallID == msg.ToolCallID {
				return nil, pending, invalidf("tool_call_id", "tool call %q already has a result", msg.ToolCallID)
			}
		}
		p := pending.clone().(*ActionStep)
		p.Results = append(p.Results, ToolResult{CallID: msg.ToolCallID, ID: msg.ID, Content: msg.Text(), IsError: msg.Metadata[MetaIsError] == "true"})
		if len(p.Results) < len(p.ToolCalls) {
			return nil, p, nil
		}
		return []Step{orderResults(p)}, nil, nil
	}
	if pending != nil {
		steps = append(steps, answerAll(pending))
	}
	info := StepInfo{ID: msg.ID, Time: msg.Time, Metadata: msg.Metadata}
	switch msg.Role {
	case RoleSystem:
		steps = append(steps, &SystemPromptStep{StepInfo: info, Content: msg.Text()})
	case RoleUser:
		t := &TaskStep{StepInfo: info}
		var text []string
		for _, p := range msg.Content {
			if p.Type == PartImage {
				t.Images = append(t.Images, *p.Image)
			} else {
				text = append(text, p.Text)
			}
		}
		t.Task = strings.Join(text, "\n")
		steps = append(steps, t)
	case RoleAssistant:
		a := &ActionStep{StepInfo: info, ModelOutput: msg.Text(), ToolCalls: msg.ToolCalls}
		if len(msg.ToolCalls) > 0 {
			return steps, a, nil
		}
		steps = append(steps, a)
	default: // agent_call, agent_response
		steps = append(steps, &MessageStep{StepInfo: StepInfo{ID: msg.ID, Time: msg.Time}, Message: msg})
	}
	return steps, nil, nil
}

// answerAll returns a copy of a pending action in which every unanswered
// call has an error result.
func answerAll(p *ActionStep) *ActionStep {
	p = p.clone().(*ActionStep)
	for _, c := range p.ToolCalls {
		answered := false
		for _, r := range p.Results {
			answered = answered || r.CallID == c.ID
		}
		if !answered {
			p.Results = append(p.Results, ToolResult{CallID: c.ID, Content: MissingResult, IsError: true})
		}
	}
	return orderResults(p)
}

// orderResults puts an action's results in call order.
func orderResults(p *ActionStep) *ActionStep {
	ordered := make([]ToolResult, 0, len(p.ToolCalls))
	for _, c := range p.ToolCalls {
		for _, r := range p.Results {
			if r.CallID == c.ID {
				ordered = append(ordered, r)
				break
			}
		}
	}
	p.Results = ordered
	return p
}

// FlushPending adds a pending action now, answering its unanswered calls
// with an error result (MissingResult).
func (m *Memory) FlushPending(ctx context.Context) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if m.pending == nil {
		return nil
	}
	if _, err := m.commit(ctx, []Step{answerAll(m.pending)}); err != nil {
		return err
	}
	m.mu.Lock()
	m.pending = nil
	m.mu.Unlock()
	return nil
}

// Recent returns the last n messages of the working set in canonical form
// (unbudgeted), oldest first. A pending action is not included.
func (m *Memory) Recent(n int) []Message {
	if n <= 0 {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var rev [][]Message
	count := 0
	for i := len(m.entries) - 1; i >= 0 && count < n; i-- {
		msgs := m.entries[i].step.Messages(RenderOptions{})
		rev = append(rev, msgs)
		count += len(msgs)
	}
	var out []Message
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i]...)
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// MessageByID returns the canonical message with the given ID: the first
// message of a step with that ID, or a tool result message with it.
func (m *Memory) MessageByID(id string) (Message, error) {
	if id == "" {
		return Message{}, invalidf("id", "is empty")
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, e := range m.entries {
		msgs := e.step.Messages(RenderOptions{})
		for _, msg := range msgs {
			if msg.ID == id {
				return msg.Clone(), nil
			}
		}
	}
	return Message{}, fmt.Errorf("%w: message %q", ErrNotFound, id)
}

// StepsFromMessages folds a list of chat messages into steps, as
// AddMessage would, without a memory. Steps are numbered from 0.
func StepsFromMessages(msgs []Message) ([]Step, error) {
	mem := New(Options{Counter: heuristicCounter()})
	for i, msg := range msgs {
		if err := mem.AddMessage(context.Background(), msg); err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	if err := mem.FlushPending(context.Background()); err != nil {
		return nil, err
	}
	return mem.Steps(), nil
}
