package recalltest

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func (s *suite) docTests() []test {
	return []test{
		{"UpsertGet", func(t *testing.T) {
			b := s.backend(t)
			in := recall.Doc{
				ID: "d1", Tenant: "acme", Text: "The deploy failed on Friday",
				Metadata: map[string]string{"session": "s1", "kind": "task"},
				// Not UTC and finer than a microsecond: stored as UTC microseconds.
				Time:  t0.In(time.FixedZone("X", 3600)).Add(1500 * time.Nanosecond),
				Group: "s1", Seq: 7,
				Embedding: []float32{1, 0, -0.5}, EmbeddingModel: "m1",
			}
			upsert(t, b, in)
			got := get(t, b, "acme", "d1")
			want := in.Clone()
			want.Time = t0.Add(time.Microsecond)
			if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
				t.Fatalf("Get = %+v, want %+v", got, want)
			}
			if !got[0].Time.Equal(want.Time) || got[0].Time.Location() != time.UTC {
				t.Errorf("time %v, want %v in UTC", got[0].Time, want.Time)
			}
			// Copies both ways.
			in.Metadata["kind"] = "changed"
			in.Embedding[0] = 9
			got[0].Metadata["session"] = "mutated"
			got[0].Embedding[1] = 9
			again := get(t, b, "acme", "d1")[0]
			if !reflect.DeepEqual(again, want) {
				t.Errorf("the backend shares memory with its caller: %+v", again)
			}
			// Unknown IDs are left out; order is the order asked.
			upsert(t, b, recall.Doc{ID: "d2", Tenant: "acme", Text: "second"})
			if got := docIDs(get(t, b, "acme", "nope", "d2", "d1")); !slices.Equal(got, []string{"d2", "d1"}) {
				t.Errorf("Get(nope, d2, d1) = %v", got)
			}
			if got := get(t, b, "acme"); len(got) != 0 {
				t.Errorf("Get() = %v", got)
			}
			// A document without metadata, time or vector reads back so.
			d2 := get(t, b, "acme", "d2")[0]
			if d2.Metadata != nil || !d2.Time.IsZero() || d2.Embedding != nil || d2.Group != "" || d2.Seq != 0 {
				t.Errorf("bare document read back as %+v", d2)
			}
		}},
		{"Replace", func(t *testing.T) {
			b := s.backend(t)
			upsert(t, b, recall.Doc{ID: "d", Tenant: "a", Text: "kubernetes cluster upgrade", Metadata: map[string]string{"k": "1"}, Group: "g", Seq: 1})
			upsert(t, b, recall.Doc{ID: "d", Tenant: "a", Text: "postgres vacuum tuning", Metadata: map[string]string{"k": "2"}, Group: "h", Seq: 2})
			if n := count(t, b, "a", "kubernetes"); n != 0 {
				t.Errorf("the old text is still indexed: %d hits", n)
			}
			if got := lexical(t, b, "a", "vacuum", 10, recall.Filter{}); !slices.Equal(got, []string{"d"}) {
				t.Errorf("Lexical(vacuum) = %v", got)
			}
			if got := lexical(t, b, "a", "vacuum", 10, recall.Filter{Metadata: map[string]string{"k": "1"}}); len(got) != 0 {
				t.Errorf("old metadata still matches: %v", got)
			}
			d := get(t, b, "a", "d")[0]
			if d.Text != "postgres vacuum tuning" || d.Metadata["k"] != "2" || d.Group != "h" || d.Seq != 2 {
				t.Errorf("replaced doc = %+v", d)
			}
			if ns, _ := b.Around(bg, "a", "g", 0, 10); len(ns) != 0 {
				t.Errorf("old group still lists the doc: %v", docIDs(ns))
			}
			// Upserting many at once, some new, some replacing.
			upsert(t, b, recall.Doc{ID: "d", Tenant: "a", Text: "third version"}, recall.Doc{ID: "e", Tenant: "a", Text: "another version"})
			if got := lexical(t, b, "a", "version", 10, recall.Filter{}); len(got) != 2 {
				t.Errorf("Lexical(version) = %v", got)
			}
		}},
		{"Delete", func(t *testing.T) {
			b := s.backend(t)
			upsert(t, b, recall.Doc{ID: "a", Tenant: "t", Text: "alpha word", Group: "g", Seq: 1},
				recall.Doc{ID: "b", Tenant: "t", Text: "beta word", Group: "g", Seq: 2},
				recall.Doc{ID: "c", Tenant: "t", Text: "gamma word"})
			n, err := b.Delete(bg, "t", "a", "c", "missing")
			if err != nil || n != 2 {
				t.Fatalf("Delete = %d, %v; want 2", n, err)
			}
			if n, err := b.Delete(bg, "t", "a"); err != nil || n != 0 {
				t.Errorf("Delete again = %d, %v", n, err)
			}
			if got := lexical(t, b, "t", "word", 10, recall.Filter{}); !slices.Equal(got, []string{"b"}) {
				t.Errorf("Lexical after Delete = %v", got)
			}
			if ns, _ := b.Around(bg, "t", "g", 0, 10); !slices.Equal(docIDs(ns), []string{"b"}) {
				t.Errorf("Around after Delete = %v", docIDs(ns))
			}
			if n, err := b.Delete(bg, "t"); err != nil || n != 0 {
				t.Errorf("Delete() = %d, %v", n, err)
			}
		}},
		{"Clear", func(t *testing.T) {
			b := s.backend(t)
			for i, sess := range []string{"s1", "s1", "s2"} {
				upsert(t, b, recall.Doc{ID: string(rune('a' + i)), Tenant: "t", Text: "shared term", Metadata: map[string]string{"session": sess}})
			}
			n, err := b.Clear(bg, "t", recall.Filter{Metadata: map[string]string{"session": "s1"}})
			if err != nil || n != 2 {
				t.Fatalf("Clear(session=s1) = %d, %v", n, err)
			}
			if got := lexical(t, b, "t", "term", 10, recall.Filter{}); !slices.Equal(got, []string{"c"}) {
				t.Errorf("after Clear(s1): %v", got)
			}
			if n, err := b.Clear(bg, "t", recall.Filter{}); err != nil || n != 1 {
				t.Errorf("Clear(all) = %d, %v", n, err)
			}
			if tenants, err := b.Tenants(bg); err != nil || len(tenants) != 0 {
				t.Errorf("Tenants after clearing everything = %v, %v", tenants, err)
			}
			// A cleared tenant can be written again.
			upsert(t, b, recall.Doc{ID: "a", Tenant: "t", Text: "shared term"})
			if got := lexical(t, b, "t", "term", 10, recall.Filter{}); !slices.Equal(got, []string{"a"}) {
				t.Errorf("after rewriting: %v", got)
			}
		}},
		{"ClearByUser", func(t *testing.T) {
			// Forgetting a user clears every document of the tenant whose
			// metadata names the user, whatever its session or other
			// metadata, and nothing of another user or tenant.
			b := s.backend(t)
			user := func(u, sess string) map[string]string {
				md := map[string]string{recall.MetaUser: u, "kind": "turn"}
				if sess != "" {
					md[recall.MetaSession] = sess
				}
				return md
			}
			upsert(t, b, recall.Doc{ID: "a1", Tenant: "t", Text: "shared term", Group: "s1", Seq: 1, Metadata: user("alice", "s1")},
				recall.Doc{ID: "a2", Tenant: "t", Text: "shared term", Group: "s2", Seq: 1, Metadata: user("alice", "s2")},
				recall.Doc{ID: "a3", Tenant: "t", Text: "shared term", Metadata: user("alice", "")},
				recall.Doc{ID: "b1", Tenant: "t", Text: "shared term", Group: "s3", Seq: 1, Metadata: user("bob", "s3")},
				recall.Doc{ID: "n1", Tenant: "t", Text: "shared term"})
			upsert(t, b, recall.Doc{ID: "a1", Tenant: "u", Text: "shared term", Metadata: user("alice", "s1")})
			n, err := b.Clear(bg, "t", recall.Filter{Metadata: map[string]string{recall.MetaUser: "alice"}})
			if err != nil || n != 3 {
				t.Fatalf("Clear(user=alice) = %d, %v; want 3", n, err)
			}
			if got := lexical(t, b, "t", "term", 10, recall.Filter{}); !slices.Equal(got, []string{"b1", "n1"}) {
				t.Errorf("after Clear(user=alice): %v, want [b1 n1]", got)
			}
			if ds, err := b.Get(bg, "u", "a1"); err != nil || len(ds) != 1 {
				t.Errorf("another tenant's document of the user = %v, %v; want it kept", docIDs(ds), err)
			}
			if n, err := b.Clear(bg, "t", recall.Filter{Metadata: map[string]string{recall.MetaUser: "alice"}}); err != nil || n != 0 {
				t.Errorf("Clear(user=alice) again = %d, %v; want 0", n, err)
			}
		}},
	}
}

