package inspector

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// previewRunes bounds a step's one-line preview.
const previewRunes = 160

// stepCost renders a step in a format and counts its messages with
// agentmem's cost model, as Memory does for every step it holds. The
// messages are those of Format.StepMessages, each costing
// agentmem.MessageTokens.
func stepCost(f agentmem.Format, c tokenizer.Counter, s agentmem.Step) (msgs []agentmem.Message, costs []int, total int) {
	msgs = f.StepMessages(s, agentmem.RenderOptions{})
	costs = make([]int, len(msgs))
	for i, m := range msgs {
		costs[i] = agentmem.MessageTokens(c, m)
		total += costs[i]
	}
	return msgs, costs, total
}

// preview returns a one-line summary of a step's content. It reads no
// more of the step's texts than the line can show.
func preview(s agentmem.Step) string {
	var parts []string
	switch s := s.(type) {
	case *agentmem.SystemPromptStep:
		parts = append(parts, s.Content)
	case *agentmem.TaskStep:
		parts = append(parts, s.Task)
	case *agentmem.ActionStep:
		if out := firstNonEmpty(s.ModelOutput, s.Thought); out != "" {
			parts = append(parts, out)
		}
		for _, c := range s.ToolCalls {
			parts = append(parts, c.Name+"("+cutBytes(c.Arguments, previewBytes)+")")
		}
		for _, r := range s.Results {
			parts = append(parts, "→ "+cutBytes(r.Content, previewBytes))
		}
		if s.Observation != "" {
			parts = append(parts, "→ "+cutBytes(s.Observation, previewBytes))
		}
		if s.Error != "" {
			parts = append(parts, "error: "+cutBytes(s.Error, previewBytes))
		}
	case *agentmem.PlanningStep:
		parts = append(parts, s.Plan)
	case *agentmem.ScratchpadStep:
		parts = append(parts, s.Content)
	case *agentmem.FinalAnswerStep:
		parts = append(parts, s.Answer)
	case *agentmem.SummaryStep:
		parts = append(parts, s.Summary)
	case *agentmem.MessageStep:
		parts = append(parts, string(s.Message.Role)+": "+cutBytes(s.Message.Text(), previewBytes))
	}
	var b strings.Builder
	for i, p := range parts {
		if b.Len() >= previewBytes {
			break
		}
		if i > 0 {
			b.WriteString("  ")
		}
		b.WriteString(cutBytes(p, previewBytes))
	}
	return shorten(b.String(), previewRunes)
}

// previewBytes bounds the text preview reads of each of a step's texts,
// and in all. It is what previewRunes runes can take, with room for white
// space that shorten collapses.
const previewBytes = 16 * previewRunes

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// shorten collapses white space and cuts s to n runes, marking the cut.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// toolNames lists the tools an action called.
func toolNames(s agentmem.Step) []string {
	a, ok := s.(*agentmem.ActionStep)
	if !ok {
		return nil
	}
	out := make([]string, len(a.ToolCalls))
	for i, c := range a.ToolCalls {
		out[i] = c.Name
	}
	return out
}

// covers describes what a summary step covers, or "".
func covers(s agentmem.Step) string {
	sum, ok := s.(*agentmem.SummaryStep)
	if !ok {
		return ""
	}
	return formatRanges(sum.Covers)
}

func formatRanges(rs []agentmem.Range) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		if r.From == r.To {
			parts[i] = strconv.Itoa(r.From)
		} else {
			parts[i] = strconv.Itoa(r.From) + "–" + strconv.Itoa(r.To)
		}
	}
	return strings.Join(parts, ", ")
}

// formatSeqs lists sequence numbers, with runs shortened to ranges.
func formatSeqs(seqs []int64) string {
	var rs []agentmem.Range
	for _, s := range seqs {
		n := int(s)
		if k := len(rs) - 1; k >= 0 && rs[k].To+1 == n {
			rs[k].To = n
			continue
		}
		rs = append(rs, agentmem.Range{From: n, To: n})
	}
	return formatRanges(rs)
}

