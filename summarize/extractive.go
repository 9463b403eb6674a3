package summarize

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/textcut"
	"github.com/agentmem/agentmem/tokenizer"
)

// Extractive summarizes without a model. It writes one line per step
// saying what the agent did ("#12 read_file {"path":"a.go"} → first line
// of the result"). It keeps errors, notes, plans and tasks with more text.
// If the digest is longer than the request's MaxTokens, it drops the least
// important lines first (plain tool calls before errors and notes, older
// before newer), so the summary stays bounded. A previous summary is kept
// as the digest's first lines and condensed the same way.
//
// No line is said twice. A line that repeats an earlier one but for its
// step numbers is said once, with every step number, where it was said
// last. Such a line comes from a user who gave the same correction in
// several turns, or from a previous summary that already holds it.
type Extractive struct {
	// Counter measures MaxTokens; nil means the heuristic counter.
	Counter tokenizer.Counter
	// LineChars bounds the text quoted from each step; 0 means 160.
	LineChars int
}

// line is one candidate line of the digest with its importance.
type line struct {
	text   string
	weight int // higher survives longer
	order  int
}

// Summarize implements agentmem.Summarizer.
func (e Extractive) Summarize(_ context.Context, req agentmem.SummaryRequest) (string, error) {
	width := e.LineChars
	if width <= 0 {
		width = 160
	}
	var lines []line
	add := func(weight int, format string, args ...any) {
		lines = append(lines, line{text: fmt.Sprintf(format, args...), weight: weight, order: len(lines)})
	}
	for _, l := range strings.Split(strings.TrimSpace(req.Previous), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			add(2, "%s", l)
		}
	}
	for _, s := range req.Steps {
		n := s.Info().Number
		switch s := s.(type) {
		case *agentmem.TaskStep:
			add(4, "#%d task: %s", n, clip(s.Task, 2*width))
		case *agentmem.ActionStep:
			e.action(add, n, s, width)
		case *agentmem.PlanningStep:
			add(3, "#%d plan: %s", n, clip(s.Plan, 2*width))
		case *agentmem.ScratchpadStep:
			add(3, "#%d note: %s", n, clip(s.Content, width))
		case *agentmem.FinalAnswerStep:
			add(4, "#%d final answer: %s", n, clip(s.Answer, width))
		case *agentmem.MessageStep:
			add(1, "#%d %s: %s", n, s.Message.Role, clip(s.Message.Text(), width))
		case *agentmem.SummaryStep:
			add(2, "%s", clip(s.Summary, 4*width))
		}
	}
	return e.fit(dedupe(lines), req.MaxTokens), nil
}

// dedupe merges the lines that say the same but for their step numbers:
// "#3 task: x" and "#7 task: x" become "#3, #7 task: x". The merged line
// stays where the last of them was, with the highest weight.
func dedupe(lines []line) []line {
	type said struct {
		nums []string
		at   int // index in out
	}
	seen := make(map[string]*said, len(lines))
	out := make([]line, 0, len(lines))
	for _, l := range lines {
		nums, rest := stepNumbers(l.text)
		prev, ok := seen[rest]
		if !ok {
			seen[rest] = &said{nums: nums, at: len(out)}
			out = append(out, l)
			continue
		}
		for _, n := range nums {
			if !slices.Contains(prev.nums, n) {
				prev.nums = append(prev.nums, n)
			}
		}
		l.weight = max(l.weight, out[prev.at].weight)
		out[prev.at].text = "" // said again below
		l.text = rest
		if len(prev.nums) > 0 {
			l.text = "#" + strings.Join(prev.nums, ", #") + " " + rest
		}
		prev.at = len(out)
		out = append(out, l)
	}
	kept := out[:0]
	for _, l := range out {
		if l.text != "" {
			l.order = len(kept)
			kept = append(kept, l)
		}
	}
	return kept
}

// stepNumbers splits a digest line into the step numbers it starts with
// ("#3, #7 ") and the rest.
func stepNumbers(text string) (nums []string, rest string) {
	rest = text
	for strings.HasPrefix(rest, "#") {
		end := 1
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		if end == 1 {
			break
		}
		nums = append(nums, rest[1:end])
		rest = rest[end:]
		if r, ok := strings.CutPrefix(rest, ", "); ok && strings.HasPrefix(r, "#") {
			rest = r
			continue
		}
		rest = strings.TrimPrefix(rest, " ")
		break
	}
	return nums, rest
}

func (e Extractive) action(add func(int, string, ...any), n int, s *agentmem.ActionStep, width int) {
	if len(s.ToolCalls) == 0 && s.ModelOutput != "" {
		add(1, "#%d said: %s", n, clip(s.ModelOutput, width))
	}
	for _, c := range s.ToolCalls {
		result := ""
		for _, r := range s.Results {
			if r.CallID == c.ID {
				result = r.Content
				if r.IsError {
					result = "error: " + result
				}
			}
		}
		add(1, "#%d %s %s → %s", n, c.Name, clip(c.Arguments, width/2), clip(result, width))
	}
	if s.Observation != "" {
		add(1, "#%d observed: %s", n, clip(s.Observation, width))
	}
	if s.Error != "" {
		add(3, "#%d error: %s", n, clip(s.Error, width))
	}
}

// fit drops the lowest-weight, oldest lines until the digest fits.
func (e Extractive) fit(lines []line, maxTokens int) string {
	c := e.Counter
	if c == nil {
		c = tokenizer.NewHeuristic()
	}
	cost := make([]int, len(lines))
	total := 0
	for i, l := range lines {
		cost[i] = c.Count(l.text) + 1
		total += cost[i]
	}
	dropped := make([]bool, len(lines))
	for w := 0; maxTokens > 0 && total > maxTokens && w <= 4; w++ {
		for i := range lines {
			if total <= maxTokens {
				break
			}
			if lines[i].weight == w && !dropped[i] {
				dropped[i] = true
				total -= cost[i]
			}
		}
	}
	var b strings.Builder
	omitted := 0
	for i, l := range lines {
		if dropped[i] {
			omitted++
			continue
		}
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	if omitted > 0 && total+8 <= maxTokens {
		fmt.Fprintf(&b, "(%d less important lines omitted)\n", omitted)
	}
	return strings.TrimSpace(b.String())
}

// clip flattens whitespace and cuts s to n bytes on a rune boundary.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return textcut.Prefix(s, n) + "…"
}
