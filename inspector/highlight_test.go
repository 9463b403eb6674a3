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
