package agentmem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The message-level surface, for callers that have chat messages rather
// than steps. Messages are folded into steps as they arrive, by
// FoldMessages (the rules are there). A system message becomes a
// SystemPromptStep, a user message a TaskStep, and an assistant message an
// ActionStep (pending while its tool calls await their results). A tool
// message becomes the result of its call, and agent_call and
// agent_response messages become MessageSteps.
//
// A pending action is kept in the working set, as a store keeps it in a
// session's log. Tool results that arrive later, after other messages too,
// complete it. Contexts leave it out until then (they list it in
// Context.Pending), so every call a model is shown has its result. The
// in-process memory and a store therefore take the same messages the same
// way (see sessions.Service.AppendMessages).

// MetaIsError is the metadata key that marks a tool message as an error
// result ("true"): chat APIs have no field for it, Anthropic's has.
const MetaIsError = "is_error"

// MissingResult is the content given to a tool call whose result never
// arrived.
const MissingResult = "(no result was recorded for this tool call)"

// A JournalAmender is a Journal that can record modified copies of steps
// in place, the working set otherwise unchanged. The write's size does not
// grow with the working set: it is a store's amendment record. A memory
// completes a pending action so when its journal is one, and with a full
// compaction otherwise.
type JournalAmender interface {
	Journal
	// Amend durably records the steps as standing in place of the steps with
	// the same numbers. The steps are copies of steps of the working set,
	// with their numbers and IDs.
	Amend(ctx context.Context, steps []Step) error
}

// AddMessage adds one chat message (see FoldMessages). An assistant
// message whose tool calls await results is added as a pending action. A
// tool message completes the action that made its call, however many
// messages came in between. A tool result that repeats the one its call
// already has changes nothing. A different one is refused with a
// *ResultConflictError, and one for a call no action of the working set
// made with an *InvalidError.
func (m *Memory) AddMessage(ctx context.Context, msg Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.wmu.Lock()
	var open []*ActionStep
	if msg.Role == RoleTool {
		m.mu.RLock()
		open = m.callersLocked(msg.ToolCallID)
		m.mu.RUnlock()
	}
	f, err := FoldMessages(open, []Message{msg}, FoldOptions{KeepPending: true})
	if err == nil && len(f.Updated) > 0 {
		err = m.amend(ctx, actionSteps(f.Updated))
	}
	if err == nil {
		_, err = m.commit(ctx, f.Steps)
	}
	trigger := err == nil && m.overPolicy()
	m.wmu.Unlock()
	if err != nil {
		return unindex(err)
	}
	if trigger {
		m.autoPrune(ctx)
	}
	return nil
}

// callersLocked returns the action a tool result for callID may answer.
// That is the newest pending action that awaits it or, when none does, the
// newest action that made the call, so that a repeated result is
// recognised. m.mu must be held.
func (m *Memory) callersLocked(callID string) []*ActionStep {
	for k := len(m.waiting) - 1; k >= 0; k-- {
		a := m.entries[m.waiting[k]].step.(*ActionStep)
		if slices.Contains(a.Unanswered(), callID) {
			return []*ActionStep{a}
		}
	}
	for i := len(m.entries) - 1; i >= 0; i-- {
		if a, ok := m.entries[i].step.(*ActionStep); ok && a.callName(callID) != "" {
			return []*ActionStep{a}
		}
	}
	return nil
}

