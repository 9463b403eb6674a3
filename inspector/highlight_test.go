package inspector

import (
	"strings"
	"testing"

	"github.com/agentmem/agentmem/recall"
)

func TestHighlight(t *testing.T) {
	terms := map[string]bool{}
	for _, term := range recall.Tokenize("the migrations of Lisbon") {
		terms[term] = true
	}
	text := "We are migrating: the LISBON migration <b>failed</b>, lisbonne not."
	segs := highlight(text, terms)
	var whole, marked strings.Builder
	for _, s := range segs {
		whole.WriteString(s.Text)
		if s.Mark {
			marked.WriteString("[" + s.Text + "]")
		}
	}
	if whole.String() != text {
		t.Fatalf("segments do not put the text back together: %q", whole.String())
	}
	// Stemmed alike, case aside; stop words and other words are not marked.
	if got := marked.String(); got != "[migrating][LISBON][migration]" {
		t.Fatalf("marked %s", got)
	}
	if segs := highlight("", terms); len(segs) != 0 {
		t.Fatalf("empty text: %+v", segs)
	}
}

func TestSampleCalls(t *testing.T) {
	idx := make([]int, 200)
	for i := range idx {
		idx[i] = 3 * i
	}
	got := sampleCalls(idx, MaxChartCalls)
	if len(got) != MaxChartCalls || got[0] != 0 || got[len(got)-1] != 597 {
		t.Fatalf("sampled %d calls from %d to %d; want %d from the first to the last", len(got), got[0], got[len(got)-1], MaxChartCalls)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("not increasing: %v", got)
		}
	}
	if few := sampleCalls(idx[:5], MaxChartCalls); len(few) != 5 {
		t.Fatalf("a few calls are sampled: %v", few)
	}
}
