package facts

import (
	"context"
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestDecayEffective(t *testing.T) {
	d := Decay{HalfLife: 24 * time.Hour, Floor: 0.2}
	f := Fact{Confidence: 0.8, ReinforcedAt: t0}
	cases := []struct {
		name    string
		f       Fact
		d       Decay
		elapsed time.Duration
		want    float64
	}{
		{"no time", f, d, 0, 0.8},
		{"clock behind", f, d, -time.Hour, 0.8},
		{"one half-life", f, d, 24 * time.Hour, 0.5},
		{"two half-lives", f, d, 48 * time.Hour, 0.35},
		{"half a half-life", f, d, 12 * time.Hour, 0.2 + 0.6/math.Sqrt2},
		{"a thousand half-lives: the floor", f, d, 1000 * 24 * time.Hour, 0.2},
		{"base below the floor stays", Fact{Confidence: 0.1, ReinforcedAt: t0}, d, 48 * time.Hour, 0.1},
		{"zero floor", f, Decay{HalfLife: time.Hour}, time.Hour, 0.4},
		{"no decay", f, Decay{HalfLife: -1, Floor: 0.5}, 1000 * time.Hour, 0.8},
	}
	for _, c := range cases {
		if got := c.d.Effective(c.f, t0.Add(c.elapsed)); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: Effective = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDecayMonotone checks that effective confidence never rises with
// time and never leaves [min(floor, base), base].
func TestDecayMonotone(t *testing.T) {
	d := Decay{HalfLife: 7 * 24 * time.Hour, Floor: 0.3}
	for _, base := range []float64{0, 0.1, 0.3, 0.31, 0.7, 1} {
		f := Fact{Confidence: base, ReinforcedAt: t0}
		prev := 2.0
		for h := 0; h < 5000; h += 7 {
			c := d.Effective(f, t0.Add(time.Duration(h)*time.Hour))
			if c > prev || c > base || c < min(base, d.Floor) {
				t.Fatalf("base %v after %dh: %v (previous %v)", base, h, c, prev)
			}
			prev = c
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	m := New(NewMemStore(), Options{})
	o := m.Options()
	if o.Decay != (Decay{HalfLife: DefaultHalfLife, Floor: DefaultFloor}) || o.DefaultConfidence != DefaultConfidence ||
		o.Gain != DefaultGain || o.InjectThreshold != DefaultInjectThreshold || o.Similarity != DefaultSimilarity || o.Clock == nil {
		t.Fatalf("defaults = %+v", o)
	}
	// With the defaults, a fact at the default confidence stays above
	// the inject threshold for more than two half-lives: no steep decay.
	f := Fact{Confidence: DefaultConfidence, ReinforcedAt: t0}
	if c := o.Decay.Effective(f, t0.Add(2*DefaultHalfLife)); c < DefaultInjectThreshold {
		t.Fatalf("after two half-lives: %v, below the inject threshold", c)
	}
}

func TestReinforceSaturates(t *testing.T) {
	now := t0
	m := New(NewMemStore(), Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	var last float64
	for i := range 40 {
		r, err := m.Remember(ctx, RememberRequest{UserID: "u", Text: "Is left-handed."})
		if err != nil {
			t.Fatal(err)
		}
		if r.Fact.Confidence > 1 || r.Fact.Confidence < last {
			t.Fatalf("confidence after %d reinforcements: %v (before %v)", i, r.Fact.Confidence, last)
		}
		last = r.Fact.Confidence
		now = now.Add(time.Hour)
	}
	if last < 0.99 {
		t.Fatalf("40 reinforcements reach only %v", last)
	}
}

func TestSimilarity(t *testing.T) {
	cases := []struct {
		a, b string
		same bool
	}{
		{"Likes green tea.", "the user LIKES green tea", true},
		{"Has two daughters.", "Has 2 daughters.", false},
		{"Lives in Berlin.", "Lives in Paris.", false},
		{"Is a vegetarian.", "Vegetarian.", true},
		{"I am", "i   AM", true},
		{"I am", "you are", false},
	}
	for _, c := range cases {
		sim := lexicalSimilarity(termFreq(c.a), termFreq(c.b), c.a, c.b)
		if (sim >= DefaultSimilarity) != c.same {
			t.Errorf("similarity(%q, %q) = %v; same fact: want %v", c.a, c.b, sim, c.same)
		}
	}
}