func (s *suite) tenantTests() []test {
	return []test{
		{"Isolation", func(t *testing.T) {
			b := s.backend(t)
			vec := []float32{1, 2, 3}
			for _, tenant := range []string{"", "acme", "globex"} {
				upsert(t, b, recall.Doc{ID: "same", Tenant: tenant, Text: "secret plan of " + tenant + " launch", Group: "g", Seq: 1, Embedding: vec, EmbeddingModel: "old"},
					recall.Doc{ID: "only-" + tenant, Tenant: tenant, Text: "launch notes", Group: "g", Seq: 2})
			}
			tenants, err := b.Tenants(bg)
			if err != nil || !slices.Equal(tenants, []string{"", "acme", "globex"}) {
				t.Errorf("Tenants = %q, %v", tenants, err)
			}
			for _, tenant := range []string{"", "acme", "globex"} {
				got := lexical(t, b, tenant, "launch", 10, recall.Filter{})
				slices.Sort(got)
				if want := []string{"only-" + tenant, "same"}; !slices.Equal(got, want) {
					t.Errorf("tenant %q: Lexical = %v, want %v", tenant, got, want)
				}
				if d := get(t, b, tenant, "same"); len(d) != 1 || d[0].Tenant != tenant || d[0].Text != "secret plan of "+tenant+" launch" {
					t.Errorf("tenant %q: Get = %+v", tenant, d)
				}
				vm, err := vectorOf(t, b).Vector(bg, recall.VectorQuery{Tenant: tenant, Vector: vec, Limit: 10})
				if err != nil || !slices.Equal(matchIDs(vm), []string{"same"}) {
					t.Errorf("tenant %q: Vector = %v, %v", tenant, matchIDs(vm), err)
				}
				ns, err := b.Around(bg, tenant, "g", 0, 10)
				if err != nil || !slices.Equal(docIDs(ns), []string{"same", "only-" + tenant}) {
					t.Errorf("tenant %q: Around = %v, %v", tenant, docIDs(ns), err)
				}
				st, err := embeddingsOf(t, b).Stale(bg, tenant, "new", "", 10)
				if err != nil || !slices.Equal(docIDs(st), []string{"only-" + tenant, "same"}) {
					t.Errorf("tenant %q: Stale = %v, %v", tenant, docIDs(st), err)
				}
			}
			if got := lexical(t, b, "acme", "globex", 10, recall.Filter{}); len(got) != 0 {
				t.Errorf("acme sees globex's words: %v", got)
			}
			if got := lexical(t, b, "initech", "launch", 10, recall.Filter{}); len(got) != 0 {
				t.Errorf("an unknown tenant sees documents: %v", got)
			}
			// Writes to one tenant leave the others alone.
			if n, err := embeddingsOf(t, b).SetEmbeddings(bg, "acme", []recall.EmbeddingUpdate{{ID: "same", Text: "secret plan of acme launch", Vector: []float32{3, 2, 1}, Model: "new"}}); err != nil || n != 1 {
				t.Fatalf("SetEmbeddings = %d, %v", n, err)
			}
			if n, err := b.Delete(bg, "acme", "same"); err != nil || n != 1 {
				t.Fatalf("Delete = %d, %v", n, err)
			}
			if n, err := b.Clear(bg, "globex", recall.Filter{}); err != nil || n != 2 {
				t.Fatalf("Clear = %d, %v", n, err)
			}
			d := get(t, b, "", "same")
			if len(d) != 1 || d[0].EmbeddingModel != "old" || !slices.Equal(d[0].Embedding, vec) {
				t.Errorf("the default tenant's doc changed: %+v", d)
			}
			if got := count(t, b, "", "launch"); got != 2 {
				t.Errorf("the default tenant has %d docs, want 2", got)
			}
		}},
	}
}