// messageView is a rendered message as the pages show it: its texts cut
// to MaxShownText together (clip).
type messageView struct {
	Role       string
	Name       string
	ToolCallID string
	// Step is the number of the step the message belongs to, when known.
	Step    int
	HasStep bool
	Parts   []partView
	Calls   []callView
	Tokens  int
	IsError bool
}

// partView is one content part.
type partView struct {
	Type    string // text, image, tool_use, tool_result, data
	Text    shownText
	Call    *callView // tool_use
	CallID  string    // tool_result
	IsError bool
}

// callView is one tool or agent call.
type callView struct {
	ID   string
	Name string
	Args shownText
}

// clipper cuts the texts of one message to what is left of its share
// (MaxShownText), in order.
type clipper struct{ left int }

// text clips s to what is left.
func (c *clipper) text(s string) shownText {
	t := clip(s, c.left)
	c.left -= t.Len()
	return t
}

// json clips JSON text, indented when it is short enough to be shown
// whole. A longer one is cut as it is, not indented first.
func (c *clipper) json(s string) shownText {
	if len(s) <= c.left {
		s = prettyJSON(s)
	}
	return c.text(s)
}

func newMessageView(m agentmem.Message, tokens int) messageView {
	v := messageView{Role: string(m.Role), Name: m.Name, ToolCallID: m.ToolCallID, Tokens: tokens,
		IsError: m.Metadata[agentmem.MetaIsError] == "true"}
	c := &clipper{left: MaxShownText}
	for _, p := range m.Content {
		pv := partView{Type: string(p.Type), CallID: p.ToolCallID, IsError: p.IsError}
		switch p.Type {
		case agentmem.PartImage:
			pv.Text = c.text(imageText(p.Image))
		case agentmem.PartToolResult:
			text := p.Text
			if len(p.Images) > 0 && len(text) < c.left {
				for _, img := range p.Images { // a screenshot, in Anthropic's tool_result
					text += "\n" + imageText(&img)
				}
			}
			pv.Text = c.text(text)
		case agentmem.PartToolUse:
			if p.ToolCall != nil {
				pv.Call = &callView{ID: p.ToolCall.ID, Name: p.ToolCall.Name, Args: c.json(p.ToolCall.Arguments)}
			}
		default:
			pv.Text = c.text(p.Text)
		}
		v.Parts = append(v.Parts, pv)
	}
	for _, tc := range m.ToolCalls {
		v.Calls = append(v.Calls, callView{ID: tc.ID, Name: tc.Name, Args: c.json(tc.Arguments)})
	}
	for _, ac := range m.AgentCalls {
		v.Calls = append(v.Calls, callView{ID: ac.ID, Name: "→ agent " + ac.Agent, Args: c.text(ac.Request)})
	}
	if len(m.Data) > 0 {
		v.Parts = append(v.Parts, partView{Type: "data", Text: c.json(string(m.Data))})
	}
	return v
}

// messagesBytes is the size of the text of messages: what counting them
// reads (agentmem.MessageTokens), and what a page would show uncut.
func messagesBytes(msgs []agentmem.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Name) + len(m.Data)
		for _, p := range m.Content {
			n += len(p.Text)
			if p.ToolCall != nil {
				n += len(p.ToolCall.Name) + len(p.ToolCall.Arguments)
			}
		}
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
		for _, c := range m.AgentCalls {
			n += len(c.Agent) + len(c.Request)
		}
	}
	return n
}

func imageText(img *agentmem.Image) string {
	switch {
	case img == nil:
		return "[image]"
	case len(img.Data) > 0:
		return fmt.Sprintf("[image %s, %d bytes]", img.MediaType, len(img.Data))
	case strings.HasPrefix(img.URL, "data:"):
		return fmt.Sprintf("[image, inline data URL of %d bytes]", len(img.URL))
	}
	return "[image " + img.URL + "]"
}

// prettyJSON indents JSON text; anything else is returned as it is.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if json.Valid([]byte(s)) && json.Indent(&buf, []byte(s), "", "  ") == nil {
		return buf.String()
	}
	return s
}

// timeFormat is how pages show times: UTC, to the second.
const timeFormat = "2006-01-02 15:04:05Z"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeFormat)
}

