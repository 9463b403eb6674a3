package recall

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
)

func TestTokenize(t *testing.T) {
	got := Tokenize("The Cats AREN'T running, Anna's café-Bar: 2023! Ünïcode_Straße generously")
	want := []string{"cat", "run", "anna", "café", "bar", "2023", "ünïcode", "straße", "generous"}
	if !slices.Equal(got, want) {
		t.Errorf("Tokenize = %q, want %q", got, want)
	}
	for _, w := range []string{"the", "and", "is", "what", "s", "t", "you"} {
		if !IsStopWord(w) {
			t.Errorf("IsStopWord(%q) = false", w)
		}
	}
	if got := Tokenize("the and of it is"); len(got) != 0 {
		t.Errorf("Tokenize of stop words = %q", got)
	}
	// A word longer than MaxTermBytes is cut on a rune boundary.
	long := strings.Repeat("é", 200) // 400 bytes
	got = Tokenize(long)
	if len(got) != 1 || len(got[0]) > MaxTermBytes || !strings.HasPrefix(long, got[0]) {
		t.Errorf("Tokenize(400 bytes) = %d bytes", len(got[0]))
	}
}

func TestStem(t *testing.T) {
	for in, want := range map[string]string{
		"running": "run", "caresses": "caress", "ponies": "poni", "generously": "generous",
		"adoption": "adopt", "counseling": "counsel", "is": "is", "café": "café", "2023": "2023", "b2b": "b2b",
	} {
		if got := Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
}

// corpus is a hand-made corpus; its analyzed lengths are 3, 6, 4 and 2.
var corpus = []Doc{
	{ID: "a", Text: "The cat sat on the mat"},
	{ID: "b", Text: "The dog chased the cat around the cat tree"},
	{ID: "c", Text: "Dogs and cats living together"},
	{ID: "d", Text: "A bird in the hand"},
}

// bm25 is the BM25 term score, written out for the test.
func bm25(tf, df, n, dl, avg float64) float64 {
	idf := math.Log(1 + (n-df+0.5)/(df+0.5))
	return idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*dl/avg))
}

