package inspector

import (
	"context"
	"errors"
	"strconv"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// Bounds of the chart of context sizes on the session page.
const (
	// MaxChartEntries bounds the log the chart covers. A session with a
	// longer log gets a note instead; each call's page still shows what it
	// sent.
	MaxChartEntries = 5000
	// MaxChartCalls bounds the calls the chart draws: the calls of a
	// session with more are sampled evenly, the first and the newest
	// always drawn.
	MaxChartCalls = 60
)

// sizeChart is an inline SVG chart of what each model call of a session
// was sent. It shows the tokens of its context, as the "what the model
// saw" page computes them under the page's view, and the budget.
type sizeChart struct {
	W, H                     int
	Left, Top, Right, Bottom float64
	Path                     string // the line through the points
	Points                   []sizePoint
	Budget                   int
	BudgetY                  string // "" without a budget
	YTicks                   []tick
	XTicks                   []tick
	// Calls counts the session's calls; Drawn the points drawn (fewer
	// when sampled).
	Calls, Drawn int
	// Blind counts the calls at which nothing could be sent (the pinned
	// steps alone were over the budget).
	Blind int
}

// sizePoint is one call on the chart.
type sizePoint struct {
	Seq    int64 // the step the call produced
	Tokens int   // what its context cost; 0 when Blind
	Blind  bool
	X, Y   string
	URL    string // what the model saw at that call
}

// isCall reports whether a step is a model's answer to a call. It is what
// the model produced, so the context before it is what the model was sent.
func isCall(s agentmem.Step) bool {
	switch s.Kind() {
	case agentmem.KindAction, agentmem.KindFinalAnswer, agentmem.KindPlanning:
		return true
	case agentmem.KindMessage:
		m, ok := s.(*agentmem.MessageStep)
		return ok && m.Message.Role == agentmem.RoleAssistant
	}
	return false
}

// sampleCalls returns at most n of the indexes, evenly spread, the first
// and the last included.
func sampleCalls(idx []int, n int) []int {
	if len(idx) <= n {
		return idx
	}
	out := make([]int, 0, n)
	for k := range n {
		out = append(out, idx[k*(len(idx)-1)/(n-1)])
	}
	return out
}

// errChartText is newSizeChart's error for a log with more text than it
// counts (MaxChartBytes).
var errChartText = errors.New("inspector: the log holds too much text for the chart")

// newSizeChart renders the context of each call of sess's log (sampled
// down to MaxChartCalls) under v, and draws it. The contexts are counted
// by counter (v's tokenizer) and fitted to fit tokens with the session's
// pinning. link gives a call's page. It returns nil for a log without
// calls.
//
// The contexts before the calls share most of their steps, so they are
// counted by one page counter (counter, if it is one). Each text is
// tokenized once for the chart, not once for each call it is sent to. When
// that is more than MaxChartBytes of text the counter has not counted yet,
// it returns errChartText.
func newSizeChart(ctx context.Context, svc *sessions.Service, sess *store.Session, entries []store.Entry, v view, fit int, counter tokenizer.Counter, link func(seq int64) string) (*sizeChart, error) {
	pc := asPageCounter(counter)
	pc.limitTo(MaxChartBytes)
	defer pc.limitTo(0)
	var calls []int
	for i, e := range entries {
		if e.Kind == store.StepEntry && e.Step != nil && isCall(e.Step) {
			calls = append(calls, i)
		}
	}
	if len(calls) == 0 {
		return nil, nil
	}
	c := &sizeChart{W: 760, H: 170, Left: 52, Top: 14, Budget: v.Budget, Calls: len(calls)}
	c.Right, c.Bottom = float64(c.W)-14, float64(c.H)-22
	most := v.Budget
	for _, i := range sampleCalls(calls, MaxChartCalls) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lc, err := svc.ContextOfLog(ctx, sess, entries[:i], sessions.ContextRequest{Budget: fit, Format: v.Format, Counter: pc, TruncateToFill: v.Truncate})
		var be *agentmem.BudgetError
		if err != nil && !errors.As(err, &be) {
			return nil, err
		}
		if pc.exceeded() {
			return nil, errChartText
		}
		pt := sizePoint{Seq: entries[i].Seq, URL: link(entries[i].Seq)}
		if lc.Context != nil {
			pt.Tokens = lc.Context.Tokens
		} else {
			pt.Blind = true
			c.Blind++
		}
		most = max(most, pt.Tokens)
		c.Points = append(c.Points, pt)
	}
	c.Drawn = len(c.Points)
	top := niceCeil(float64(most) * 1.08)
	y := func(n float64) float64 { return c.Bottom - (c.Bottom-c.Top)*n/top }
	first, last := c.Points[0].Seq, c.Points[len(c.Points)-1].Seq
	x := func(seq int64) float64 {
		if last == first {
			return (c.Left + c.Right) / 2
		}
		return c.Left + (c.Right-c.Left)*float64(seq-first)/float64(last-first)
	}
	for i := range c.Points {
		pt := &c.Points[i]
		pt.X, pt.Y = num(x(pt.Seq)), num(y(float64(pt.Tokens)))
		if i == 0 {
			c.Path = "M" + pt.X + " " + pt.Y
		} else {
			c.Path += " L" + pt.X + " " + pt.Y
		}
	}
	if v.Budget > 0 {
		c.BudgetY = num(y(float64(v.Budget)))
	}
	for _, f := range []float64{0, 0.5, 1} {
		c.YTicks = append(c.YTicks, tick{Pos: num(y(top * f)), Label: compactTokens(top * f)})
	}
	c.XTicks = []tick{{Pos: num(c.Left), Label: "#" + strconv.FormatInt(first, 10), Anchor: "start"}}
	if last != first {
		c.XTicks = append(c.XTicks, tick{Pos: num(c.Right), Label: "#" + strconv.FormatInt(last, 10), Anchor: "end"})
	}
	return c, nil
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten (at least 10).
func niceCeil(v float64) float64 {
	p := 10.0
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// compactTokens formats a token count for an axis: 800, 1.5k, 20k, 1.2M.
func compactTokens(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
