package proxy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentmem/agentmem"
)

// How a request's messages are recognised against what the session holds.
// docs/proxy.md states the rule; plan implements it.
//
// The session's held messages are its working set rendered in canonical
// form, pending actions included (heldStep: each step's messages with the
// chat roles, no budget). They are what a client that resends its whole
// history sends back, images where it sent them. A tool result's images
// are in its tool message, as decoded from either API. Both lists are
// split into their leading system messages (the system prompt) and the
// rest (the conversation). They are compared message by message with
// sameMessage, which looks at what the model reads: role, text, images,
// tool calls and tool results (not names, IDs, times or metadata).
//
//  1. The system prompt: when the request's (its system messages' text,
//     joined by blank lines) differs from the held one, the first held
//     system prompt step is amended to it and the others to nothing (the
//     log keeps the old text); when the session holds none, the
//     request's is appended.
//  2. Continuation: the request's conversation begins with the whole held
//     conversation: what follows is appended. A request that resends
//     exactly what is held (a retry whose reply was not recorded) appends
//     nothing.
//  3. Overlap: the request's conversation contains the held newest
//     message, preceded by at least one more held message (or by every
//     message before it in the request): what follows its latest
//     occurrence is appended. This covers clients that trim or summarise
//     the front of their history themselves, and a retry of new messages
//     whose reply was not recorded.
//  4. New messages only: the request shares no message with the start of
//     the held conversation: all of it is appended.
//  5. Rewind: otherwise the request's history stops short of, or departs
//     from, the held conversation after a common start (a retry after the
//     reply was recorded, a regenerated reply, an edited turn): the held
//     messages after the common start are popped from the working set
//     (the log keeps them), at most MaxRewind of them, and the rest of the
//     request is appended. The session then holds what the client holds.

// MaxRewind bounds the held messages a request may pop by departing from
// the session's history (rule 5). A request that would pop more is refused
// with 409: start a new session (or fork one) for a history that
// different.
const MaxRewind = 64

// plan is what recognising a request against a session decided.
type plan struct {
	// system is the request's system prompt text when it must replace the
	// held one (rule 1); systemSteps are the held system prompt steps.
	system      *string
	systemSteps []*agentmem.SystemPromptStep
	// rewind is the number of held messages to pop first (rule 5), and
	// held the number of held conversation messages.
	rewind, held int
	// sys are system messages to append (rule 1, a session without one).
	// conv is the request's conversation, and from the index of its first
	// message to append.
	sys  []agentmem.Message
	conv []agentmem.Message
	from int
	// rule names the rule that decided (for the call record).
	rule string
}

// appended returns the messages to append, given how many of the held
// conversation's messages are left. A rewind pops whole steps' messages,
// so perhaps fewer are left than planned.
func (p *plan) appended(left int) []agentmem.Message {
	from := p.from
	if p.rule == ruleRewind {
		from = min(from, left)
	}
	return append(slices.Clip(p.sys), p.conv[from:]...)
}

// Rule names, as the call record and the X-Agentmem-History header give
// them.
const (
	ruleNew          = "new"          // the session held nothing
	ruleContinuation = "continuation" // rule 2
	ruleOverlap      = "overlap"      // rule 3
	ruleNewOnly      = "new_only"     // rule 4
	ruleRewind       = "rewind"       // rule 5
)

// heldStep renders a step as the messages a client holds for it. These are
// its canonical messages with the chat roles (agentmem.ChatRoles), with
// images where they came; a format's rendering may move or describe them.
func heldStep(s agentmem.Step) []agentmem.Message {
	msgs := s.Messages(agentmem.RenderOptions{})
	for i := range msgs {
		msgs[i] = agentmem.ChatRoles(msgs[i])
	}
	return msgs
}

// heldMessages renders a working set in canonical form, pending actions
// included, and returns the system prompt steps that lead it.
func heldMessages(steps []agentmem.Step) ([]agentmem.Message, []*agentmem.SystemPromptStep) {
	var msgs []agentmem.Message
	var sys []*agentmem.SystemPromptStep
	leading := true
	for _, s := range steps {
		if p, ok := s.(*agentmem.SystemPromptStep); ok && leading {
			sys = append(sys, p)
		} else {
			leading = false
		}
		msgs = append(msgs, stepMessages(s)...)
	}
	return msgs, sys
}

