package agentmem

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// StepKind names a kind of step. It is the "type" field of a step's JSON.
type StepKind string

// The kinds of step.
const (
	KindSystemPrompt StepKind = "system_prompt"
	KindTask         StepKind = "task"
	KindAction       StepKind = "action"
	KindPlanning     StepKind = "planning"
	KindScratchpad   StepKind = "scratchpad"
	KindFinalAnswer  StepKind = "final_answer"
	KindSummary      StepKind = "summary"
	KindMessage      StepKind = "message"
)

// Kinds lists every step kind.
func Kinds() []StepKind {
	return []StepKind{KindSystemPrompt, KindTask, KindAction, KindPlanning, KindScratchpad, KindFinalAnswer, KindSummary, KindMessage}
}

// StepInfo is the header every step carries. Memory assigns Number (and ID
// and Time when they are empty) when the step is added. Numbers increase
// monotonically and are never reused, even after pruning.
type StepInfo struct {
	Number   int               `json:"number"`
	ID       string            `json:"id,omitempty"`
	Time     time.Time         `json:"time,omitzero"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Info returns the header. Every step type embeds StepInfo, so this method
// is promoted to all of them.
func (i *StepInfo) Info() StepInfo { return *i }

func (i *StepInfo) setInfo(n StepInfo) { *i = n }

// RenderOptions controls how a step renders itself to messages.
type RenderOptions struct {
	// SummaryMode renders the step as input for a summarizer or planner, as
	// smolagents does. System prompts and plans render nothing. An action
	// step that calls tools leaves out the model's raw output, since its
	// calls and their results say what it did. An action without tool calls
	// keeps its text: in a chat it is the assistant's reply, the only record
	// of the assistant's side of the turn.
	SummaryMode bool
}

// Step is one entry of an agent's history. The concrete types are the
// pointer types *SystemPromptStep, *TaskStep, *ActionStep, *PlanningStep,
// *ScratchpadStep, *FinalAnswerStep, *SummaryStep and *MessageStep. The
// set is closed so that every step has a stable JSON form.
//
// Steps are values: once added to a Memory they are never changed. Methods
// that alter a step, such as ActionStep.Truncate, return a copy.
type Step interface {
	// Kind returns the step's kind.
	Kind() StepKind
	// Info returns the step's header (number, ID, time, metadata).
	Info() StepInfo
	// Messages renders the step as canonical chat messages (OpenAI's chat
	// shape: tool calls on the assistant message, results as tool
	// messages). A call and its results always render together.
	Messages(opts RenderOptions) []Message
	// Validate checks the step's invariants.
	Validate() error

	setInfo(StepInfo)
	clone() Step
}

// WithInfo returns a deep copy of s carrying the header info: how a store
// gives a step the number it assigned.
func WithInfo(s Step, info StepInfo) Step {
	c := s.clone()
	info.Metadata = cloneMap(info.Metadata)
	c.setInfo(info)
	return c
}

// CloneStep returns a deep copy of s.
func CloneStep(s Step) Step {
	if s == nil {
		return nil
	}
	return s.clone()
}

// SystemPromptStep holds the system prompt. It is always kept in context.
type SystemPromptStep struct {
	StepInfo
	Content string `json:"content"`
}

// Kind implements Step.
func (*SystemPromptStep) Kind() StepKind { return KindSystemPrompt }

// Messages implements Step: one system message; nothing in summary mode.
func (s *SystemPromptStep) Messages(opts RenderOptions) []Message {
	if opts.SummaryMode {
		return nil
	}
	return []Message{{ID: s.ID, Role: RoleSystem, Content: Text(s.Content), Time: s.Time}}
}

// Validate implements Step.
func (s *SystemPromptStep) Validate() error { return validText("content", s.Content) }

func (s *SystemPromptStep) clone() Step {
	c := *s
	c.Metadata = cloneMap(s.Metadata)
	return &c
}

// TaskStep holds a task (a user's request), optionally with images. The
// first task of a memory is pinned: it is always kept in context.
type TaskStep struct {
	StepInfo
	Task   string  `json:"task"`
	Images []Image `json:"images,omitempty"`
	// Name and Data are the name and structured data of the user message the
	// task came from (Message.Name and Message.Data). They are kept so that
	// the message renders as it was given.
	Name string          `json:"name,omitempty"`
	Data json.RawMessage `json:"structured_data,omitempty"`
}

// Kind implements Step.
func (*TaskStep) Kind() StepKind { return KindTask }

// Messages implements Step: one user message with the task and its
// images, name and structured data.
func (s *TaskStep) Messages(RenderOptions) []Message {
	content := Text(s.Task)
	for _, img := range s.Images {
		content = append(content, ImagePart(img))
	}
	return []Message{{ID: s.ID, Role: RoleUser, Content: content, Name: s.Name, Data: cloneSlice(s.Data), Time: s.Time}}
}

// Validate implements Step.
func (s *TaskStep) Validate() error {
	if err := validText("task", s.Task); err != nil {
		return err
	}
	if err := validNameData(s.Name, s.Data); err != nil {
		return err
	}
	return validImages("images", s.Images)
}

func (s *TaskStep) clone() Step {
	c := *s
	c.Metadata = cloneMap(s.Metadata)
	c.Images = cloneImages(s.Images)
	c.Data = cloneSlice(s.Data)
	return &c
}

// validNameData checks the name and structured data a task or an action
// keeps from its message.
func validNameData(name string, data json.RawMessage) error {
	if err := validText("name", name); err != nil {
		return err
	}
	if len(data) > 0 && !json.Valid(data) {
		return invalidf("structured_data", "is not valid JSON")
	}
	return nil
}

// Usage is the token usage a model reported for one call.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// ToolResult is the observation returned by one tool call.
type ToolResult struct {
	// CallID is the ID of the ToolCall this result answers.
	CallID string `json:"call_id"`
	// ID optionally identifies the result message (message-level API).
	ID      string `json:"id,omitempty"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
	// Metadata is the tool message's metadata other than its error flag
	// (MetaIsError), kept with the result; a context does not render it.
	// An adapter of another message format (package responses) keeps the
	// original item here, so that it survives amendments, pops and
	// compactions with the result.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Images are the images the tool returned (a screenshot, a chart): the
	// image parts of the tool message, after its text. Formats whose tool
	// result cannot hold images show them otherwise (see OpenAI).
	Images []Image `json:"images,omitempty"`
}

