package inspector

import (
	"net/url"
	"testing"

	"github.com/agentmem/agentmem/store"
)

// FuzzQuery feeds arbitrary query strings to the decoders of the pages'
// query parameters. Each either refuses the input or returns values
// within bounds that encode back to the same values.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{
		"", "at=13&budget=250&format=openai&tokenizer=o200k_base", "budget=abc", "format=anthropic&truncate=on",
		"user=alice&agent=coder&size=2", "q=bcrypt&k=5", "after=7", "budget=-1", "at=007", "size=1001",
		"page=AAAAAAAAAAAAAAA", "user=%ff", "truncate=maybe", "k=0",
	} {
		f.Add(s)
	}
	def := view{Format: "openai", Tokenizer: "o200k_base"}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		if v, err := parseView(q, def); err == nil {
			if v.Budget < 0 || v.Budget > MaxBudget {
				t.Fatalf("budget %d out of bounds", v.Budget)
			}
			back, err := parseView(v.values(def), def)
			if err != nil || back != v {
				t.Fatalf("view %+v encodes to %v, which decodes to %+v, %v", v, v.values(def), back, err)
			}
		}
		if l, err := parseList(q, DefaultPageSize); err == nil {
			if l.Size < 1 || l.Size > store.MaxPageSize {
				t.Fatalf("page size %d out of bounds", l.Size)
			}
			back, err := parseList(l.values(DefaultPageSize), DefaultPageSize)
			back.Page = l.Page
			if err != nil || back != l {
				t.Fatalf("list query %+v encodes to %v, which decodes to %+v, %v", l, l.values(DefaultPageSize), back, err)
			}
		}
		if at, err := parseAt(q); err == nil && at < 0 {
			t.Fatalf("at %d is negative", at)
		}
		if after, err := parseAfter(q); err == nil && after < 0 {
			t.Fatalf("after %d is negative", after)
		}
		if r, err := parseRecall(q); err == nil && (r.K < 1 || r.K > MaxK || len(r.Q) > MaxQueryBytes) {
			t.Fatalf("recall query %+v out of bounds", r)
		}
	})
}