// stepMessages renders a held step in canonical form. The assistant
// message of a reply recorded cut short carries MetaReplyTruncated, for
// sameMessage.
func stepMessages(s agentmem.Step) []agentmem.Message {
	msgs := heldStep(s)
	if s.Info().Metadata[MetaReplyTruncated] == "true" {
		for i := range msgs {
			if msgs[i].Role == agentmem.RoleAssistant {
				msgs[i].Metadata = map[string]string{MetaReplyTruncated: "true"}
			}
		}
	}
	return msgs
}

// splitSystem splits messages into their leading system messages and the
// rest.
func splitSystem(msgs []agentmem.Message) (sys, rest []agentmem.Message) {
	i := 0
	for i < len(msgs) && msgs[i].Role == agentmem.RoleSystem {
		i++
	}
	return msgs[:i], msgs[i:]
}

// systemText joins the text of system messages as one system prompt, the
// empty ones left out.
func systemText(msgs []agentmem.Message) string {
	var b bytes.Buffer
	for _, m := range msgs {
		t := m.Text()
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(t)
	}
	return b.String()
}

// planHistory recognises the request's messages (canonical) against the
// session's working set.
func planHistory(steps []agentmem.Step, req []agentmem.Message) (*plan, error) {
	if p, ok := planNewOnly(steps, steps, false, req); ok {
		return p, nil
	}
	held, heldSys := heldMessages(steps)
	rSys, rConv := splitSystem(req)
	hConv := held[len(heldSys):]
	p := &plan{systemSteps: heldSys, conv: rConv, held: len(hConv)}
	if len(held) == 0 {
		p.sys, p.rule = rSys, ruleNew
		return p, nil
	}
	// Rule 1: the system prompt.
	switch {
	case len(rSys) == 0:
	case len(heldSys) == 0:
		p.sys = rSys
	default:
		var hs []agentmem.Message
		for _, s := range heldSys {
			hs = append(hs, heldStep(s)...)
		}
		if text := systemText(rSys); systemText(hs) != text {
			p.system = &text
		}
	}
	k := commonPrefix(rConv, hConv)
	return p.conversation(k, rConv, hConv)
}

// conversation applies rules 2 to 5, given the common prefix k of the
// request's conversation and the held one.
func (p *plan) conversation(k int, rConv, hConv []agentmem.Message) (*plan, error) {
	switch {
	case k == len(hConv): // rule 2
		p.from, p.rule = k, ruleContinuation
		return p, nil
	case len(rConv) == 0:
		// Only a system prompt: nothing of the conversation to compare.
		p.from, p.rule = 0, ruleContinuation
		return p, nil
	}
	if at, ok := overlap(rConv, hConv); ok { // rule 3
		p.from, p.rule = at, ruleOverlap
		return p, nil
	}
	if k == 0 { // rule 4
		p.from, p.rule = 0, ruleNewOnly
		return p, nil
	}
	// Rule 5.
	p.rewind = len(hConv) - k
	if p.rewind > MaxRewind {
		return nil, &Error{Status: 409, Code: CodeHistoryDiverged, Field: "messages",
			Message: historyDiverged(k, len(hConv))}
	}
	p.from, p.rule = k, ruleRewind
	return p, nil
}

// planNewOnly decides the common case of a request of new messages only
// (rules 3 and 4) without rendering the whole working set. When the
// request's first conversation message is not the held one's, only the
// held system prompt and newest messages matter. head is a prefix of the
// working set and tail a suffix. They are the same slice, the whole
// working set, unless partial says that steps between them were left out
// (sessions.Service.History with Head and Tail). It returns false when the
// request's first conversation message is the held one (or there is none),
// or when what it needs was left out. planHistory then decides on the
// whole working set.
func planNewOnly(head, tail []agentmem.Step, partial bool, req []agentmem.Message) (*plan, bool) {
	lead := 0
	var heldSys []*agentmem.SystemPromptStep
	for lead < len(head) {
		s, ok := head[lead].(*agentmem.SystemPromptStep)
		if !ok {
			break
		}
		heldSys = append(heldSys, s)
		lead++
	}
	rSys, rConv := splitSystem(req)
	if len(rConv) == 0 || len(heldSys) == 0 && len(rSys) > 0 || partial && lead == len(head) {
		return nil, false
	}
	var first *agentmem.Message
	for _, s := range head[lead:] {
		if msgs := stepMessages(s); len(msgs) > 0 {
			first = &msgs[0]
			break
		}
	}
	if first == nil || sameMessage(rConv[0], *first) {
		return nil, false
	}
	// The newest held messages, enough for overlap.
	stop := 0 // the first index of tail that is not a leading system prompt step
	if !partial {
		stop = lead
	}
	var held []agentmem.Message
	i := len(tail) - 1
	for ; i >= stop && len(held) <= len(rConv); i-- {
		held = append(stepMessages(tail[i]), held...)
	}
	if partial && i < stop && len(held) <= len(rConv) {
		return nil, false // overlap may need what was left out
	}
	p := &plan{systemSteps: heldSys, conv: rConv}
	if len(rSys) > 0 {
		var hs []agentmem.Message
		for _, s := range heldSys {
			hs = append(hs, heldStep(s)...)
		}
		if text := systemText(rSys); systemText(hs) != text {
			p.system = &text
		}
	}
	if at, ok := overlap(rConv, held); ok {
		p.from, p.rule = at, ruleOverlap
	} else {
		p.from, p.rule = 0, ruleNewOnly
	}
	return p, true
}