// ActionStep is one turn of the agent loop: the model's reasoning and
// output, the tool calls it made and their results, or an error. A call
// and its result are one unit that pruning keeps or drops whole.
//
// Every tool call has at most one result. An action some of whose calls
// have no result yet is pending (see Pending). Chat frameworks save the
// assistant message that makes the calls before the tool messages that
// answer them, and a store keeps the action pending until they arrive. A
// context never shows a pending action: Memory.Context leaves it out and
// lists it in Context.Pending. So every call a model is shown has its
// result.
type ActionStep struct {
	StepInfo
	// Thought is the model's reasoning, when reported apart from its output.
	Thought string `json:"thought,omitempty"`
	// ModelOutput is the raw text the model returned.
	ModelOutput string     `json:"model_output,omitempty"`
	ToolCalls   []ToolCall `json:"tool_calls,omitempty"`
	// Results holds at most one result per tool call, in call order; a
	// call without one is pending.
	Results []ToolResult `json:"results,omitempty"`
	// Observation holds output that did not come from a tool call (for
	// example the stdout of code the agent ran).
	Observation string `json:"observation,omitempty"`
	// Code is code the agent executed in this step, if any.
	Code string `json:"code,omitempty"`
	// Error is the error the step ended with, if any.
	Error    string        `json:"error,omitempty"`
	IsFinal  bool          `json:"is_final,omitempty"`
	Usage    *Usage        `json:"usage,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Name and Data are the name and structured data of the assistant
	// message the step came from (Message.Name and Message.Data). They are
	// kept so that the message renders as it was given.
	Name string          `json:"name,omitempty"`
	Data json.RawMessage `json:"structured_data,omitempty"`
	// Images are the images of the assistant message the step came from,
	// after its text. No chat API takes images from the assistant, so
	// formats describe them in text (Image.Describe).
	Images []Image `json:"images,omitempty"`
}

// Kind implements Step.
func (*ActionStep) Kind() StepKind { return KindAction }

// Messages implements Step. It renders an assistant message with the
// model's output, its images and its tool calls, and one tool message per
// result (its text, then its images). The observation and error (if any)
// follow as user messages. In summary mode the model's raw output and
// images are left out when the step calls tools (see
// RenderOptions.SummaryMode). A pending action renders the results it has;
// contexts leave it out whole.
func (s *ActionStep) Messages(opts RenderOptions) []Message {
	msgs := make([]Message, 0, 1+len(s.Results)+2)
	text, images := s.assistantText(), s.Images
	if opts.SummaryMode && len(s.ToolCalls) > 0 {
		text, images = "", nil
	}
	if text != "" || len(images) > 0 || len(s.ToolCalls) > 0 || len(s.Data) > 0 {
		m := Message{ID: s.ID, Role: RoleAssistant, Name: s.Name, ToolCalls: s.ToolCalls, Data: cloneSlice(s.Data), Time: s.Time}
		if text != "" {
			m.Content = Text(text)
		}
		for _, img := range images {
			m.Content = append(m.Content, ImagePart(img))
		}
		msgs = append(msgs, m)
	}
	for _, r := range s.Results {
		msgs = append(msgs, s.resultMessage(r))
	}
	if s.Observation != "" {
		msgs = append(msgs, Message{Role: RoleUser, Content: Text("Observation:\n" + s.Observation), Time: s.Time})
	}
	if s.Error != "" {
		msgs = append(msgs, Message{Role: RoleUser, Content: Text("Error:\n" + s.Error + "\nNow let's retry: take care not to repeat previous errors!"), Time: s.Time})
	}
	return msgs
}

// resultMessage renders one result as a tool message.
func (s *ActionStep) resultMessage(r ToolResult) Message {
	m := Message{ID: r.ID, Role: RoleTool, ToolCallID: r.CallID, Name: s.callName(r.CallID), Content: Text(r.Content), Time: s.Time}
	for _, img := range r.Images {
		m.Content = append(m.Content, ImagePart(img))
	}
	if r.IsError {
		m.Metadata = map[string]string{MetaIsError: "true"}
	}
	return m
}

// withResultMetadata returns m, a tool message rendered from r, with r's
// own metadata added. That is how a read of the message (Memory.Recent,
// PopMessage) gives it. The message's keys (its is_error) win.
func withResultMetadata(m Message, r ToolResult) Message {
	if len(r.Metadata) == 0 {
		return m
	}
	md := cloneMap(r.Metadata)
	maps.Copy(md, m.Metadata)
	m.Metadata = md
	return m
}

// PopResult splits the result of the call callID off the action. It
// returns the result as a tool message (as Messages renders it), with the
// result's own metadata added. It also returns a copy of the action
// without it, whose call is pending again. ok is false when the call has
// no result.
func (s *ActionStep) PopResult(callID string) (msg Message, rest *ActionStep, ok bool) {
	for i, r := range s.Results {
		if r.CallID != callID {
			continue
		}
		msg = withResultMetadata(s.resultMessage(r), r)
		rest = s.clone().(*ActionStep)
		rest.Results = slices.Delete(rest.Results, i, i+1)
		return msg, rest, true
	}
	return Message{}, nil, false
}

// assistantText is what the assistant said: its raw output, else its
// thought, plus any code it ran that the output does not already contain.
func (s *ActionStep) assistantText() string {
	text := s.ModelOutput
	if text == "" {
		text = s.Thought
	}
	if s.Code != "" && !strings.Contains(text, s.Code) {
		if text != "" {
			text += "\n"
		}
		text += "```\n" + s.Code + "\n```"
	}
	return text
}

func (s *ActionStep) callName(id string) string {
	for _, c := range s.ToolCalls {
		if c.ID == id {
			return c.Name
		}
	}
	return ""
}

// Pending reports whether some of the step's tool calls have no result
// yet. It is the one definition of a pending action: a context leaves
// pending actions out, and a tool result appended later completes them.
// (Validate holds every result to a distinct call of the step.)
func (s *ActionStep) Pending() bool { return len(s.Results) < len(s.ToolCalls) }

// Unanswered returns the IDs of the tool calls that have no result yet, in
// call order.
func (s *ActionStep) Unanswered() []string {
	var out []string
	for _, c := range s.ToolCalls {
		if _, ok := s.Result(c.ID); !ok {
			out = append(out, c.ID)
		}
	}
	return out
}

// Result returns the result of the tool call with this ID, if it has one.
func (s *ActionStep) Result(callID string) (ToolResult, bool) {
	for _, r := range s.Results {
		if r.CallID == callID {
			return r, true
		}
	}
	return ToolResult{}, false
}

// IsPending reports whether s is a pending action (ActionStep.Pending).
func IsPending(s Step) bool {
	a, ok := s.(*ActionStep)
	return ok && a.Pending()
}

// ObservationLen returns the total length in bytes of the step's tool
// results and observation.
func (s *ActionStep) ObservationLen() int {
	n := len(s.Observation)
	for _, r := range s.Results {
		n += len(r.Content)
	}
	return n
}

// Validate implements Step: every result answers a call of this step and
// no call has more than one. A call may have none yet: the step is then
// pending (see Pending).
func (s *ActionStep) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"thought", s.Thought}, {"model_output", s.ModelOutput}, {"observation", s.Observation},
		{"code", s.Code}, {"error", s.Error},
	} {
		if err := validText(f.name, f.v); err != nil {
			return err
		}
	}
	if err := validateToolCalls("tool_calls", s.ToolCalls); err != nil {
		return err
	}
	if err := validNameData(s.Name, s.Data); err != nil {
		return err
	}
	if err := validImages("images", s.Images); err != nil {
		return err
	}
	calls := make(map[string]bool, len(s.ToolCalls))
	for _, c := range s.ToolCalls {
		calls[c.ID] = true
	}
	answered := make(map[string]bool, len(s.Results))
	for i, r := range s.Results {
		f := fmt.Sprintf("results[%d]", i)
		if !calls[r.CallID] {
			return invalidf(f+".call_id", "tool result for %q has no matching tool call in this step", r.CallID)
		}
		if answered[r.CallID] {
			return invalidf(f+".call_id", "tool call %q has more than one result", r.CallID)
		}
		answered[r.CallID] = true
		if err := validText(f+".content", r.Content); err != nil {
			return err
		}
		if err := validImages(f+".images", r.Images); err != nil {
			return err
		}
		for k, v := range r.Metadata {
			if err := validText(f+".metadata key", k); err != nil {
				return err
			}
			if err := validText(f+".metadata["+k+"]", v); err != nil {
				return err
			}
		}
	}
	if s.Duration < 0 {
		return invalidf("duration_ns", "is negative")
	}
	return nil
}

// Truncate returns a copy of the step whose tool results and observation
// are cut to at most maxLen bytes each, on a UTF-8 boundary. A marker says
// how much was cut. The step itself is not changed.
func (s *ActionStep) Truncate(maxLen int) *ActionStep {
	c := s.clone().(*ActionStep)
	c.Observation = TruncateText(c.Observation, maxLen)
	for i := range c.Results {
		c.Results[i].Content = TruncateText(c.Results[i].Content, maxLen)
	}
	return c
}

func (s *ActionStep) clone() Step {
	c := *s
	c.Metadata = cloneMap(s.Metadata)
	c.ToolCalls = cloneSlice(s.ToolCalls)
	c.Results = cloneResults(s.Results)
	c.Data = cloneSlice(s.Data)
	c.Images = cloneImages(s.Images)
	if s.Usage != nil {
		u := *s.Usage
		c.Usage = &u
	}
	return &c
}

func cloneResults(rs []ToolResult) []ToolResult {
	out := cloneSlice(rs)
	for i := range out {
		out[i].Metadata = cloneMap(out[i].Metadata)
		out[i].Images = cloneImages(out[i].Images)
	}
	return out
}

// TruncateText cuts s to at most maxLen bytes on a UTF-8 boundary and
// appends a marker saying how many bytes were cut. Text that fits is
// returned unchanged. It is idempotent. Text it already cut keeps its
// marker, and is cut further only if its kept part is longer than maxLen.
// The marker then counts every byte cut from the original.
func TruncateText(s string, maxLen int) string {
	if maxLen < 0 {
		maxLen = 0
	}
	if len(s) <= maxLen {
		return s
	}
	kept, cut := s, 0
	if p, n, ok := splitTruncated(s); ok {
		if len(p) <= maxLen {
			return s
		}
		kept, cut = p, n
	}
	end := maxLen
	for end > 0 && !utf8.RuneStart(kept[end]) {
		end--
	}
	return kept[:end] + truncMarker + strconv.Itoa(cut+len(kept)-end) + " bytes]"
}

// truncMarker starts the note TruncateText appends to text it cuts.
const truncMarker = "\n…[truncated "

// splitTruncated splits text produced by TruncateText into the kept
// prefix and the number of bytes cut.
func splitTruncated(s string) (prefix string, cut int, ok bool) {
	i := strings.LastIndex(s, truncMarker)
	if i < 0 {
		return "", 0, false
	}
	num, found := strings.CutSuffix(s[i+len(truncMarker):], " bytes]")
	if !found {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || strconv.Itoa(n) != num {
		return "", 0, false
	}
	return s[:i], n, true
}

// PlanningStep holds a plan the agent made.
type PlanningStep struct {
	StepInfo
	Plan        string `json:"plan"`
	ModelOutput string `json:"model_output,omitempty"`
	Usage       *Usage `json:"usage,omitempty"`
}

// Kind implements Step.
func (*PlanningStep) Kind() StepKind { return KindPlanning }

// Messages implements Step: the plan as an assistant message followed by
// a user message asking to carry it out; nothing in summary mode.
func (s *PlanningStep) Messages(opts RenderOptions) []Message {
	if opts.SummaryMode {
		return nil
	}
	text := s.ModelOutput
	if text == "" {
		text = s.Plan
	}
	return []Message{
		{ID: s.ID, Role: RoleAssistant, Content: Text(text), Time: s.Time},
		{Role: RoleUser, Content: Text("Now proceed and carry out this plan."), Time: s.Time},
	}
}

// Validate implements Step.
func (s *PlanningStep) Validate() error {
	if err := validText("plan", s.Plan); err != nil {
		return err
	}
	return validText("model_output", s.ModelOutput)
}

func (s *PlanningStep) clone() Step {
	c := *s
	c.Metadata = cloneMap(s.Metadata)
	if s.Usage != nil {
		u := *s.Usage
		c.Usage = &u
	}
	return &c
}

// ScratchpadStep holds a working note the agent made.
type ScratchpadStep struct {
	StepInfo
	Content     string `json:"content"`
	ModelOutput string `json:"model_output,omitempty"`
}

// Kind implements Step.
func (*ScratchpadStep) Kind() StepKind { return KindScratchpad }

// Messages implements Step: the model's output (or the note) as an
// assistant message, then "Scratchpad noted: ..." as a user message.
func (s *ScratchpadStep) Messages(RenderOptions) []Message {
	text := s.ModelOutput
	if text == "" {
		text = s.Content
	}
	return []Message{
		{ID: s.ID, Role: RoleAssistant, Content: Text(text), Time: s.Time},
		{Role: RoleUser, Content: Text("Scratchpad noted: " + s.Content), Time: s.Time},
	}
}

// Validate implements Step.
func (s *ScratchpadStep) Validate() error {
	if err := validText("content", s.Content); err != nil {
		return err
	}
	return validText("model_output", s.ModelOutput)
}

func (s *ScratchpadStep) clone() Step {
	c := *s
	c.Metadata = cloneMap(s.Metadata)
	return &c
}

// FinalAnswerStep holds the agent's final answer. It renders as the
// assistant's message. But a context (Memory.Context, Memory.Messages)
// leaves it out when it ends the context, as smolagents renders nothing
// for it. The answer is the run's output, and a request ending with it
// would ask the model to continue its own answer. Once later steps follow
// it (the next user turn of a conversation built from runs), it is shown,
// so the model sees what it answered.
type FinalAnswerStep struct {
	StepInfo
	Answer string `json:"answer"`
}

// Kind implements Step.
func (*FinalAnswerStep) Kind() StepKind { return KindFinalAnswer }

// Messages implements Step: the answer as an assistant message.
func (s *FinalAnswerStep) Messages(RenderOptions) []Message {
	return []Message{{ID: s.ID, Role: RoleAssistant, Content: Text(s.Answer), Time: s.Time}}
}

// Validate implements Step.
func (s *FinalAnswerStep) Validate() error { return validText("answer", s.Answer) }

func (s *FinalAnswerStep) clone() Step {
	c := *s
	c.Metadata = cloneMap(s.Metadata)
	return &c
}

// Range is an inclusive range of step numbers.
type Range struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Len returns the number of step numbers in the range.
func (r Range) Len() int { return r.To - r.From + 1 }

// Contains reports whether n is in the range.
func (r Range) Contains(n int) bool { return n >= r.From && n <= r.To }

// SummaryStep stands in for a range of earlier steps. Covers lists the
// numbers of the steps it replaces, which stay in a durable log. When a
// summary is summarized again, the new summary covers the union.
type SummaryStep struct {
	StepInfo
	Summary string  `json:"summary"`
	Covers  []Range `json:"covers"`
}

// Kind implements Step.
func (*SummaryStep) Kind() StepKind { return KindSummary }

// Messages implements Step: one user message introducing the summary.
func (s *SummaryStep) Messages(RenderOptions) []Message {
	return []Message{{ID: s.ID, Role: RoleUser, Content: Text(s.header() + s.Summary), Time: s.Time}}
}

func (s *SummaryStep) header() string {
	n := 0
	for _, r := range s.Covers {
		n += r.Len()
	}
	if n == 0 {
		return "Summary of earlier steps:\n"
	}
	return fmt.Sprintf("Summary of %d earlier steps (%s):\n", n, formatRanges(s.Covers))
}

// CoversNumber reports whether the summary covers step number n.
func (s *SummaryStep) CoversNumber(n int) bool {
	for _, r := range s.Covers {
		if r.Contains(n) {
			return true
		}
	}
	return false
}

// Validate implements Step.
func (s *SummaryStep) Validate() error {
	if err := validText("summary", s.Summary); err != nil {
		return err
	}
	for i, r := range s.Covers {
		if r.From < 0 || r.To < r.From {
			return invalidf(fmt.Sprintf("covers[%d]", i), "bad range %d-%d", r.From, r.To)
		}
	}
	return nil
}

func (s *SummaryStep) clone() Step {
	c := *s
	c.Metadata = cloneMap(s.Metadata)
	c.Covers = cloneSlice(s.Covers)
	return &c
}

func formatRanges(rs []Range) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		if r.From == r.To {
			b.WriteString(strconv.Itoa(r.From))
		} else {
			b.WriteString(strconv.Itoa(r.From) + "–" + strconv.Itoa(r.To))
		}
	}
	return b.String()
}

// MessageStep wraps one message that is not part of another step kind: a
// user or assistant chat turn, or an agent_call / agent_response between
// agents. Tool calls and tool results belong in an ActionStep instead.
type MessageStep struct {
	StepInfo
	Message Message `json:"message"`
}

// Kind implements Step.
func (*MessageStep) Kind() StepKind { return KindMessage }

// Messages implements Step. Agent calls render as user messages prefixed
// with the caller's name, agent responses as assistant messages.
func (s *MessageStep) Messages(RenderOptions) []Message {
	m := s.Message.Clone()
	if m.ID == "" {
		m.ID = s.ID
	}
	if m.Time.IsZero() {
		m.Time = s.Time
	}
	return []Message{m}
}

// Validate implements Step.
func (s *MessageStep) Validate() error {
	if err := s.Message.Validate(); err != nil {
		return err
	}
	switch s.Message.Role {
	case RoleTool:
		return invalidf("message.role", "tool results belong in an action step with their call")
	case RoleAssistant:
		if len(s.Message.ToolCalls) > 0 {
			return invalidf("message.tool_calls", "tool calls belong in an action step with their results")
		}
	}
	return nil
}

func (s *MessageStep) clone() Step {
	c := *s
	c.Metadata = cloneMap(s.Metadata)
	c.Message = s.Message.Clone()
	return &c
}

func cloneImages(imgs []Image) []Image {
	out := cloneSlice(imgs)
	for i := range out {
		out[i].Data = cloneSlice(out[i].Data)
	}
	return out
}
