package inspector

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDiffText(t *testing.T) {
	for _, c := range []struct {
		before, after string
		want          change
	}{
		{"", "Name: Ann.", change{Inserted: "Name: Ann."}},
		{"Name: Ann.", "Name: Ann.\nLikes tea.", change{Prefix: "Name: Ann.", Inserted: "\nLikes tea."}},
		{"Name: Ann.\nLikes tea.", "Name: Ann.\nLikes coffee.", change{Prefix: "Name: Ann.\nLikes ", Deleted: "tea", Inserted: "coffee", Suffix: "."}},
		{"Likes tea. Likes tea.", "Likes tea.", change{Prefix: "Likes tea.", Deleted: " Likes tea."}},
		{"abc", "xyz", change{Deleted: "abc", Inserted: "xyz"}},
		// Runes that share their first bytes: the cut goes back to the
		// start of the rune, in both texts ("é" is C3 A9, "ê" C3 AA).
		{"café", "cafê", change{Prefix: "caf", Deleted: "é", Inserted: "ê"}},
		// Runes that share their last bytes: the cut goes forward to the
		// end of the rune ("é" C3 A9, "©" C2 A9).
		{"é!", "©!", change{Deleted: "é", Inserted: "©", Suffix: "!"}},
		// An insertion between the same runes: prefix and suffix do not
		// overlap.
		{"aa", "aaa", change{Prefix: "aa", Inserted: "a"}},
	} {
		if got := diffText(c.before, c.after); got != c.want {
			t.Errorf("diffText(%q, %q) = %+v, want %+v", c.before, c.after, got, c.want)
		}
	}
}

// FuzzDiffText: whatever the texts, the change rebuilds both of them, cuts
// valid UTF-8 at rune boundaries, and leaves out all it can: the parts
// that differ do not start, nor end, with the same rune.
func FuzzDiffText(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"Name: Ann.", "Name: Ann.\nLikes tea."}, {"café", "cafê"}, {"é!", "©!"}, {"\xff\xfe", "\xff"}, {"aaa", "aa"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, before, after string) {
		c := diffText(before, after)
		if c.Prefix+c.Deleted+c.Suffix != before || c.Prefix+c.Inserted+c.Suffix != after {
			t.Fatalf("diffText(%q, %q) = %+v does not rebuild them", before, after, c)
		}
		if !utf8.ValidString(before) || !utf8.ValidString(after) {
			return
		}
		for _, s := range []string{c.Prefix, c.Deleted, c.Inserted, c.Suffix} {
			if !utf8.ValidString(s) {
				t.Fatalf("diffText(%q, %q) = %+v cuts a rune", before, after, c)
			}
		}
		if c.Deleted != "" && c.Inserted != "" {
			d, _ := utf8.DecodeRuneInString(c.Deleted)
			i, _ := utf8.DecodeRuneInString(c.Inserted)
			dl, _ := utf8.DecodeLastRuneInString(c.Deleted)
			il, _ := utf8.DecodeLastRuneInString(c.Inserted)
			if d == i || dl == il {
				t.Fatalf("diffText(%q, %q) = %+v leaves a common rune in the change", before, after, c)
			}
		}
		if (c.Deleted == "") != (c.Inserted == "") && before != after {
			// A pure insertion or deletion: the rest is all common.
			if len(c.Prefix)+len(c.Suffix) != min(len(before), len(after)) {
				t.Fatalf("diffText(%q, %q) = %+v", before, after, c)
			}
		}
	})
}

// newDiffView shows at most diffContext bytes of unchanged text on each
// side, and says how much it left out.
func TestDiffViewBounds(t *testing.T) {
	before := strings.Repeat("unchanged words ", 1000)
	after := before[:8000] + "NEW " + before[8000:]
	d := newDiffView(before, after)
	if d.Same || d.Del.Len() != 0 || d.Ins.Len() != len("NEW ") {
		t.Fatalf("diff of an insertion: %+v", d)
	}
	if d.Head.Len() > diffContext || d.HeadCut+d.Head.Len() != 8000 {
		t.Errorf("head: %d bytes shown, %d left out, of 8000", d.Head.Len(), d.HeadCut)
	}
	if d.Tail.Len() > diffContext || d.Tail.Len()+d.Tail.More != len(before)-8000 {
		t.Errorf("tail: %d bytes shown, %d left out, of %d", d.Tail.Len(), d.Tail.More, len(before)-8000)
	}
	if !newDiffView("x", "x").Same {
		t.Error("equal texts are not the same")
	}
	// A rewrite of a long value shows at most MaxShownText of each side.
	d = newDiffView(strings.Repeat("a ", 50_000), strings.Repeat("b ", 50_000))
	if d.Del.Len() > MaxShownText || d.Ins.Len() > MaxShownText || d.Del.More == 0 || d.Ins.More == 0 {
		t.Errorf("a long rewrite shows %d and %d bytes", d.Del.Len(), d.Ins.Len())
	}
}
