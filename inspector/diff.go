package inspector

import "unicode/utf8"

// diffContext bounds the unchanged text a diff shows on each side of the
// change, in bytes.
const diffContext = 160

// change is a change of a text, found by cutting what the text before and
// after have in common at their start and at their end. Before is
// Prefix+Deleted+Suffix and After is Prefix+Inserted+Suffix, every cut at
// a rune boundary of both texts. An edit of one place of a text (an
// append, a replace) is exactly its Deleted and Inserted. A rewrite shows
// as one replacement of everything that differs.
type change struct {
	Prefix, Deleted, Inserted, Suffix string
}

// diffText returns the change from before to after. It reads each text
// once, from each end.
func diffText(before, after string) change {
	n := min(len(before), len(after))
	p := 0
	for p < n && before[p] == after[p] {
		p++
	}
	// Back off to a boundary of both texts. The bytes before p are the same
	// in both and those at p are not, so either may be inside a rune.
	for p > 0 && (p < len(before) && !utf8.RuneStart(before[p]) || p < len(after) && !utf8.RuneStart(after[p])) {
		p--
	}
	s := 0
	for s < n-p && before[len(before)-1-s] == after[len(after)-1-s] {
		s++
	}
	// The suffixes are the same bytes: a boundary of one is one of the
	// other.
	for s > 0 && !utf8.RuneStart(before[len(before)-s]) {
		s--
	}
	return change{
		Prefix:   before[:p],
		Deleted:  before[p : len(before)-s],
		Inserted: after[p : len(after)-s],
		Suffix:   before[len(before)-s:],
	}
}

// diffView is a change as a page shows it. It has the end of the unchanged
// text before it, with HeadCut bytes before that left out. It has the text
// deleted and inserted, each clipped to MaxShownText, and the start of the
// unchanged text after it. Each unchanged side is at most diffContext
// bytes.
type diffView struct {
	HeadCut  int
	Head     shownText
	Del, Ins shownText
	Tail     shownText
	// Same is set when the texts are equal.
	Same bool
}

// newDiffView returns the change from before to after as a page shows it.
func newDiffView(before, after string) diffView {
	if before == after {
		return diffView{Same: true}
	}
	c := diffText(before, after)
	start := max(0, len(c.Prefix)-diffContext)
	for start < len(c.Prefix) && !utf8.RuneStart(c.Prefix[start]) {
		start++
	}
	return diffView{
		HeadCut: start,
		Head:    clip(c.Prefix[start:], diffContext),
		Del:     clip(c.Deleted, MaxShownText),
		Ins:     clip(c.Inserted, MaxShownText),
		Tail:    clip(c.Suffix, diffContext),
	}
}
