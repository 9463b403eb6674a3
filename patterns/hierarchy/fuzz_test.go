package hierarchy

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
)

// FuzzItemFromDoc decodes the metadata of a tier's document, which is
// read back from a database another process may have written: it must
// never panic, refuse bad input with ErrInvalid, and what it accepts must
// encode back to the same item.
func FuzzItemFromDoc(f *testing.F) {
	f.Add("chunk-3", "episodic", "0.5", "2", "3-10,12")
	f.Add("s1", "core", "1", "0", "7")
	f.Add("x", "working", "", "", "")
	f.Add("x", "core", "NaN", "-1", "5-3")
	f.Fuzz(func(t *testing.T, id, tier, importance, recalls, covers string) {
		d := recall.Doc{ID: "doc", Text: "text", Metadata: map[string]string{
			metaItem: id, metaTier: tier, metaImportance: importance, metaRecalls: recalls, metaCovers: covers,
		}}
		it, err := itemFromDoc(d)
		if err != nil {
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		again, err := decodeRanges(encodeRanges(it.Covers))
		if err != nil || !slices.Equal(again, it.Covers) {
			t.Fatalf("covers %v re-decode to %v, %v", it.Covers, again, err)
		}
		imp, err := parseImportance(formatImportance(it.Importance))
		if err != nil || imp != it.Importance {
			t.Fatalf("importance %v re-decodes to %v, %v", it.Importance, imp, err)
		}
	})
}
