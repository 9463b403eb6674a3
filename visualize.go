package agentmem

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Visualize returns a text picture of the working set: one line per step
// with its number, kind, token cost (default format and counter) and, for
// actions, the tools called and the observation length.
//
//	Memory: 4 steps (2 actions), 1,234 tokens [openai, o200k_base]
//	  #0   system_prompt        312 tok
//	  #1   task                  41 tok
//	  #2   action               512 tok  read_file  obs 1,830 chars
//	  #3   action               369 tok  grep       obs 1,112 chars
func (m *Memory) Visualize() string {
	var b strings.Builder
	_ = m.write(&b, false)
	return b.String()
}

// Dump writes a debug dump of the working set: the Visualize lines, each
// followed by a preview of the step's content.
func (m *Memory) Dump(w io.Writer) error { return m.write(w, true) }

func (m *Memory) write(w io.Writer, detail bool) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	total, actions := ReplyPriming, 0
	costs := make([]int, len(m.entries))
	for i, e := range m.entries {
		costs[i] = e.render(m.format, m.counter, RenderOptions{}).total
		total += costs[i]
		if e.step.Kind() == KindAction {
			actions++
		}
	}
	ew := &errWriter{w: w}
	ew.printf("Memory: %d steps (%d actions), %s tokens [%s, %s]\n", len(m.entries), actions, thousands(total), m.format.Name(), m.counter.Name())
	pinned := make(map[int]bool, len(m.pinned))
	for _, i := range m.pinned {
		pinned[i] = true
	}
	for i, e := range m.entries {
		info := e.step.Info()
		mark := " "
		if pinned[i] {
			mark = "*"
		}
		ew.printf("%s #%-4d %-14s %7s tok", mark, info.Number, e.step.Kind(), thousands(costs[i]))
		switch s := e.step.(type) {
		case *ActionStep:
			var names []string
			for _, c := range s.ToolCalls {
				names = append(names, c.Name)
			}
			if len(names) > 0 {
				ew.printf("  %s", strings.Join(names, ","))
			}
			ew.printf("  obs %s chars", thousands(s.ObservationLen()))
			if s.Pending() {
				ew.printf("  pending %s", strings.Join(s.Unanswered(), ","))
			}
			if s.Error != "" {
				ew.printf("  error")
			}
		case *SummaryStep:
			ew.printf("  covers %s", formatRanges(s.Covers))
		}
		ew.printf("\n")
		if detail {
			for _, msg := range e.step.Messages(RenderOptions{}) {
				ew.printf("        %-9s %s\n", msg.Role, preview(msg, 100))
			}
		}
	}
	return ew.err
}

func preview(msg Message, n int) string {
	s := msg.Text()
	if s == "" && len(msg.ToolCalls) > 0 {
		var calls []string
		for _, c := range msg.ToolCalls {
			calls = append(calls, c.Name+"("+c.Arguments+")")
		}
		s = strings.Join(calls, " ")
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n]) + "…"
	}
	return s
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// errWriter keeps the first write error so printing code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