// Amend puts copies of steps of the working set in place of the steps with
// the same numbers, as a store's amendment does. Examples are a tool
// result that completes a stored call, or a result popped off an action.
// Each copy must have the number, ID and kind of a step of the working
// set. It stands in for that step with its render cache counted anew; the
// other steps keep theirs. A copy may complete an action or leave it
// pending again. With a journal, the copies are recorded first:
// JournalAmender.Amend, or a compaction that replaces them where the
// journal is not one. It costs what the copies do, not the length of the
// working set, unlike a compaction (Prune) that replaces the same steps. A
// copy that stands in for no step of the working set, or for the same step
// as another, is an *InvalidError, and nothing changes.
func (m *Memory) Amend(ctx context.Context, copies ...Step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, s := range copies {
		if s == nil {
			return invalidf(fmt.Sprintf("copies[%d]", i), "is nil")
		}
		if err := s.Validate(); err != nil {
			return err
		}
	}
	if len(copies) == 0 {
		return nil
	}
	steps := make([]Step, len(copies))
	for i, s := range copies {
		steps[i] = s.clone()
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	return m.amend(ctx, steps)
}

// amend puts copies of steps of the working set in place of the steps,
// recording them in the journal first (see Amend). The copies are the
// memory's to keep. m.wmu must be held.
func (m *Memory) amend(ctx context.Context, steps []Step) error {
	m.mu.RLock()
	at, err := m.locate(steps)
	m.mu.RUnlock()
	if err != nil {
		return err
	}
	if m.journal != nil {
		if j, ok := m.journal.(JournalAmender); ok {
			if err := j.Amend(ctx, steps); err != nil {
				return err
			}
		} else {
			m.mu.RLock()
			working := make([]Step, len(m.entries))
			for i, e := range m.entries {
				working[i] = e.step
			}
			for k, s := range steps {
				working[at[k]] = s
			}
			m.mu.RUnlock()
			if _, err := m.journal.Compact(ctx, JournalCompaction{Working: working, Replaced: at}); err != nil {
				return err
			}
		}
	}
	entries := newEntries(steps, m.format, m.counter)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.replaceLocked(at, entries)
	if m.policy != nil && m.policy.MaxTokens > 0 {
		for k, e := range entries {
			if !IsPending(old[k].step) {
				m.tokens -= old[k].render(m.format, m.counter, RenderOptions{}).total
			}
			if !IsPending(e.step) {
				m.tokens += e.render(m.format, m.counter, RenderOptions{}).total
			}
		}
	}
	return nil
}

// locate returns the indexes of the steps that copies stand in for: the
// steps of the working set with their numbers, which must have their IDs
// and kinds, one step per copy. Otherwise it returns an *InvalidError
// naming the copy. m.mu must be held.
func (m *workingSet) locate(copies []Step) ([]int, error) {
	at := make([]int, len(copies))
	for k, s := range copies {
		info := s.Info()
		at[k] = m.indexOf(info.Number)
		var reason string
		switch {
		case at[k] < 0:
			reason = fmt.Sprintf("stands in for step %d, which is not in the working set", info.Number)
		case m.entries[at[k]].step.Info().ID != info.ID || m.entries[at[k]].step.Kind() != s.Kind():
			reason = fmt.Sprintf("has the number of step %d but not its ID and kind", info.Number)
		case slices.Contains(at[:k], at[k]):
			reason = fmt.Sprintf("stands in for step %d, as an earlier copy does", info.Number)
		}
		if reason != "" {
			return nil, invalidf(fmt.Sprintf("copies[%d]", k), "%s", reason)
		}
	}
	return at, nil
}

// replaceLocked puts entries in place of the entries at the indexes at
// (see locate) and returns those it replaced. The other entries keep
// their render caches. m.mu must be held for writing.
func (m *workingSet) replaceLocked(at []int, entries []*entry) []*entry {
	old := make([]*entry, len(entries))
	for k, e := range entries {
		i := at[k]
		old[k] = m.entries[i]
		m.entries[i] = e
		m.waiting = setIndex(m.waiting, i, IsPending(e.step))
		m.turns = setIndex(m.turns, i, StartsTurn(e.step))
	}
	// A strategy that read the old copies must not put them back.
	m.epoch++
	return old
}

// setIndex returns the ascending list of indexes with i in it or not.
func setIndex(list []int, i int, in bool) []int {
	k, found := slices.BinarySearch(list, i)
	switch {
	case in && !found:
		return slices.Insert(list, k, i)
	case !in && found:
		return slices.Delete(list, k, k+1)
	}
	return list
}

// unindex takes the "messages[0]" that FoldMessages puts before the field
// of an error about its only message off again.
func unindex(err error) error {
	trim := func(f string) string {
		f = strings.TrimPrefix(f, "messages[0]")
		return strings.TrimPrefix(f, ".")
	}
	var ie *InvalidError
	var ce *ResultConflictError
	switch {
	case errors.As(err, &ie):
		return &InvalidError{Field: trim(ie.Field), Reason: ie.Reason}
	case errors.As(err, &ce):
		return &ResultConflictError{Field: trim(ce.Field), CallID: ce.CallID}
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

// Pending returns a copy of the newest pending action of the working set,
// whose tool calls await results, or nil.
func (m *Memory) Pending() *ActionStep {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(m.waiting) == 0 {
		return nil
	}
	return m.entries[m.waiting[len(m.waiting)-1]].step.clone().(*ActionStep)
}

// FoldOptions configure FoldMessages.
type FoldOptions struct {
	// KeepPending leaves pending actions pending when a message other than a
	// tool result arrives. Their calls wait for their results however many
	// messages come in between, as a store that keeps calls durably wants.
	// Frameworks save messages one at a time, and a call's result may come
	// after other messages. Without it, as Memory.AddMessage folds, such a
	// message first answers every unanswered call with an error result
	// (MissingResult).
	KeepPending bool
	// Flush answers every call still unanswered after the last message,
	// of the actions given and of the new steps, with an error result
	// (MissingResult).
	Flush bool
	// NewID, when set, gives an ID to each new step whose message has
	// none, in step order; nil leaves the ID empty.
	NewID func() string
	// Now, when set, gives a time to each new step whose message has
	// none; nil leaves it zero.
	Now func() time.Time
}

// Folded is what FoldMessages returns.
type Folded struct {
	// Steps are the new steps, in the order of the messages that began
	// them. An action among them whose calls do not all have results is
	// pending (ActionStep.Pending).
	Steps []Step
	// Updated are copies of the actions given whose calls the messages
	// answered, in the order given. The new results are in call order, and
	// the number, ID and everything else are unchanged. A copy may still be
	// pending.
	Updated []*ActionStep
	// Repeated are the indexes of the tool messages that repeated the result
	// their call already had (the same content, images and error flag). A
	// retried request does that; they changed nothing.
	Repeated []int
}

// ResultConflictError reports a tool message for a call that already has
// a different result. It wraps ErrConflict. A result once recorded is not
// replaced by appending another; a store can pop it first (see
// PopMessage).
type ResultConflictError struct {
	// Field names the message, e.g. "messages[2]".
	Field string
	// CallID is the call's ID.
	CallID string
}

func (e *ResultConflictError) Error() string {
	at := ""
	if e.Field != "" {
		at = e.Field + ": "
	}
	return fmt.Sprintf("agentmem: conflict: %stool call %q already has a different result", at, e.CallID)
}

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ResultConflictError) Unwrap() error { return ErrConflict }

// FoldMessages folds chat messages into steps. It is the one place where
// messages become steps: Memory.AddMessage, a store's message appends and
// the transports over them all call it. It is pure: it changes neither
// open nor msgs, and the steps it returns share nothing with them.
//
// open are the actions the messages' tool results may answer: actions
// whose calls await results, and actions whose calls it may repeat. The
// latter let a retried tool message be recognised. The rules:
//
//   - Every message must be valid (Message.Validate).
//   - A system message becomes a SystemPromptStep; a user message a
//     TaskStep (text and images); an assistant message an ActionStep
//     with its output, images and tool calls, pending until every call
//     has a result; agent_call and agent_response messages MessageSteps.
//   - An assistant message may not make a call with the ID of a call
//     of an earlier message that has no result yet (ErrInvalid, field
//     messages[i].tool_calls[j].id): one result would answer one of
//     them, and the other would wait for good. Once a call has its
//     result, its ID may be used again.
//   - A tool message answers its call: the newest action, of this
//     request's new steps and then of open, that made the call and has
//     no result for it yet, with its text, images and metadata (a
//     ToolResult). If every action that made the call has a result for
//     it, the newest one's must be the same (content, images and error
//     flag: the message is then Repeated and changes nothing) or
//     the fold fails with a *ResultConflictError. A call no action made
//     is refused (ErrInvalid, field messages[i].tool_call_id).
//   - Without KeepPending, a message other than a tool result first
//     answers every unanswered call with MissingResult; with Flush, the
//     calls still unanswered at the end are answered so.
//
// Errors name the message as "messages[i]" (an *InvalidError's Field, or
// a *ResultConflictError's); nothing is returned with them.
func FoldMessages(open []*ActionStep, msgs []Message, opts FoldOptions) (*Folded, error) {
	f := &folder{opts: opts, out: &Folded{}}
	for i, a := range open {
		if a == nil {
			return nil, invalidf(fmt.Sprintf("open[%d]", i), "is nil")
		}
		f.acts = append(f.acts, &foldAct{a: a, orig: i, step: -1})
	}
	for i, msg := range msgs {
		if err := f.add(i, msg); err != nil {
			return nil, atMessage(i, err)
		}
	}
	if opts.Flush {
		f.answerAll()
	}
	for _, act := range f.acts {
		if act.orig >= 0 && act.owned {
			f.out.Updated = append(f.out.Updated, act.a)
		}
	}
	return f.out, nil
}

// folder is the state of one FoldMessages call.
type folder struct {
	opts FoldOptions
	out  *Folded
	// acts are the actions a tool message may answer: open's, then the
	// new ones, oldest first.
	acts []*foldAct
}

// foldAct is an action a fold may give results to.
type foldAct struct {
	a     *ActionStep
	orig  int  // index in open, or -1 for a new step
	step  int  // index in out.Steps of a new step, or -1
	msg   int  // index in the messages of a new step's message
	owned bool // a is the fold's own copy
}

// callsFree checks that no call of calls has the ID of a call that an
// earlier message of the fold made and that has no result yet. A result
// answers one of them, and the other would wait for one for good. The same
// ID twice in one message is Message.Validate's to refuse. An ID made
// again once its call has its result is another call.
func (f *folder) callsFree(calls []ToolCall) error {
	for j, c := range calls {
		for _, act := range f.acts {
			if act.orig >= 0 || act.a.callName(c.ID) == "" {
				continue
			}
			if _, answered := act.a.Result(c.ID); !answered {
				return invalidf(fmt.Sprintf("tool_calls[%d].id", j), "%q is also the ID of a call of messages[%d] that has no result yet: a call ID is made again only once its call has its result", c.ID, act.msg)
			}
		}
	}
	return nil
}

// set replaces the action with c, a changed copy.
func (f *folder) set(act *foldAct, c *ActionStep) {
	act.a, act.owned = c, true
	if act.step >= 0 {
		f.out.Steps[act.step] = c
	}
}

// answerAll answers every unanswered call with MissingResult.
func (f *folder) answerAll() {
	for _, act := range f.acts {
		if act.a.Pending() {
			f.set(act, answerAll(act.a))
		}
	}
}

// add folds message i.
func (f *folder) add(i int, msg Message) error {
	if err := msg.Validate(); err != nil {
		return err
	}
	msg = msg.Clone()
	if msg.Role == RoleTool {
		return f.result(i, msg)
	}
	if !f.opts.KeepPending {
		f.answerAll()
	}
	info := StepInfo{ID: msg.ID, Time: msg.Time, Metadata: msg.Metadata}
	if info.ID == "" && f.opts.NewID != nil {
		info.ID = f.opts.NewID()
	}
	if info.Time.IsZero() && f.opts.Now != nil {
		info.Time = f.opts.Now()
	}
	var s Step
	switch msg.Role {
	case RoleSystem:
		s = &SystemPromptStep{StepInfo: info, Content: msg.Text()}
	case RoleUser:
		t := &TaskStep{StepInfo: info, Name: msg.Name, Data: msg.Data}
		var text []string
		for _, p := range msg.Content {
			if p.Type == PartImage {
				t.Images = append(t.Images, *p.Image)
			} else {
				text = append(text, p.Text)
			}
		}
		t.Task = strings.Join(text, "\n")
		s = t
	case RoleAssistant:
		if err := f.callsFree(msg.ToolCalls); err != nil {
			return err
		}
		a := &ActionStep{StepInfo: info, ModelOutput: msg.Text(), ToolCalls: msg.ToolCalls, Name: msg.Name, Data: msg.Data, Images: contentImages(msg.Content)}
		if len(a.ToolCalls) > 0 {
			f.acts = append(f.acts, &foldAct{a: a, orig: -1, step: len(f.out.Steps), msg: i, owned: true})
		}
		s = a
	default: // agent_call, agent_response
		info.Metadata = nil // it stays on the message
		s = &MessageStep{StepInfo: info, Message: msg}
	}
	f.out.Steps = append(f.out.Steps, s)
	return nil
}

// result folds tool message i.
func (f *folder) result(i int, msg Message) error {
	r := ToolResult{CallID: msg.ToolCallID, ID: msg.ID, Content: msg.Text(), IsError: msg.Metadata[MetaIsError] == "true", Images: contentImages(msg.Content)}
	if len(msg.Metadata) > 0 {
		r.Metadata = cloneMap(msg.Metadata)
		delete(r.Metadata, MetaIsError)
		if len(r.Metadata) == 0 {
			r.Metadata = nil
		}
	}
	var answered *foldAct
	for k := len(f.acts) - 1; k >= 0; k-- {
		act := f.acts[k]
		if act.a.callName(r.CallID) == "" {
			continue
		}
		if _, ok := act.a.Result(r.CallID); !ok {
			c := act.a.clone().(*ActionStep)
			c.Results = append(c.Results, r)
			f.set(act, orderResults(c))
			return nil
		}
		if answered == nil {
			answered = act
		}
	}
	if answered == nil {
		return invalidf("tool_call_id", "tool result for %q has no pending tool call with that ID", r.CallID)
	}
	if old, _ := answered.a.Result(r.CallID); old.Content != r.Content || old.IsError != r.IsError || !sameImages(old.Images, r.Images) {
		return &ResultConflictError{CallID: r.CallID}
	}
	f.out.Repeated = append(f.out.Repeated, i)
	return nil
}

// contentImages returns the images of a message's content, in order (its
// text is Content.String), or nil.
func contentImages(c Content) []Image {
	var out []Image
	for _, p := range c {
		if p.Type == PartImage {
			out = append(out, *p.Image)
		}
	}
	return out
}

// atMessage puts "messages[i]" before the field of an error about message
// i.
func atMessage(i int, err error) error {
	prefix := fmt.Sprintf("messages[%d]", i)
	join := func(f string) string {
		switch {
		case f == "":
			return prefix
		case strings.HasPrefix(f, "["):
			return prefix + f
		}
		return prefix + "." + f
	}
	var ie *InvalidError
	var ce *ResultConflictError
	switch {
	case errors.As(err, &ie):
		return &InvalidError{Field: join(ie.Field), Reason: ie.Reason}
	case errors.As(err, &ce):
		return &ResultConflictError{Field: join(ce.Field), CallID: ce.CallID}
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// answerAll returns a copy of a pending action in which every unanswered
// call has an error result.
func answerAll(p *ActionStep) *ActionStep {
	p = p.clone().(*ActionStep)
	for _, c := range p.ToolCalls {
		if _, ok := p.Result(c.ID); !ok {
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

// FlushPending completes every pending action of the working set,
// answering its unanswered calls with an error result (MissingResult), as
// a store's flushing append does.
func (m *Memory) FlushPending(ctx context.Context) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.RLock()
	var done []*ActionStep
	for _, i := range m.waiting {
		done = append(done, answerAll(m.entries[i].step.(*ActionStep)))
	}
	m.mu.RUnlock()
	if len(done) == 0 {
		return nil
	}
	return m.amend(ctx, actionSteps(done))
}

// PopMessage splits the newest message off a step, as a store's pop does
// with the newest step of a session's working set. It returns that message
// (canonical, as Step.Messages renders it) and what is left of the step,
// or nil when the step goes whole. The newest message of a step is the
// last message it renders. The prompts a step renders around its content
// are not messages of their own, though:
//
//   - an action with tool results: its last result, in call order, as a
//     tool message (ActionStep.PopResult); what is left is a copy of the
//     action without it, whose call is pending again (it awaits a result);
//   - an action without results: its assistant message (its output and
//     tool calls), and the step goes whole, with its observation and
//     error, which only typed steps carry;
//   - any other step: its first message (a system prompt, a task with
//     its images, a planning step's plan, a scratchpad's note, a final
//     answer, a summary, a wrapped message), and the step goes whole,
//     with the prompt a planning or scratchpad step renders after it.
//
// A message that is the step's own carries the step's metadata, as Recent
// returns it.
func PopMessage(s Step) (Message, Step) {
	if a, ok := s.(*ActionStep); ok {
		if n := len(a.Results); n > 0 {
			msg, rest, _ := a.PopResult(a.Results[n-1].CallID)
			return msg, rest
		}
	}
	if msgs := canonicalMessages(s); len(msgs) > 0 {
		return msgs[0], nil
	}
	info := s.Info()
	return Message{ID: info.ID, Role: RoleAssistant, Metadata: cloneMap(info.Metadata), Time: info.Time}, nil
}

// Recent returns the last n messages of the working set in canonical form
// (unbudgeted), oldest first: the seeds' get_recent. Pending actions, held
// back or in the working set, are not included. A message carries the
// metadata it was added with: AddMessage keeps it on the step it folds
// into, and MARSYS keeps in_reply_to there. A final answer is the
// assistant's message wherever it comes.
func (m *workingSet) Recent(n int) []Message {
	if n <= 0 {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var rev [][]Message
	count := 0
	for i := len(m.entries) - 1; i >= 0 && count < n; i-- {
		if IsPending(m.entries[i].step) {
			continue
		}
		msgs := canonicalMessages(m.entries[i].step)
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
// message of a step with that ID, or a tool result message with it. A
// step's message carries the step's metadata (see Recent).
func (m *workingSet) MessageByID(id string) (Message, error) {
	if id == "" {
		return Message{}, invalidf("id", "is empty")
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, e := range m.entries {
		for _, msg := range canonicalMessages(e.step) {
			if msg.ID == id {
				return msg, nil
			}
		}
	}
	return Message{}, fmt.Errorf("%w: message %q", ErrNotFound, id)
}

// canonicalMessages renders a step in canonical form, as Recent and
// MessageByID return it. The message that is the step's own (its ID is the
// step's, or it is the first) carries the step's metadata. The keys of the
// message's own metadata (a tool result's is_error) come first. A tool
// message carries its result's metadata (ToolResult.Metadata). The
// messages are the caller's.
func canonicalMessages(s Step) []Message {
	msgs := s.Messages(RenderOptions{})
	a, _ := s.(*ActionStep)
	for i := range msgs {
		msgs[i] = msgs[i].Clone() // they may share slices with the step
		if a != nil && msgs[i].Role == RoleTool {
			if r, ok := a.Result(msgs[i].ToolCallID); ok {
				msgs[i] = withResultMetadata(msgs[i], r)
			}
		}
	}
	info := s.Info()
	if len(info.Metadata) == 0 || len(msgs) == 0 {
		return msgs
	}
	own := 0
	for i, msg := range msgs {
		if info.ID != "" && msg.ID == info.ID {
			own = i
			break
		}
	}
	md := cloneMap(info.Metadata)
	for k, v := range msgs[own].Metadata {
		md[k] = v
	}
	msgs[own].Metadata = md
	return msgs
}

// StepsFromMessages folds a list of chat messages into steps, as
// AddMessage would, without a memory. Calls left unanswered at the end get
// an error result (MissingResult). Steps are numbered from 0, and those
// whose message has no ID or time get a new ID and the current time.
func StepsFromMessages(msgs []Message) ([]Step, error) {
	f, err := FoldMessages(nil, msgs, FoldOptions{Flush: true, NewID: NewID, Now: time.Now})
	if err != nil {
		return nil, err
	}
	for i, s := range f.Steps {
		info := s.Info()
		info.Number = i
		s.setInfo(info)
	}
	return f.Steps, nil
}

// actionSteps returns actions as steps.
func actionSteps(actions []*ActionStep) []Step {
	out := make([]Step, len(actions))
	for i, a := range actions {
		out[i] = a
	}
	return out
}

// OpenActions returns the actions among steps (a working set, in order)
// that a fold of msgs may give results to (FoldMessages' open). These are
// the actions that made a call a tool message of msgs names, answered or
// not, so that a result sent again is recognised as a retry. With flush,
// they include every pending one. They are steps' own actions, in order.
func OpenActions(steps []Step, msgs []Message, flush bool) []*ActionStep {
	pick := opener(msgs, flush)
	if pick == nil {
		return nil
	}
	var open []*ActionStep
	for _, s := range steps {
		if a, ok := s.(*ActionStep); ok && pick(a) {
			open = append(open, a)
		}
	}
	return open
}

// OpenActions returns copies of the actions of the working set that a fold
// of msgs may give results to, in order. A writer that holds a session's
// working set in a memory folds the session's new messages against them,
// without copying the rest. They are the function OpenActions' choice, and
// FoldMessages folds msgs against them as it does against that choice. One
// case differs: every tool message of msgs names a call of its own that a
// pending action awaits. That is the common case of results sent as they
// come. They are then only the pending actions of that choice, found
// without looking at the other steps, since the fold does not look at an
// action that has its results.
func (m *workingSet) OpenActions(msgs []Message, flush bool) []*ActionStep {
	pick := opener(msgs, flush)
	if pick == nil {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var open []*ActionStep
	if m.awaitedLocked(msgs) {
		for _, i := range m.waiting {
			if a := m.entries[i].step.(*ActionStep); pick(a) {
				open = append(open, a.clone().(*ActionStep))
			}
		}
		return open
	}
	for _, e := range m.entries {
		if a, ok := e.step.(*ActionStep); ok && pick(a) {
			open = append(open, a.clone().(*ActionStep))
		}
	}
	return open
}

// awaitedLocked reports whether every tool message of msgs names a call
// that no other of them names and that a pending action of the working set
// awaits (made, with no result yet). A fold then gives each its result in
// the newest action that awaits it, among those of the request and the
// pending ones. It compares none with a recorded result, so the actions
// that have their results play no part. m.mu must be held.
func (m *workingSet) awaitedLocked(msgs []Message) bool {
	var seen []string
	for _, msg := range msgs {
		if msg.Role != RoleTool {
			continue
		}
		id := msg.ToolCallID
		if slices.Contains(seen, id) {
			return false
		}
		seen = append(seen, id)
		awaited := false
		for _, i := range m.waiting {
			a := m.entries[i].step.(*ActionStep)
			if _, answered := a.Result(id); a.callName(id) != "" && !answered {
				awaited = true
				break
			}
		}
		if !awaited {
			return false
		}
	}
	return true
}

// opener returns OpenActions' choice of an action, nil when it picks
// none.
func opener(msgs []Message, flush bool) func(*ActionStep) bool {
	var named []string
	for _, m := range msgs {
		if m.Role == RoleTool && !slices.Contains(named, m.ToolCallID) {
			named = append(named, m.ToolCallID)
		}
	}
	if len(named) == 0 && !flush {
		return nil
	}
	// A request names a few calls, and a long working set has many. The
	// names are compared in a list, which costs less than hashing each
	// call's ID, unless there are many.
	has := func(id string) bool { return slices.Contains(named, id) }
	if len(named) > 8 {
		set := make(map[string]bool, len(named))
		for _, id := range named {
			set[id] = true
		}
		has = func(id string) bool { return set[id] }
	}
	return func(a *ActionStep) bool {
		if len(a.ToolCalls) == 0 {
			return false
		}
		if flush && a.Pending() {
			return true
		}
		for _, c := range a.ToolCalls {
			if has(c.ID) {
				return true
			}
		}
		return false
	}
}
