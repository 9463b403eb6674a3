package tokenizer

import (
	"strings"
	"testing"
)

// TestPieceBoundary checks pieceBoundary's claim on the corpora: every
// position it returns is where a piece of both split patterns begins.
func TestPieceBoundary(t *testing.T) {
	texts := append(stressCorpus(stressSeed+2, 500), corpusDocs()[:200]...)
	texts = append(texts, "a \n\nb", "\n/x", "x\n/", "'s 's", "1 2", "é é", "a\u0301 b")
	for _, name := range []string{O200kBase, CL100kBase} {
		checked := 0
		for _, s := range texts {
			s = validText(s)
			starts := map[int]bool{}
			off := 0
			for _, p := range handPieces(name, s) {
				starts[off] = true
				off += len(p)
			}
			for p := pieceBoundary(s, 0); p > 0; p = pieceBoundary(s, p+1) {
				if !starts[p] {
					t.Fatalf("%s: pieceBoundary(%q) = %d, which is inside a piece", name, s, p)
				}
				checked++
			}
		}
		if checked < 1000 {
			t.Errorf("%s: only %d boundaries checked", name, checked)
		}
	}
	if got := pieceBoundary("a\n/b", 0); got != -1 {
		t.Errorf(`pieceBoundary("a\n/b") = %d, want -1`, got)
	}
}

func TestCountParallel(t *testing.T) {
	text := corpusText()
	stress := strings.Join(stressCorpus(stressSeed+3, 2000), "")
	workerCounts := []int{0, 1, 2, 7}
	if raceEnabled || testing.Short() {
		text = text[:300<<10]
		workerCounts = []int{0, 3}
	}
	for _, name := range []string{O200kBase, CL100kBase} {
		c := mustEncoder(t, name)
		for _, s := range []string{text, stress, "", "x", strings.Repeat("ab ", 1<<17)} {
			want := c.Count(s)
			for _, workers := range workerCounts {
				if got := CountParallel(c, s, workers); got != want {
					t.Errorf("%s: CountParallel(%d bytes, %d workers) = %d, Count = %d", name, len(s), workers, got, want)
				}
			}
			// Small chunks: many cuts, each of which must be exact.
			if got := c.(*bpe).countParallel(s, 3, 1<<10); got != want {
				t.Errorf("%s: countParallel(%d bytes, 1 kB chunks) = %d, Count = %d", name, len(s), got, want)
			}
		}
	}
	h := NewHeuristic()
	if got, want := CountParallel(h, text, 4), h.Count(text); got != want {
		t.Errorf("heuristic: CountParallel = %d, Count = %d", got, want)
	}
}

func TestChunkText(t *testing.T) {
	s := "alpha beta\ngamma delta epsilon"
	chunks := chunkText(s, 3)
	if strings.Join(chunks, "") != s {
		t.Fatalf("chunks %q do not rejoin to %q", chunks, s)
	}
	want := []string{"alpha", " beta\n", "gamma", " delta", " epsilon"}
	if strings.Join(chunks, "|") != strings.Join(want, "|") {
		t.Errorf("chunkText(%q, 3) = %q, want %q", s, chunks, want)
	}
	if got := chunkText("=====", 2); len(got) != 1 {
		t.Errorf("no boundary: %q, want one chunk", got)
	}
}
