package agentmem

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/tokenizer"
)

// countingCounter counts a counter's calls.
type countingCounter struct {
	tokenizer.Counter
	calls int
}

func (c *countingCounter) Count(s string) int {
	c.calls++
	return c.Counter.Count(s)
}

// fitBisect is the bisection fitTruncated replaced: the reference its
// answers are compared with.
func fitBisect(a *ActionStep, room int, f Format, c tokenizer.Counter, ro RenderOptions) int {
	longest := len(a.Observation)
	for _, r := range a.Results {
		longest = max(longest, len(r.Content))
	}
	fits := func(limit int) bool { return renderStep(a.Truncate(limit), f, c, ro).total <= room }
	lo, hi := 0, longest-1
	if !fits(lo) {
		return -1
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// TestFitTruncated fits random actions (an observation, results, text of
// several scripts) into random rooms: the limit found fits and the next
// one does not (or is the whole step), it is nearly always the
// bisection's (the two can stop at different limits where a longer text
// counts fewer tokens), and it takes at most two thirds of the
// bisection's counts.
func TestFitTruncated(t *testing.T) {
	base, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"error", "main.go:12", "func", "{", "}", "日本語の", "résumé", "0x7f3a", "\n", "    ", "Traceback", "🙂", "the", "a"}
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	var probes, reference, same, cases int
	for i := range 300 {
		a := &ActionStep{StepInfo: StepInfo{ID: fmt.Sprint(i), Number: 1},
			ToolCalls: []ToolCall{{ID: "c1", Name: "grep", Arguments: `{"q":"x"}`}}}
		switch i % 3 {
		case 0:
			a.Observation = text(200 + r.IntN(6000))
		case 1:
			a.Results = []ToolResult{{CallID: "c1", Content: text(200 + r.IntN(6000))}}
		default:
			a.ToolCalls = append(a.ToolCalls, ToolCall{ID: "c2", Name: "ls", Arguments: "{}"})
			a.Results = []ToolResult{{CallID: "c1", Content: text(100 + r.IntN(3000))}, {CallID: "c2", Content: text(100 + r.IntN(3000))}}
			a.Observation = text(r.IntN(500))
		}
		f := OpenAI
		c := &countingCounter{Counter: base}
		full := renderStep(a, f, c, RenderOptions{}).total
		room := 1 + r.IntN(full-1)
		c.calls = 0
		got, r := fitTruncated(a, full, room, f, c, RenderOptions{})
		probes += c.calls
		if got != nil { // not the probes: the rendering of the step found
			c.calls = 0
			renderStep(got, f, c, RenderOptions{})
			probes -= c.calls
		}
		// The counting wrapper hides the encoding from the chunk cache:
		// with the encoding itself the probes count through one, and
		// must find the same step.
		if cached, _ := fitTruncated(a, full, room, f, base, RenderOptions{}); (cached == nil) != (got == nil) || (got != nil && !stepsEqual(cached, got)) {
			t.Errorf("case %d: counting through a chunk cache fits another step", i)
		}
		c.calls = 0
		want := fitBisect(a, room, f, c, RenderOptions{})
		reference += c.calls
		cost := func(limit int) int { return renderStep(a.Truncate(limit), f, base, RenderOptions{}).total }
		if got == nil {
			if want > 0 {
				t.Errorf("case %d: nothing fits %d tokens, the bisection found limit %d", i, room, want)
			}
			continue
		}
		cases++
		// The limit in bytes that gives the step returned.
		lim := -1
		for l := range max(len(a.Observation), longestResult(a)) {
			if stepsEqual(a.Truncate(l), got) {
				lim = l
				break
			}
		}
		if lim < 0 {
			t.Fatalf("case %d: the step returned is no truncation of the action", i)
		}
		if cost(lim) > room {
			t.Errorf("case %d: the truncated step costs %d, room %d", i, cost(lim), room)
		}
		if r.total != cost(lim) || len(r.msgs) == 0 {
			t.Errorf("case %d: the rendering returned costs %d in %d messages, the step %d", i, r.total, len(r.msgs), cost(lim))
		}
		// The next longer truncation (several limits can give the same
		// one: a cut falls on a rune boundary) does not fit.
		longest := max(len(a.Observation), longestResult(a))
		next := lim + 1
		for next < longest && stepsEqual(a.Truncate(next), got) {
			next++
		}
		if next < longest && cost(next) <= room {
			t.Errorf("case %d: limit %d fits %d tokens, and so does %d", i, lim, room, next)
		}
		if stepsEqual(a.Truncate(want), got) {
			same++
		}
	}
	if same < cases*95/100 {
		t.Errorf("the bisection's limit in %d of %d cases", same, cases)
	}
	if 3*probes > 2*reference {
		t.Errorf("%d counts against the bisection's %d: want at most two thirds", probes, reference)
	}
	t.Logf("%d cases, the bisection's answer in %d; %d counts, the bisection %d", cases, same, probes, reference)
}

func longestResult(a *ActionStep) int {
	n := 0
	for _, r := range a.Results {
		n = max(n, len(r.Content))
	}
	return n
}

func stepsEqual(a, b *ActionStep) bool {
	if a.Observation != b.Observation || len(a.Results) != len(b.Results) {
		return false
	}
	for i := range a.Results {
		if a.Results[i].Content != b.Results[i].Content {
			return false
		}
	}
	return true
}
