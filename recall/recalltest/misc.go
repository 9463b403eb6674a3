package recalltest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
)

func (s *suite) badInputTests() []test {
	return []test{
		{"Refused", func(t *testing.T) {
			b := s.backend(t)
			good := recall.Doc{ID: "ok", Tenant: "t", Text: "fine words"}
			bad := map[string]recall.Doc{
				"empty id":           {Tenant: "t", Text: "x"},
				"long id":            {ID: strings.Repeat("i", recall.MaxIDLen+1), Tenant: "t", Text: "x"},
				"NUL in id":          {ID: "a\x00b", Tenant: "t", Text: "x"},
				"invalid UTF-8 text": {ID: "a", Tenant: "t", Text: "bad \xff text"},
				"NUL in text":        {ID: "a", Tenant: "t", Text: "bad \x00 text"},
				"oversized text":     {ID: "a", Tenant: "t", Text: strings.Repeat("word ", recall.MaxTextBytes/5+1)},
				"NUL in tenant":      {ID: "a", Tenant: "t\x00", Text: "x"},
				"long tenant":        {ID: "a", Tenant: strings.Repeat("t", recall.MaxTenantLen+1), Text: "x"},
				"invalid metadata":   {ID: "a", Tenant: "t", Text: "x", Metadata: map[string]string{"k": "\xfe"}},
				"empty metadata key": {ID: "a", Tenant: "t", Text: "x", Metadata: map[string]string{"": "v"}},
				"NaN embedding":      {ID: "a", Tenant: "t", Text: "x", Embedding: []float32{1, float32(math.NaN())}},
				"Inf embedding":      {ID: "a", Tenant: "t", Text: "x", Embedding: []float32{float32(math.Inf(1))}},
				"NUL in group":       {ID: "a", Tenant: "t", Text: "x", Group: "g\x00"},
				"year 10000":         {ID: "a", Tenant: "t", Text: "x", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
			}
			for name, d := range bad {
				// The bad doc comes second: the good one must not be written either.
				err := b.Upsert(bg, good, d)
				var ie *agentmem.InvalidError
				if !errors.Is(err, agentmem.ErrInvalid) || !errors.As(err, &ie) {
					t.Errorf("%s: Upsert = %v, want an *agentmem.InvalidError", name, err)
				}
				if got := get(t, b, "t", "ok"); len(got) != 0 {
					t.Fatalf("%s: a refused batch wrote its good document", name)
				}
			}
			for name, docs := range map[string][]recall.Doc{
				"two tenants":  {good, {ID: "b", Tenant: "u", Text: "x"}},
				"duplicate id": {good, good},
			} {
				if err := b.Upsert(bg, docs...); !errors.Is(err, agentmem.ErrInvalid) {
					t.Errorf("%s: Upsert = %v", name, err)
				}
			}
			if tenants, _ := b.Tenants(bg); len(tenants) != 0 {
				t.Errorf("refused upserts created tenants %q", tenants)
			}
			upsert(t, b, good)
			refused := map[string]error{
				"Get empty id":      second(b.Get(bg, "t", "")),
				"Get NUL tenant":    second(b.Get(bg, "\x00", "ok")),
				"Delete invalid id": second(b.Delete(bg, "t", "\xff")),
				"Clear bad filter":  second(b.Clear(bg, "t", recall.Filter{Metadata: map[string]string{"k": "\x00"}})),
				"Around bad tenant": second(b.Around(bg, "\x00", "g", 0, 1)),
			}
			// Each capability the backend has refuses bad input too.
			c := recall.CapabilitiesOf(b)
			if c.Lexical != nil {
				refused["Lexical limit 0"] = second(c.Lexical.Lexical(bg, recall.LexicalQuery{Tenant: "t", Terms: []string{"fine"}}))
				refused["Lexical bad tenant"] = second(c.Lexical.Lexical(bg, recall.LexicalQuery{Tenant: "\xff", Terms: []string{"fine"}, Limit: 1}))
			}
			if c.Vector != nil {
				refused["Vector NaN"] = second(c.Vector.Vector(bg, recall.VectorQuery{Tenant: "t", Vector: []float32{float32(math.NaN())}, Limit: 1}))
			}
			if c.Embeddings != nil {
				refused["Stale limit 0"] = second(c.Embeddings.Stale(bg, "t", "m", "", 0))
				refused["SetEmbeddings NaN"] = second(c.Embeddings.SetEmbeddings(bg, "t", []recall.EmbeddingUpdate{{ID: "ok", Text: "fine words", Vector: []float32{float32(math.NaN())}}}))
				refused["SetEmbeddings no id"] = second(c.Embeddings.SetEmbeddings(bg, "t", []recall.EmbeddingUpdate{{Text: "fine words", Vector: []float32{1}}}))
			}
			for name, err := range refused {
				if !errors.Is(err, agentmem.ErrInvalid) {
					t.Errorf("%s: %v, want ErrInvalid", name, err)
				}
			}
			if d := get(t, b, "t", "ok"); len(d) != 1 || d[0].Embedding != nil {
				t.Errorf("refused calls changed the document: %+v", d)
			}
			ix := recall.New(b, recall.Options{})
			for name, q := range map[string]recall.Query{
				"K 0":          {Tenant: "t", Text: "fine"},
				"bad text":     {Tenant: "t", Text: "\xff", K: 1},
				"bad tenant":   {Tenant: "\x00", Text: "fine", K: 1},
				"NaN vector":   {Tenant: "t", Embedding: []float32{float32(math.Inf(-1))}, K: 1},
				"filter value": {Tenant: "t", Text: "fine", K: 1, Filter: recall.Filter{Metadata: map[string]string{"": "x"}}},
			} {
				if _, err := ix.Search(bg, q); !errors.Is(err, agentmem.ErrInvalid) {
					t.Errorf("Search %s: %v, want ErrInvalid", name, err)
				}
			}
			// Text at the limit is accepted; unusual but valid text is searchable.
			upsert(t, b, recall.Doc{ID: "max", Tenant: "t", Text: strings.Repeat("x", recall.MaxTextBytes)},
				recall.Doc{ID: "odd", Tenant: "t", Text: `quotes " ' and * OR AND NEAR ( ) : ^ { } - + Ünïcödé 日本語`})
			for _, q := range []string{`"`, `OR`, `NEAR(`, `ünïcödé`, `日本語`, `*`, `AND OR NOT`} {
				hits, err := ix.Search(bg, recall.Query{Tenant: "t", Text: q, K: 5})
				if err != nil {
					t.Errorf("Search(%q): %v", q, err)
				}
				_ = hits
			}
			if hits, err := ix.Search(bg, recall.Query{Tenant: "t", Text: "ünïcödé", K: 5}); err != nil || !slices.Equal(hitIDs(hits), []string{"odd"}) {
				t.Errorf("Search(ünïcödé) = %v, %v", hitIDs(hits), err)
			}
		}},
	}
}

func second[T any](_ T, err error) error { return err }

func (s *suite) concurrencyTests() []test {
	return []test{
		{"ReadersAndWriters", func(t *testing.T) {
			b := s.backend(t)
			ix := recall.New(b, recall.Options{})
			const each = 30
			var wg sync.WaitGroup
			errs := make(chan error, s.cfg.Goroutines*each)
			for g := range s.cfg.Goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tenant := fmt.Sprintf("t%d", g%2)
					for i := range each {
						id := fmt.Sprintf("g%d-%d", g, i%10)
						d := recall.Doc{ID: id, Tenant: tenant, Text: fmt.Sprintf("worker %d wrote item %d", g, i), Group: fmt.Sprintf("g%d", g), Seq: int64(i % 10), Metadata: map[string]string{"g": fmt.Sprint(g)}}
						if err := ix.Upsert(bg, d); err != nil {
							errs <- err
							return
						}
						hits, err := ix.Search(bg, recall.Query{Tenant: tenant, Text: "worker item", K: 5, Before: 1, After: 1})
						if err != nil {
							errs <- err
							return
						}
						for _, h := range hits {
							if h.Doc.Tenant != tenant {
								errs <- fmt.Errorf("tenant %s saw %s's doc", tenant, h.Doc.Tenant)
							}
							h.Doc.Metadata["x"] = "y" // must not race with the backend
						}
						if i%3 == 0 {
							if _, err := ix.Delete(bg, tenant, id); err != nil {
								errs <- err
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			// Each worker's last write of each of its 10 IDs decides
			// whether the ID is there: i%3 == 0 deletes it.
			want := 0
			for g := range s.cfg.Goroutines {
				_ = g
				for id := range 10 {
					last := 20 + id // the last i with i%10 == id
					if last%3 != 0 {
						want++
					}
				}
			}
			got := count(t, b, "t0", "worker") + count(t, b, "t1", "worker")
			if got != want {
				t.Errorf("%d documents left, want %d", got, want)
			}
		}},
		{"StatsExact", func(t *testing.T) {
			// Writers upsert, delete and clear the same few IDs of one
			// tenant at once, emptying it now and then: the tenant's
			// document count and document frequencies, which BM25 uses,
			// must still be exact.
			b := s.backend(t)
			const tenant, each = "t", 24
			ids := []string{"a", "b", "c", "d"}
			var wg sync.WaitGroup
			errs := make(chan error, s.cfg.Goroutines)
			for g := range s.cfg.Goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						var err error
						switch id := ids[(g+i)%len(ids)]; {
						case i%8 == 7:
							_, err = b.Clear(bg, tenant, recall.Filter{})
						case i%3 == 2:
							_, err = b.Delete(bg, tenant, id, ids[(g+i+1)%len(ids)])
						default:
							err = b.Upsert(bg, recall.Doc{ID: id, Tenant: tenant, Text: fmt.Sprintf("shared words of writer %d", g)},
								recall.Doc{ID: ids[(g+i+2)%len(ids)], Tenant: tenant, Text: "shared"})
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			n := len(get(t, b, tenant, ids...))
			term := recall.Tokenize("shared")[0]
			st, err := lexicalOf(t, b).DocFreqs(bg, tenant, []string{term})
			if err != nil {
				t.Fatal(err)
			}
			if st.Docs != int64(n) || st.DF[term] != int64(n) {
				t.Errorf("%d documents, but DocFreqs = %+v", n, st)
			}
			if got := count(t, b, tenant, "shared"); got != n {
				t.Errorf("%d documents, but a search finds %d", n, got)
			}
			tenants, err := b.Tenants(bg)
			if err != nil || slices.Contains(tenants, tenant) != (n > 0) {
				t.Errorf("%d documents, Tenants = %q, %v", n, tenants, err)
			}
		}},
	}
}

func (s *suite) closeTests() []test {
	return []test{
		{"AfterClose", func(t *testing.T) {
			b := s.cfg.New(t)
			upsert(t, b, recall.Doc{ID: "a", Tenant: "t", Text: "x"})
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if err := b.Upsert(bg, recall.Doc{ID: "b", Tenant: "t", Text: "x"}); !errors.Is(err, recall.ErrClosed) {
				t.Errorf("Upsert after Close: %v", err)
			}
			if _, err := lexicalOf(t, b).Lexical(bg, recall.LexicalQuery{Tenant: "t", Terms: []string{"x"}, Limit: 1}); !errors.Is(err, recall.ErrClosed) {
				t.Errorf("Lexical after Close: %v", err)
			}
			if _, err := b.Get(bg, "t", "a"); !errors.Is(err, recall.ErrClosed) {
				t.Errorf("Get after Close: %v", err)
			}
		}},
	}
}

func (s *suite) reopenTests() []test {
	return []test{
		{"Survives", func(t *testing.T) {
			if s.cfg.Reopen == nil {
				t.Skip("the backend keeps nothing across a reopen")
			}
			b := s.cfg.New(t)
			in := recall.Doc{ID: "a", Tenant: "t", Text: "durable memory", Metadata: map[string]string{"k": "v"}, Time: t0, Group: "g", Seq: 3, Embedding: []float32{0.5, 0.25}, EmbeddingModel: "m"}
			upsert(t, b, in, recall.Doc{ID: "b", Tenant: "t", Text: "other"})
			if _, err := b.Delete(bg, "t", "b"); err != nil {
				t.Fatal(err)
			}
			b = s.cfg.Reopen(t, b)
			t.Cleanup(func() { b.Close() })
			if d := get(t, b, "t", "a", "b"); len(d) != 1 || !slicesEqualDoc(d[0], in) {
				t.Errorf("after reopen: %+v", d)
			}
			if got := lexical(t, b, "t", "memory other", 10, recall.Filter{Metadata: map[string]string{"k": "v"}}); !slices.Equal(got, []string{"a"}) {
				t.Errorf("lexical after reopen: %v", got)
			}
			if ms, err := vectorOf(t, b).Vector(bg, recall.VectorQuery{Tenant: "t", Vector: []float32{1, 0.5}, Limit: 1}); err != nil || len(ms) != 1 {
				t.Errorf("vector after reopen: %v, %v", matchIDs(ms), err)
			}
		}},
	}
}

func slicesEqualDoc(a, b recall.Doc) bool {
	return a.ID == b.ID && a.Tenant == b.Tenant && a.Text == b.Text && a.Time.Equal(b.Time) && a.Group == b.Group && a.Seq == b.Seq &&
		slices.Equal(a.Embedding, b.Embedding) && a.EmbeddingModel == b.EmbeddingModel && fmt.Sprint(a.Metadata) == fmt.Sprint(b.Metadata)
}