// commonPrefix returns the length of the longest common prefix of a and
// b.
func commonPrefix(a, b []agentmem.Message) int {
	n := 0
	for n < len(a) && n < len(b) && sameMessage(a[n], b[n]) {
		n++
	}
	return n
}

// overlap finds the latest occurrence in req of the held newest message,
// preceded in order by at least one more held message or by every message
// before it in req. It returns the index after it.
func overlap(req, held []agentmem.Message) (int, bool) {
	if len(held) == 0 {
		return 0, false
	}
	last := held[len(held)-1]
	for p := len(req); p > 0; p-- {
		if !sameMessage(req[p-1], last) {
			continue
		}
		run := 1
		for run < p && run < len(held) && sameMessage(req[p-1-run], held[len(held)-1-run]) {
			run++
		}
		if run >= 2 || run == p {
			return p, true
		}
	}
	return 0, false
}

// sameMessage reports whether a request's canonical message says the same
// to a model as a held one. It compares role, text, images, tool calls
// (arguments compared as JSON when they are) and tool results with their
// error flag. Names, IDs, times and other metadata are not compared. A
// held reply recorded cut short (MetaReplyTruncated) is the same as the
// whole reply the client got and sends back. Its text is a prefix of the
// message's, and its tool calls (IDs and names) begin the message's.
func sameMessage(a, b agentmem.Message) bool {
	if b.Metadata[MetaReplyTruncated] == "true" {
		return truncationOf(a, b)
	}
	if a.Role != b.Role || a.ToolCallID != b.ToolCallID || a.Text() != b.Text() || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	if (a.Metadata[agentmem.MetaIsError] == "true") != (b.Metadata[agentmem.MetaIsError] == "true") {
		return false
	}
	if !slices.EqualFunc(images(a.Content), images(b.Content), sameImage) {
		return false
	}
	for i, c := range a.ToolCalls {
		d := b.ToolCalls[i]
		if c.ID != d.ID || c.Name != d.Name || !sameArguments(c.Arguments, d.Arguments) {
			return false
		}
	}
	return true
}

// images returns the images of content, in order.
func images(c agentmem.Content) []agentmem.Image {
	var out []agentmem.Image
	for _, p := range c {
		if p.Type == agentmem.PartImage && p.Image != nil {
			out = append(out, *p.Image)
		}
	}
	return out
}

func sameImage(a, b agentmem.Image) bool {
	return a.URL == b.URL && bytes.Equal(a.Data, b.Data) && a.Detail == b.Detail
}

// sameArguments compares tool call arguments: as compacted JSON when both
// are JSON (a client may re-encode an object it parsed), as text
// otherwise.
func sameArguments(a, b string) bool {
	if a == b {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, []byte(a)) != nil || json.Compact(&cb, []byte(b)) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// truncationOf reports whether a held reply recorded cut short is a
// truncation of a message. It has the same role, a prefix of its text, and
// the first of its tool calls by ID and name; their arguments may be cut.
func truncationOf(a, b agentmem.Message) bool {
	if a.Role != b.Role || !strings.HasPrefix(a.Text(), b.Text()) || len(b.ToolCalls) > len(a.ToolCalls) {
		return false
	}
	for i, c := range b.ToolCalls {
		if d := a.ToolCalls[i]; c.ID != d.ID || c.Name != d.Name {
			return false
		}
	}
	return true
}
