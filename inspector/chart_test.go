package inspector

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// points parses SVG path data made of M and L commands.
func points(t *testing.T, d string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, cmd := range strings.Split(d, " L") {
		xy := strings.Fields(strings.TrimPrefix(cmd, "M"))
		if len(xy) != 2 {
			t.Fatalf("bad path data %q", d)
		}
		x, err1 := strconv.ParseFloat(xy[0], 64)
		y, err2 := strconv.ParseFloat(xy[1], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad path data %q", d)
		}
		out = append(out, [2]float64{x, y})
	}
	return out
}

func TestChartFollowsConfidence(t *testing.T) {
	now := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)
	created := now.Add(-10 * 24 * time.Hour)
	halving := FactView{Text: "halves daily", Confidence: 1, CreatedAt: created,
		EffectiveAt: func(t time.Time) float64 { return math.Exp2(-t.Sub(created).Hours() / 24) }}
	flat := FactView{Text: "no decay", Confidence: 0.5, CreatedAt: created}
	broken := FactView{Text: "NaN and out of range", Confidence: 2, CreatedAt: created,
		EffectiveAt: func(t time.Time) float64 {
			if t.Before(now) {
				return math.NaN()
			}
			return 7
		}}
	ts := newTimeScale([]FactView{halving, flat, broken}, now)
	if !ts.start.Equal(created) || !ts.end.After(now) {
		t.Fatalf("time scale %v to %v, want from the creation to past now", ts.start, ts.end)
	}
	c := newChart([]FactView{halving, flat, broken}, []string{"c0", "c1", "c2"}, ts, 400, 100, true)
	y := func(v float64) float64 { return c.Top + c.Height*(1-v) }
	x := func(tm time.Time) float64 {
		return c.Left + c.Width*float64(tm.Sub(ts.start))/float64(ts.end.Sub(ts.start))
	}

	past, future := points(t, c.Lines[0].Past), points(t, c.Lines[0].Future)
	if len(past)+len(future) < chartSamples {
		t.Fatalf("%d points, want about %d", len(past)+len(future), chartSamples)
	}
	// Solid up to now, dashed after: the two parts meet at now.
	if last, first := past[len(past)-1], future[0]; last != first || math.Abs(last[0]-x(now)) > 0.06 {
		t.Errorf("the parts meet at %v and %v, want both at now (x=%.1f)", last, first, x(now))
	}
	for _, p := range append(past, future...) {
		tm := ts.start.Add(time.Duration((p[0] - c.Left) / c.Width * float64(ts.end.Sub(ts.start))))
		if want := y(halving.EffectiveAt(tm)); math.Abs(p[1]-want) > 0.2 {
			t.Fatalf("point %v: y %.1f, want %.1f", p, p[1], want)
		}
	}
	for i := 1; i < len(past); i++ {
		if past[i][1] < past[i-1][1] {
			t.Fatalf("a decaying fact's line rises: %v", past)
		}
	}
	for _, p := range points(t, c.Lines[1].Past+" L"+strings.TrimPrefix(c.Lines[1].Future, "M")) {
		if p[1] != y(0.5) {
			t.Fatalf("a fact without decay is not flat at its confidence: %v", p)
		}
	}
	brokenPast := points(t, c.Lines[2].Past)
	for _, p := range brokenPast[:len(brokenPast)-1] { // the last is at now
		if p[1] != y(0) {
			t.Fatalf("NaN is not drawn as 0: %v", p)
		}
	}
	for _, p := range points(t, c.Lines[2].Future)[1:] {
		if p[1] != y(1) {
			t.Fatalf("a confidence above 1 is not drawn as 1: %v", p)
		}
	}
	if len(c.Lines[0].Marks) != 1 || c.Lines[0].Marks[0].Y != num(y(1)) {
		t.Errorf("the creation mark: %v", c.Lines[0].Marks)
	}
}

// labelBox is the horizontal extent of a label drawn at pos with anchor.
func labelBox(t *testing.T, tk tick) (float64, float64) {
	t.Helper()
	x, err := strconv.ParseFloat(tk.Pos, 64)
	if err != nil {
		t.Fatalf("label position %q", tk.Pos)
	}
	w := labelWidth(tk.Label)
	switch tk.Anchor {
	case "start":
		return x, x + w
	case "end":
		return x - w, x
	}
	return x - w/2, x + w/2
}

// No label of the facts chart runs into another, whatever the facts' ages:
// the dates at the ends of the time axis, and "now", which is near the
// start when the facts are new.
func TestChartLabelsDoNotOverlap(t *testing.T) {
	now := time.Date(2026, 3, 20, 12, 0, 0, 0, time.UTC)
	for _, age := range []time.Duration{time.Minute, time.Hour, 20 * time.Hour, 3 * 24 * time.Hour, 30 * 24 * time.Hour, 400 * 24 * time.Hour} {
		f := FactView{Text: "f", Confidence: 0.8, CreatedAt: now.Add(-age)}
		ts := newTimeScale([]FactView{f}, now)
		c := newChart([]FactView{f}, []string{"c0"}, ts, 760, 180, true)
		// The row of labels under the plot.
		row := append([]tick(nil), c.XTicks...)
		for i := range row {
			for j := i + 1; j < len(row); j++ {
				a0, a1 := labelBox(t, row[i])
				b0, b1 := labelBox(t, row[j])
				if a0 < b1+4 && b0 < a1+4 {
					t.Errorf("facts %v old: labels %q and %q overlap (%.0f-%.0f, %.0f-%.0f)", age, row[i].Label, row[j].Label, a0, a1, b0, b1)
				}
			}
		}
		// "now" is labelled above the plot, inside the chart.
		if c.NowLabel.Label != "now" {
			t.Fatalf("facts %v old: the now line has no label", age)
		}
		if x0, x1 := labelBox(t, c.NowLabel); x0 < 0 || x1 > float64(c.W) {
			t.Errorf("facts %v old: the now label (%.0f-%.0f) leaves the chart of width %d", age, x0, x1, c.W)
		}
		if c.Top < 14 {
			t.Errorf("facts %v old: no room above the plot (top %.0f) for the now label", age, c.Top)
		}
	}
}
