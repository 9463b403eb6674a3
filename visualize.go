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
func (m *workingSet) Visualize() string {
	var b strings.Builder
	_ = m.write(&b, false)
	return b.String()
}

// Dump writes a debug dump of the working set: the Visualize lines, each
// followed by a preview of the step's content.
func (m *workingSet) Dump(w io.Writer) error { return m.write(w, true) }

// Overview describes the working set step by step: what Visualize draws,
// as data (agentmem inspect --json prints it).
type Overview struct {
	Steps   []StepOverview `json:"steps"`
	Actions int            `json:"actions"`
	// Tokens is what the whole working set costs, reply priming included.
	Tokens  int    `json:"tokens"`
	Format  string `json:"format"`
	Counter string `json:"counter"`
}

// StepOverview is one step of an Overview.
type StepOverview struct {
	Number int      `json:"number"`
	Kind   StepKind `json:"kind"`
	// Tokens is what the step costs rendered under the memory's format and
	// counter.
	Tokens int `json:"tokens"`
	// Pinned steps are shown in every context.
	Pinned bool `json:"pinned,omitempty"`
	// Tools are the names of an action's tool calls, in order.
	Tools []string `json:"tools,omitempty"`
	// ObservationChars is the length of an action's observations.
	ObservationChars int `json:"observation_chars,omitempty"`
	// Pending lists the call IDs of an action that await results.
	Pending []string `json:"pending,omitempty"`
	// Error reports an action that failed.
	Error bool `json:"error,omitempty"`
	// Covers are the step numbers a summary replaces.
	Covers []Range `json:"covers,omitempty"`
}

// Overview returns the working set step by step.
func (m *workingSet) Overview() Overview {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.overview()
}

func (m *workingSet) overview() Overview {
	o := Overview{Tokens: ReplyPriming, Format: m.format.Name(), Counter: m.counter.Name(), Steps: make([]StepOverview, len(m.entries))}
	pinned := make(map[int]bool, len(m.pinned))
	for _, i := range m.pinned {
		pinned[i] = true
	}
	for i, e := range m.entries {
		so := StepOverview{Number: e.step.Info().Number, Kind: e.step.Kind(), Pinned: pinned[i],
			Tokens: e.render(m.format, m.counter, RenderOptions{}).total}
		switch s := e.step.(type) {
		case *ActionStep:
			o.Actions++
			for _, c := range s.ToolCalls {
				so.Tools = append(so.Tools, c.Name)
			}
			so.ObservationChars = s.ObservationLen()
			if s.Pending() {
				so.Pending = s.Unanswered()
			}
			so.Error = s.Error != ""
		case *SummaryStep:
			so.Covers = s.Covers
		}
		o.Tokens += so.Tokens
		o.Steps[i] = so
	}
	return o
}

func (m *workingSet) write(w io.Writer, detail bool) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	o := m.overview()
	ew := &errWriter{w: w}
	ew.printf("Memory: %d steps (%d actions), %s tokens [%s, %s]\n", len(o.Steps), o.Actions, thousands(o.Tokens), o.Format, o.Counter)
	for i, so := range o.Steps {
		mark := " "
		if so.Pinned {
			mark = "*"
		}
		ew.printf("%s #%-4d %-14s %7s tok", mark, so.Number, so.Kind, thousands(so.Tokens))
		switch so.Kind {
		case KindAction:
			if len(so.Tools) > 0 {
				ew.printf("  %s", strings.Join(so.Tools, ","))
			}
			ew.printf("  obs %s chars", thousands(so.ObservationChars))
			if len(so.Pending) > 0 {
				ew.printf("  pending %s", strings.Join(so.Pending, ","))
			}
			if so.Error {
				ew.printf("  error")
			}
		case KindSummary:
			ew.printf("  covers %s", formatRanges(so.Covers))
		}
		ew.printf("\n")
		if detail {
			for _, msg := range m.entries[i].step.Messages(RenderOptions{}) {
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