func (s *suite) filterTests() []test {
	return []test{
		{"Metadata", func(t *testing.T) {
			b := s.backend(t)
			upsert(t, b,
				recall.Doc{ID: "a", Tenant: "t", Text: "cat mat", Metadata: map[string]string{"kind": "pet", "n": "1"}},
				recall.Doc{ID: "b", Tenant: "t", Text: "cat tree", Metadata: map[string]string{"kind": "pet", "n": "2"}},
				recall.Doc{ID: "c", Tenant: "t", Text: "wild cat", Metadata: map[string]string{"kind": "wild"}},
				recall.Doc{ID: "d", Tenant: "t", Text: "cat"})
			for _, tc := range []struct {
				f    map[string]string
				want []string
			}{
				{map[string]string{"kind": "wild"}, []string{"c"}},
				{map[string]string{"kind": "pet", "n": "2"}, []string{"b"}},
				{map[string]string{"kind": "pet"}, []string{"a", "b"}},
				{map[string]string{"n": ""}, nil},
				{map[string]string{"missing": "x"}, nil},
				{map[string]string{}, []string{"a", "b", "c", "d"}},
			} {
				got := lexical(t, b, "t", "cat", 10, recall.Filter{Metadata: tc.f})
				slices.Sort(got)
				if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
					t.Errorf("filter %v: %v, want %v", tc.f, got, tc.want)
				}
			}
			// The limit applies after the filter.
			if got := lexical(t, b, "t", "cat", 1, recall.Filter{Metadata: map[string]string{"kind": "wild"}}); !slices.Equal(got, []string{"c"}) {
				t.Errorf("filter with limit 1: %v", got)
			}
		}},
		{"MetadataExact", func(t *testing.T) {
			// A filter finds exactly the documents with the pair, whatever
			// JSON escapes in it, whatever a JSON path reads specially, and
			// whatever text of one pair another holds.
			b := s.backend(t)
			metas := map[string]map[string]string{
				"html":    {"k": "a<b&c>"},
				"quote":   {"k": `say "hi" \ there`},
				"control": {"k": "tab\there\n"},
				"accent":  {"k": "café ✓"},
				"prefix":  {"k": "v"},
				"longer":  {"k": "vv"},
				"key":     {"kk": "v"},
				"inside":  {"x": `"k":"v"`},
				"quoted":  {`a"b`: "v", "k": "w"},
				"escaped": {`a\b`: "v", "<k>": "v", "a.b[0]": "v", "clé": "v", "tab\tkey": "v", "$": "v"},
			}
			for id, m := range metas {
				upsert(t, b, recall.Doc{Tenant: "t", ID: id, Text: "needle " + id, Metadata: m})
			}
			for _, tc := range []struct {
				f    map[string]string
				want []string
			}{
				{map[string]string{"k": "a<b&c>"}, []string{"html"}},
				{map[string]string{"k": `say "hi" \ there`}, []string{"quote"}},
				{map[string]string{"k": "tab\there\n"}, []string{"control"}},
				{map[string]string{"k": "café ✓"}, []string{"accent"}},
				{map[string]string{"k": "v"}, []string{"prefix"}},
				{map[string]string{"k": "vv"}, []string{"longer"}},
				{map[string]string{"kk": "v"}, []string{"key"}},
				{map[string]string{"x": `"k":"v"`}, []string{"inside"}},
				{map[string]string{`a"b`: "v"}, []string{"quoted"}},
				{map[string]string{`a"b`: "v", "k": "w"}, []string{"quoted"}},
				{map[string]string{`a"b`: "w"}, nil},
				{map[string]string{"k": "a<b"}, nil},
				{map[string]string{`a\b`: "v"}, []string{"escaped"}},
				{map[string]string{"<k>": "v"}, []string{"escaped"}},
				{map[string]string{"a.b[0]": "v"}, []string{"escaped"}},
				{map[string]string{"clé": "v"}, []string{"escaped"}},
				{map[string]string{"tab\tkey": "v"}, []string{"escaped"}},
				{map[string]string{"$": "v"}, []string{"escaped"}},
				{map[string]string{"a": "v"}, nil},
			} {
				got := lexical(t, b, "t", "needle", 20, recall.Filter{Metadata: tc.f})
				slices.Sort(got)
				if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
					t.Errorf("filter %q: %v, want %v", tc.f, got, tc.want)
				}
			}
		}},
		{"Time", func(t *testing.T) {
			b := s.backend(t)
			for i := range 5 {
				upsert(t, b, recall.Doc{ID: string(rune('a' + i)), Tenant: "t", Text: "standup notes", Time: t0.Add(time.Duration(i) * time.Hour)})
			}
			upsert(t, b, recall.Doc{ID: "z", Tenant: "t", Text: "standup notes"}) // no time
			for _, tc := range []struct {
				f    recall.Filter
				want []string
			}{
				{recall.Filter{Since: t0.Add(time.Hour), Until: t0.Add(3 * time.Hour)}, []string{"b", "c"}},
				{recall.Filter{Since: t0.Add(3 * time.Hour)}, []string{"d", "e"}},
				{recall.Filter{Until: t0.Add(time.Hour).In(time.FixedZone("Y", -7200))}, []string{"a"}},
				{recall.Filter{Since: t0.Add(time.Hour - time.Nanosecond)}, []string{"b", "c", "d", "e"}},
				{recall.Filter{}, []string{"a", "b", "c", "d", "e", "z"}},
			} {
				got := lexical(t, b, "t", "standup", 10, tc.f)
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("filter %v..%v: %v, want %v", tc.f.Since, tc.f.Until, got, tc.want)
				}
			}
			n, err := b.Clear(bg, "t", recall.Filter{Until: t0.Add(2 * time.Hour)})
			if err != nil || n != 2 {
				t.Errorf("Clear(until +2h) = %d, %v", n, err)
			}
			if got := count(t, b, "t", "standup"); got != 4 {
				t.Errorf("%d docs left, want 4", got)
			}
		}},
		{"Spans", func(t *testing.T) {
			// A branch "b" forked from "p" at 2, and "c" from "b" at 3.
			b := s.backend(t)
			for g, seqs := range map[string][]int64{"p": {1, 2, 3, 4}, "b": {1, 3, 4, 5}, "c": {4, 6}, "x": {1}} {
				for _, seq := range seqs {
					upsert(t, b, recall.Doc{ID: g + "#" + strconv.FormatInt(seq, 10), Tenant: "t", Text: "turn notes", Group: g, Seq: seq, Metadata: map[string]string{"kind": "action"}})
				}
			}
			upsert(t, b, recall.Doc{ID: "loose", Tenant: "t", Text: "turn notes"}) // no group
			// Amendments of turns (recall.MetaEntry): p amended its turn
			// 2 at entry 5, after b forked at 2; b its turn 1 at entry 3,
			// before c forked at 3. Entries that are no number count as
			// the turn's own.
			meta := func(entry string) map[string]string {
				return map[string]string{"kind": "action", recall.MetaEntry: entry}
			}
			upsert(t, b,
				recall.Doc{ID: "p#2", Tenant: "t", Text: "turn notes", Group: "p", Seq: 2, Metadata: meta("5")},
				recall.Doc{ID: "b#1", Tenant: "t", Text: "turn notes", Group: "b", Seq: 1, Metadata: meta("3")},
				recall.Doc{ID: "x#2", Tenant: "t", Text: "turn notes", Group: "x", Seq: 2, Metadata: meta("12abc")},
				recall.Doc{ID: "x#3", Tenant: "t", Text: "turn notes", Group: "x", Seq: 3, Metadata: meta("-9")},
			)
			lineage := []recall.Span{{Group: "c", After: 3}, {Group: "b", After: 2, Through: 3}, {Group: "p", Through: 2}}
			for _, tc := range []struct {
				f    recall.Filter
				want []string
			}{
				{recall.Filter{Spans: lineage}, []string{"b#3", "c#4", "c#6", "p#1"}},
				{recall.Filter{Spans: lineage[1:2]}, []string{"b#3"}},
				{recall.Filter{Spans: []recall.Span{{Group: "b", Through: 3}}}, []string{"b#1", "b#3"}},
				{recall.Filter{Spans: []recall.Span{{Group: "b", Through: 2}}}, nil},
				{recall.Filter{Spans: []recall.Span{{Group: "p", Through: 5}}}, []string{"p#1", "p#2", "p#3", "p#4"}},
				{recall.Filter{Spans: []recall.Span{{Group: "x"}}}, []string{"x#1", "x#2", "x#3"}},
				{recall.Filter{Spans: []recall.Span{{Group: "x", Through: 3}}}, []string{"x#1", "x#2", "x#3"}},
				{recall.Filter{Spans: []recall.Span{{Group: "p", After: 3}}}, []string{"p#4"}},
				{recall.Filter{Spans: lineage, Metadata: map[string]string{"kind": "action"}}, []string{"b#3", "c#4", "c#6", "p#1"}},
				{recall.Filter{Spans: lineage, Metadata: map[string]string{"kind": "other"}}, nil},
				{recall.Filter{Spans: []recall.Span{{Group: "none"}}}, nil},
			} {
				got := lexical(t, b, "t", "turn", 20, tc.f)
				slices.Sort(got)
				if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
					t.Errorf("spans %v: %v, want %v", tc.f.Spans, got, tc.want)
				}
			}
			bad := []recall.Filter{
				{Spans: []recall.Span{{Group: ""}}},
				{Spans: []recall.Span{{Group: "p", After: 3, Through: 3}}},
				{Spans: []recall.Span{{Group: "p", After: -1}}},
				{Spans: make([]recall.Span, recall.MaxSpans+1)},
			}
			for _, f := range bad {
				if _, err := lexicalOf(t, b).Lexical(bg, recall.LexicalQuery{Tenant: "t", Terms: []string{"turn"}, Filter: f, Limit: 5}); !errors.Is(err, agentmem.ErrInvalid) {
					t.Errorf("spans %v: %v, want an invalid filter", f.Spans, err)
				}
			}
			n, err := b.Clear(bg, "t", recall.Filter{Spans: lineage[2:]})
			if err != nil || n != 1 {
				t.Errorf("Clear(spans of p through 2) = %d, %v; want 1 (p#1; p#2 is amended after)", n, err)
			}
		}},
	}
}
