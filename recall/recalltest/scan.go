package recalltest

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
)

// scanAll reads every document of the tenant that passes f with Scan,
// page pages at a time.
func scanAll(t *testing.T, sc recall.Scanner, tenant string, f recall.Filter, page int) []recall.Doc {
	t.Helper()
	var out []recall.Doc
	after := ""
	for {
		ds, err := sc.Scan(bg, tenant, f, after, page)
		if err != nil {
			t.Fatalf("Scan(%q, after %q): %v", tenant, after, err)
		}
		if len(ds) > page {
			t.Fatalf("Scan returned %d documents, more than the limit %d", len(ds), page)
		}
		out = append(out, ds...)
		if len(ds) < page {
			return out
		}
		after = ds[len(ds)-1].ID
	}
}

func (s *suite) scanTests() []test {
	return []test{
		{"Pages", func(t *testing.T) {
			b := s.backend(t)
			sc := scannerOf(t, b)
			at := t0.Add(1500 * time.Nanosecond)
			var want []recall.Doc
			// IDs whose bytewise order is not a collation's: upper case
			// before lower, an accent after both.
			for i, id := range []string{"b", "B", "a#10", "a#9", "é", "a", "Z"} {
				d := recall.Doc{ID: id, Tenant: "acme", Text: "note " + id, Metadata: map[string]string{"user": []string{"alice", "bob"}[i%2]},
					Time: at.Add(time.Duration(i) * time.Hour), Group: "g", Seq: int64(i + 1)}
				if i%3 == 0 {
					d.Embedding, d.EmbeddingModel = []float32{float32(i), -0.5, 3e-7}, "m1"
				}
				want = append(want, d)
			}
			upsert(t, b, want...)
			upsert(t, b, recall.Doc{ID: "other", Tenant: "globex", Text: "not acme's"})
			slices.SortFunc(want, func(x, y recall.Doc) int { return strings.Compare(x.ID, y.ID) })
			for i := range want {
				want[i].Time = want[i].Time.Truncate(time.Microsecond)
			}
			for _, page := range []int{1, 2, 3, 100} {
				got := scanAll(t, sc, "acme", recall.Filter{}, page)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("Scan by %d:\n got %+v\nwant %+v", page, got, want)
				}
			}
			// A filter, as for one user's documents.
			got := docIDs(scanAll(t, sc, "acme", recall.Filter{Metadata: map[string]string{"user": "bob"}}, 2))
			if !slices.Equal(got, []string{"B", "a", "a#9"}) {
				t.Fatalf("Scan of bob's = %q", got)
			}
			got = docIDs(scanAll(t, sc, "acme", recall.Filter{Since: at.Add(5 * time.Hour)}, 10))
			if !slices.Equal(got, []string{"Z", "a"}) {
				t.Fatalf("Scan since 5h = %q", got)
			}
			if got := scanAll(t, sc, "nobody", recall.Filter{}, 10); len(got) != 0 {
				t.Fatalf("Scan of a tenant without documents = %+v", got)
			}
			// The documents are copies.
			ds, _ := sc.Scan(bg, "acme", recall.Filter{}, "", 1)
			ds[0].Metadata["user"] = "mallory"
			if again, _ := sc.Scan(bg, "acme", recall.Filter{}, "", 1); again[0].Metadata["user"] == "mallory" {
				t.Fatal("Scan shares memory with its caller")
			}
		}},
		{"BadInput", func(t *testing.T) {
			b := s.backend(t)
			sc := scannerOf(t, b)
			for name, err := range map[string]error{
				"limit 0":      func() error { _, err := sc.Scan(bg, "t", recall.Filter{}, "", 0); return err }(),
				"a bad tenant": func() error { _, err := sc.Scan(bg, "t\x00", recall.Filter{}, "", 1); return err }(),
				"a bad filter": func() error {
					_, err := sc.Scan(bg, "t", recall.Filter{Metadata: map[string]string{"": "x"}}, "", 1)
					return err
				}(),
			} {
				if !errors.Is(err, agentmem.ErrInvalid) {
					t.Errorf("Scan with %s = %v, want ErrInvalid", name, err)
				}
			}
		}},
	}
}
