package inspector

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// chartSamples is the number of points a chart line has.
const chartSamples = 64

// chartColors is the number of line colours the stylesheet defines
// (classes c0 to c7).
const chartColors = 8

// chart is an inline SVG chart of confidence (0 to 1) over time, drawn
// server-side. It has a line per fact, solid up to now and dashed after.
type chart struct {
	W, H   int
	Left   float64 // the plot area
	Top    float64
	Width  float64
	Height float64
	Right  float64 // Left + Width
	Bottom float64 // Top + Height
	NowX   string
	// NowLabel labels the now line above the plot, clear of the date
	// labels below it, however close to a chart end now is.
	NowLabel tick
	XTicks   []tick
	YTicks   []tick
	Lines    []chartLine
	Axes     bool
}

type tick struct {
	Pos    string
	Label  string
	Anchor string // text-anchor of an x label: start, middle or end
}

// chartLine is one fact's confidence line.
type chartLine struct {
	Class  string
	Label  string
	Past   string // SVG path data up to now
	Future string // SVG path data from now to the end of the chart
	Marks  []mark // reinforcements
}

type mark struct{ X, Y string }

// timeScale maps the chart's time span onto its plot area.
type timeScale struct {
	start, now, end time.Time
}

// newTimeScale spans the facts from the oldest creation to now. It adds a
// third of that (at least a day) to show where decay is heading.
func newTimeScale(facts []FactView, now time.Time) timeScale {
	start := now
	for _, f := range facts {
		if !f.CreatedAt.IsZero() && f.CreatedAt.Before(start) {
			start = f.CreatedAt
		}
	}
	ahead := max(now.Sub(start)/3, 24*time.Hour)
	if now.Sub(start) < time.Hour {
		start = now.Add(-time.Hour)
	}
	return timeScale{start: start, now: now, end: now.Add(ahead)}
}

// effective is a fact's confidence at t, clamped to [0, 1]; NaN is 0.
func effective(f FactView, t time.Time) float64 {
	c := f.Confidence
	if f.EffectiveAt != nil {
		c = f.EffectiveAt(t)
	}
	if math.IsNaN(c) {
		return 0
	}
	return min(1, max(0, c))
}

// newChart draws facts on a w×h chart; axes adds the labels and grid of a
// full chart (a sparkline has none).
func newChart(facts []FactView, classes []string, ts timeScale, w, h int, axes bool) *chart {
	c := &chart{W: w, H: h, Axes: axes}
	if axes {
		c.Left, c.Top, c.Width, c.Height = 34, 18, float64(w)-34-12, float64(h)-18-22
	} else {
		c.Left, c.Top, c.Width, c.Height = 1, 2, float64(w)-2, float64(h)-4
	}
	c.Right, c.Bottom = c.Left+c.Width, c.Top+c.Height
	span := ts.end.Sub(ts.start)
	x := func(t time.Time) float64 {
		return c.Left + c.Width*float64(t.Sub(ts.start))/float64(span)
	}
	y := func(v float64) float64 { return c.Top + c.Height*(1-v) }
	c.NowX = num(x(ts.now))
	if axes {
		for _, v := range []float64{0, 0.25, 0.5, 0.75, 1} {
			c.YTicks = append(c.YTicks, tick{Pos: num(y(v)), Label: strconv.FormatFloat(v, 'f', -1, 64)})
		}
		// The dates below the plot, at its ends; "now" above it, where
		// it cannot run into them.
		c.XTicks = []tick{
			{Pos: num(x(ts.start)), Label: ts.start.UTC().Format("2006-01-02"), Anchor: "start"},
			{Pos: num(x(ts.end)), Label: ts.end.UTC().Format("2006-01-02"), Anchor: "end"},
		}
		c.NowLabel = tick{Pos: num(x(ts.now)), Label: "now", Anchor: "middle"}
		switch nx := x(ts.now); {
		case nx-labelWidth("now")/2 < 0:
			c.NowLabel.Anchor = "start"
		case nx+labelWidth("now")/2 > float64(w):
			c.NowLabel.Anchor = "end"
		}
	}
	for i, f := range facts {
		from := f.CreatedAt
		if from.IsZero() || from.Before(ts.start) {
			from = ts.start
		}
		var past, future strings.Builder
		step := ts.end.Sub(from) / chartSamples
		for k := 0; k <= chartSamples; k++ {
			t := from.Add(step * time.Duration(k))
			if k == chartSamples {
				t = ts.end
			}
			pt := num(x(t)) + " " + num(y(effective(f, t)))
			if !t.After(ts.now) {
				pathTo(&past, pt)
			}
			if !t.Before(ts.now) {
				pathTo(&future, pt)
			}
			// The line crosses now between two samples: both parts meet there.
			if next := from.Add(step * time.Duration(k+1)); t.Before(ts.now) && next.After(ts.now) {
				at := num(x(ts.now)) + " " + num(y(effective(f, ts.now)))
				pathTo(&past, at)
				pathTo(&future, at)
			}
		}
		line := chartLine{Class: classes[i], Label: f.Text, Past: past.String(), Future: future.String()}
		for _, t := range []time.Time{f.CreatedAt, f.ReinforcedAt} {
			if !t.IsZero() && !t.Before(ts.start) && !t.After(ts.now) {
				line.Marks = append(line.Marks, mark{X: num(x(t)), Y: num(y(effective(f, t)))})
			}
		}
		c.Lines = append(c.Lines, line)
	}
	return c
}

// labelWidth estimates the width of a chart label in the stylesheet's
// 10px monospace font (6.02px a character).
func labelWidth(s string) float64 { return 6.1 * float64(len([]rune(s))) }

// pathTo extends SVG path data to a point.
func pathTo(b *strings.Builder, pt string) {
	if b.Len() == 0 {
		b.WriteString("M")
	} else {
		b.WriteString(" L")
	}
	b.WriteString(pt)
}

// num formats a coordinate.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