func TestMemoryBM25(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	if err := m.Upsert(context.Background(), corpus...); err != nil {
		t.Fatal(err)
	}
	const avg = 15.0 / 4
	for _, tt := range []struct {
		query  string
		want   []string
		scores []float64
	}{
		{"cat", []string{"b", "a", "c"}, []float64{bm25(2, 3, 4, 6, avg), bm25(1, 3, 4, 3, avg), bm25(1, 3, 4, 4, avg)}},
		{"dogs and a cat", []string{"c", "b", "a"}, []float64{
			bm25(1, 2, 4, 4, avg) + bm25(1, 3, 4, 4, avg),
			bm25(1, 2, 4, 6, avg) + bm25(2, 3, 4, 6, avg),
			bm25(1, 3, 4, 3, avg),
		}},
		{"hands", []string{"d"}, []float64{bm25(1, 1, 4, 2, avg)}},
	} {
		ms, err := m.Lexical(context.Background(), LexicalQuery{Terms: Tokenize(tt.query), Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, mm := range ms {
			got = append(got, mm.ID)
			if i < len(tt.scores) && math.Abs(mm.Score-tt.scores[i]) > 1e-12 {
				t.Errorf("%q: %s scores %v, want %v", tt.query, mm.ID, mm.Score, tt.scores[i])
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q: %v, want %v", tt.query, got, tt.want)
		}
	}
}

func TestGateTerms(t *testing.T) {
	df := map[string]float64{"rare": 10, "mid": 900, "common": 40_000, "commoner": 60_000, "absent": 0}
	f := func(s string) float64 { return df[s] }
	terms := []string{"common", "rare", "absent", "commoner", "mid"}
	if got := GateTerms(terms, f, 5_000); !slices.Equal(got, []string{"common", "rare", "commoner", "mid"}) {
		t.Errorf("small tenant: %v, want every held term", got)
	}
	if got := GateTerms(terms, f, 100_000); !slices.Equal(got, []string{"rare", "mid"}) {
		t.Errorf("large tenant: %v, want rare, mid", got)
	}
	if got := GateTerms([]string{"commoner", "common"}, f, 100_000); !slices.Equal(got, []string{"common"}) {
		t.Errorf("only common terms: %v, want the rarest", got)
	}
}

// TestMemoryGating checks that in a large tenant a document holding only
// a common query term is not a candidate while rarer ones match, and is
// when none does.
func TestMemoryGating(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	var docs []Doc
	for i := range GateMinDocs {
		docs = append(docs, Doc{ID: "f" + strings.Repeat("0", 6-len(itoa(i))) + itoa(i), Text: "filler common"})
	}
	docs = append(docs, Doc{ID: "rare", Text: "common needle"}, Doc{ID: "common-only", Text: "common common common"})
	if err := m.Upsert(context.Background(), docs...); err != nil {
		t.Fatal(err)
	}
	ms, err := m.Lexical(context.Background(), LexicalQuery{Terms: []string{"common", "needl"}, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].ID != "rare" {
		t.Errorf("gated search = %+v, want rare only", ms)
	}
	ms, _ = m.Lexical(context.Background(), LexicalQuery{Terms: []string{"common"}, Limit: 1})
	if len(ms) != 1 || ms[0].ID != "common-only" {
		t.Errorf("common-only search = %+v, want common-only first", ms)
	}
}

func itoa(i int) string { return seqString(int64(i)) }

func TestFilterMatch(t *testing.T) {
	d := Doc{Metadata: map[string]string{"a": "1", "b": ""}, Time: t1}
	for _, tt := range []struct {
		f    Filter
		want bool
	}{
		{Filter{}, true},
		{Filter{Metadata: map[string]string{"a": "1"}}, true},
		{Filter{Metadata: map[string]string{"b": ""}}, true},
		{Filter{Metadata: map[string]string{"c": ""}}, false},
		{Filter{Metadata: map[string]string{"a": "2"}}, false},
		{Filter{Since: t1}, true},
		{Filter{Until: t1}, false},
		{Filter{Since: t1.Add(-time.Second), Until: t1.Add(time.Second)}, true},
		{Filter{Since: t1.Add(time.Nanosecond)}, false},
	} {
		if got := tt.f.Match(&d); got != tt.want {
			t.Errorf("%+v.Match = %v, want %v", tt.f, got, tt.want)
		}
	}
	if (Filter{Since: t1}).Match(&Doc{}) {
		t.Error("a time range matched a document without a time")
	}
}

var t1 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestSmooth(t *testing.T) {
	ms := []Match{
		{ID: "a2", Group: "a", Seq: 2, Score: 10},
		{ID: "a3", Group: "a", Seq: 3, Score: 4},
		{ID: "b1", Group: "b", Seq: 1, Score: 6},
		{ID: "x", Score: 1},
	}
	got := smooth(ms, &Ranking{NeighbourWeight: 0.5, GroupWeight: -1})
	want := map[string]float64{"a2": 10 + 0.5*4, "a3": 4 + 0.5*10, "b1": 6, "x": 1}
	unresolved := map[place]float64{{"a", 1}: 0.5 * 10, {"a", 4}: 0.5 * 4, {"b", 0}: 0.5 * 6, {"b", 2}: 0.5 * 6}
	for _, m := range got {
		if m.ID == "" {
			if w, ok := unresolved[place{m.Group, m.Seq}]; !ok || math.Abs(w-m.Score) > 1e-12 {
				t.Errorf("neighbour %s/%d: %v, want %v", m.Group, m.Seq, m.Score, w)
			}
			delete(unresolved, place{m.Group, m.Seq})
			continue
		}
		if math.Abs(want[m.ID]-m.Score) > 1e-12 {
			t.Errorf("%s: %v, want %v", m.ID, m.Score, want[m.ID])
		}
		delete(want, m.ID)
	}
	if len(want) != 0 || len(unresolved) != 0 {
		t.Errorf("missing %v %v", want, unresolved)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Score > got[i-1].Score {
			t.Errorf("not sorted: %+v", got)
		}
	}
	// The group share: group a sums 14, b 6; the best doc scores 10.
	got = smooth(ms, &Ranking{NeighbourWeight: -1, GroupWeight: 0.5})
	for _, m := range got {
		w := map[string]float64{"a2": 10 + 0.5*10, "a3": 4 + 0.5*10, "b1": 6 + 0.5*10*6/14, "x": 1}[m.ID]
		if math.Abs(w-m.Score) > 1e-12 {
			t.Errorf("group share: %s = %v, want %v", m.ID, m.Score, w)
		}
	}
}

func TestFuseRRF(t *testing.T) {
	lex := []Match{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	vec := []Match{{ID: "c"}, {ID: "d"}}
	got := fuseRRF(60, lex, vec)
	want := map[string]float64{"a": 1.0 / 61, "b": 1.0 / 62, "c": 1.0/63 + 1.0/61, "d": 1.0 / 62}
	if got[0].ID != "c" || len(got) != 4 {
		t.Fatalf("fused %+v", got)
	}
	for _, m := range got {
		if math.Abs(m.Score-want[m.ID]) > 1e-12 {
			t.Errorf("%s: %v, want %v", m.ID, m.Score, want[m.ID])
		}
	}
}

func TestDiversify(t *testing.T) {
	ms := []Match{{ID: "a1", Group: "a", Score: 10}, {ID: "a2", Group: "a", Score: 9}, {ID: "a3", Group: "a", Score: 8}, {ID: "b1", Group: "b", Score: 7}}
	var got []string
	for _, m := range diversify(ms, 3, 0.5) {
		got = append(got, m.ID)
	}
	// a2 decays to 4.5 after a1: b1 (7) comes second.
	if !slices.Equal(got, []string{"a1", "b1", "a2"}) {
		t.Errorf("diversify = %v", got)
	}
	if got := diversify(ms, 3, -1); len(got) != 4 {
		t.Errorf("off: %d", len(got))
	}
}

func TestBlendAndExpansion(t *testing.T) {
	top := []Match{{ID: "1", Score: 3}, {ID: "2", Score: 1}}
	docs := []Doc{{ID: "1", Text: "kayak river trip"}, {ID: "2", Text: "river rafting"}}
	// river: 3/4/3 + 1/4/2 = 0.375; kayak and trip: 0.25; raft: 0.125.
	got := expansionTerms(top, docs, []string{"trip"}, 2)
	if !slices.Equal(got, []string{"river", "kayak"}) {
		t.Errorf("expansionTerms = %v", got)
	}
	b := blend([]Match{{ID: "x", Score: 4}, {ID: "y", Score: 2}}, []Match{{ID: "y", Score: 10}, {ID: "z", Score: 5}}, 1)
	want := map[string]float64{"x": 4, "y": 2 + 4*10/10, "z": 4 * 5 / 10}
	if len(b) != 3 || b[0].ID != "y" {
		t.Fatalf("blend = %+v", b)
	}
	for _, m := range b {
		if math.Abs(m.Score-want[m.ID]) > 1e-12 {
			t.Errorf("blend %s = %v, want %v", m.ID, m.Score, want[m.ID])
		}
	}
}

func TestCheckDoc(t *testing.T) {
	d, err := CheckDoc(Doc{ID: "x", Metadata: map[string]string{}, Embedding: []float32{}, Time: t1.Add(999 * time.Nanosecond).In(time.FixedZone("Z", 60))})
	if err != nil {
		t.Fatal(err)
	}
	if d.Metadata != nil || d.Embedding != nil || !d.Time.Equal(t1) || d.Time.Location() != time.UTC {
		t.Errorf("CheckDoc = %+v", d)
	}
}

func TestPutGeneratesIDs(t *testing.T) {
	ctx := context.Background()
	ix := New(NewMemory(MemoryOptions{}), Options{})
	defer ix.Close()
	ids, err := ix.Put(ctx, Doc{Tenant: "t", Text: "The quick brown fox", Metadata: map[string]string{"tag": "test"}},
		Doc{ID: "mine", Tenant: "t", Text: "a lazy dog"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] == "" || ids[1] != "mine" {
		t.Fatalf("Put returned %q; want a new ID, then the given one", ids)
	}
	d, err := ix.Get(ctx, "t", ids[0])
	if err != nil || d.Text != "The quick brown fox" || d.Metadata["tag"] != "test" {
		t.Fatalf("Get(%q) = %+v, %v", ids[0], d, err)
	}
	again, err := ix.Put(ctx, Doc{Tenant: "t", Text: "The quick brown fox"})
	if err != nil || again[0] == ids[0] {
		t.Fatalf("a second Put without an ID = %q, %v; want another new ID", again, err)
	}
	if _, err := ix.Put(ctx, Doc{Tenant: "t", Text: "\xff"}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("Put of invalid text: %v, want ErrInvalid", err)
	}
}