// barWidth is the width, in percent of the bar, of n out of most.
func barWidth(n, most int) string {
	if most <= 0 || n <= 0 {
		return "0"
	}
	w := 100 * float64(n) / float64(most)
	return strconv.FormatFloat(min(100, max(w, 0.5)), 'f', 1, 64)
}

// TokenBarFull is the token count of a full token bar on the timeline.
// Every page draws token bars on this one scale, logarithmic from 1 token
// to TokenBarFull, each tenfold a fifth of the bar. So a step's bar is the
// same on every page and in every session, and a 10-token step still shows
// beside a 10,000-token one.
const TokenBarFull = 100_000

// tokenBarWidth is the width, in percent of the bar, of a step of n
// tokens on the one scale of TokenBarFull.
func tokenBarWidth(n int) string {
	if n <= 0 {
		return "0"
	}
	w := 100 * math.Log10(1+float64(n)) / math.Log10(1+TokenBarFull)
	return strconv.FormatFloat(min(100, max(w, 0.5)), 'f', 1, 64)
}

// sessionHead is a session's metadata as the pages show it.
type sessionHead struct {
	ID, URL           string
	User, UserURL     string
	FactsURL          string
	UserBlocksURL     string
	Agent, AgentURL   string
	Parent, ParentURL string
	ForkSeq           int64
	Created, Updated  string
	Expires           string
	Retention         string
	LastSeq           int64
	Metadata          []kv
	// Pinned says what the session's contexts pin, and PinnedDefault whether
	// that is the default of a session that has no pinning of its own.
	// AutoCompact says what its automatic compaction is ("" when it has
	// none).
	Pinned        string
	PinnedDefault bool
	AutoCompact   string
}

type kv struct{ K, V string }

func newSessionHead(s *store.Session) sessionHead {
	h := sessionHead{
		ID: s.ID, URL: sessionURL(s.ID),
		User: s.UserID, Agent: s.Agent,
		Parent: s.ParentID, ForkSeq: s.ForkSeq,
		Created: formatTime(s.CreatedAt), Updated: formatTime(s.UpdatedAt), Expires: formatTime(s.ExpiresAt),
		Retention: string(s.Retention), LastSeq: s.LastSeq,
	}
	if s.UserID != "" {
		h.UserURL = "/?" + url.Values{"user": {s.UserID}}.Encode()
		h.FactsURL = factsURL(s.UserID)
		h.UserBlocksURL = blocksURL(blocks.User(s.UserID))
	}
	if s.Agent != "" {
		h.AgentURL = "/?" + url.Values{"agent": {s.Agent}}.Encode()
	}
	if s.ParentID != "" {
		h.ParentURL = sessionURL(s.ParentID)
	}
	for k, v := range s.Metadata {
		h.Metadata = append(h.Metadata, kv{k, v})
	}
	slices.SortFunc(h.Metadata, func(a, b kv) int { return strings.Compare(a.K, b.K) })
	h.Pinned, h.PinnedDefault = pinnedText(s.EffectivePinning()), s.Pinning == nil
	if a := s.AutoCompact; a != nil {
		h.AutoCompact = fmt.Sprintf("past %d tokens, down to %d, keeping the newest %d steps", a.MaxTokens, a.Target(), cmp.Or(a.KeepRecent, agentmem.DefaultKeepRecent))
		if a.Summarizer != "" {
			h.AutoCompact += ", " + a.Summarizer + " summaries"
		}
	}
	return h
}

// pinnedText says what a pinning pins, in words.
func pinnedText(p agentmem.Pinning) string {
	var kinds []string
	for _, k := range []struct {
		on   bool
		name string
	}{{p.SystemPrompts, "system prompts"}, {p.Tasks, "every task"}, {p.FirstTask && !p.Tasks, "first task"}, {p.Summary, "summary"}} {
		if k.on {
			kinds = append(kinds, k.name)
		}
	}
	if len(kinds) == 0 {
		return "nothing"
	}
	return strings.Join(kinds, ", ")
}

func sessionURL(id string) string { return "/sessions/" + url.PathEscape(id) }

// withQuery appends a query to a path, if it has any parameters.
func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
