package recalltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/recall"
)

// Corpus generates realistic synthetic conversation turns,
// deterministically. A conversation has two speakers, and sessions of 20
// turns dated a week apart. A turn has 6 to 30 words, drawn from a
// vocabulary of 5,000 words with Zipf-distributed frequencies (as in
// natural text) and mixed with common English function words.
type Corpus struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

var functionWords = strings.Fields("i you we it the a to and of in that is was for on with my so just but have had this about really")

var names = strings.Fields("alice bob carol dave erin frank grace heidi ivan judy mallory niaj olivia peggy rupert sybil trent victor walter yasmin")

// NewCorpus returns a corpus generator for a seed.
func NewCorpus(seed uint64) *Corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &Corpus{rng: rng, zipf: rand.NewZipf(rng, 1.1, 1, 4999)}
	// Pronounceable made-up words, so that stemming leaves them whole.
	syll := strings.Fields("ka lo mi ne ru sa te vo zu pa ri do fe gu hi ja ko lu ma no")
	seen := map[string]bool{}
	for len(c.vocab) < 5000 {
		n := 2 + rng.IntN(3)
		var sb strings.Builder
		for range n {
			sb.WriteString(syll[rng.IntN(len(syll))])
		}
		if w := sb.String(); !seen[w] {
			seen[w] = true
			c.vocab = append(c.vocab, w)
		}
	}
	return c
}

func (c *Corpus) word() string { return c.vocab[c.zipf.Uint64()] }

// Sentence returns n words: content words from the Zipf vocabulary and
// function words, about half each.
func (c *Corpus) Sentence(n int) string {
	words := make([]string, n)
	for i := range words {
		if c.rng.IntN(2) == 0 {
			words[i] = functionWords[c.rng.IntN(len(functionWords))]
		} else {
			words[i] = c.word()
		}
	}
	return strings.Join(words, " ")
}

// Docs returns n turns for a tenant, in conversations of 10 sessions of
// 20 turns.
func (c *Corpus) Docs(tenant string, n int) []recall.Doc { return c.docs(tenant, n, 6, 30) }

// LongDocs is Docs with turns of 200 to 400 words (1.5 to 3 kB), as an
// agent's steps are: model output with tool calls and their results.
func (c *Corpus) LongDocs(tenant string, n int) []recall.Doc { return c.docs(tenant, n, 200, 400) }

// docs returns n turns of minWords to maxWords words.
func (c *Corpus) docs(tenant string, n, minWords, maxWords int) []recall.Doc {
	start := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	docs := make([]recall.Doc, n)
	for i := range docs {
		conv, sess, turn := i/200, (i/20)%10, i%20
		a, b := names[conv%len(names)], names[(conv+7)%len(names)]
		speaker := a
		if turn%2 == 1 {
			speaker = b
		}
		group := fmt.Sprintf("c%d-s%d", conv, sess)
		docs[i] = recall.Doc{
			ID:       fmt.Sprintf("%s#%d", group, turn+1),
			Tenant:   tenant,
			Text:     speaker + ": " + c.Sentence(minWords+c.rng.IntN(maxWords-minWords+1)),
			Metadata: map[string]string{"session": group, "user": a},
			Time:     start.Add(time.Duration(conv)*24*time.Hour + time.Duration(sess)*7*24*time.Hour + time.Duration(turn)*time.Minute),
			Group:    group,
			Seq:      int64(turn + 1),
		}
	}
	return docs
}

// Query returns a question of 4 to 9 words, like a user's question about
// a past conversation.
func (c *Corpus) Query() string {
	return "what did " + names[c.rng.IntN(len(names))] + " say about " + c.Sentence(2+c.rng.IntN(6))
}

// BenchSearch measures Index.Search (k = 10, the default ranking) over n
// synthetic turns in one tenant of the backend, and reports the p50 and
// p99 latency of one search in milliseconds besides ns/op. The backend is
// filled before the timer starts.
func BenchSearch(b *testing.B, backend recall.Backend, n int) { benchSearch(b, backend, n, false) }

// BenchSearchScoped is BenchSearch with each search scoped to one session
// (a metadata filter on 20 of the n turns), as an agent recalls from its
// own history: its cost should follow the scope, not the tenant.
func BenchSearchScoped(b *testing.B, backend recall.Backend, n int) { benchSearch(b, backend, n, true) }

// BenchSearchScopedLong is BenchSearchScoped over n long turns
// (Corpus.LongDocs), where reading a matching turn's terms costs more.
func BenchSearchScopedLong(b *testing.B, backend recall.Backend, n int) {
	c := NewCorpus(42)
	benchSearchDocs(b, backend, c, c.LongDocs("bench", n), true)
}

func benchSearch(b *testing.B, backend recall.Backend, n int, scoped bool) {
	c := NewCorpus(42)
	benchSearchDocs(b, backend, c, c.Docs("bench", n), scoped)
}

func benchSearchDocs(b *testing.B, backend recall.Backend, c *Corpus, docs []recall.Doc, scoped bool) {
	for start := 0; start < len(docs); start += 1000 {
		if err := backend.Upsert(bg, docs[start:min(start+1000, len(docs))]...); err != nil {
			b.Fatal(err)
		}
	}
	ix := recall.New(backend, recall.Options{})
	queries := make([]recall.Query, 256)
	for i := range queries {
		queries[i] = recall.Query{Tenant: "bench", Text: c.Query(), K: 10}
		if scoped {
			queries[i].Filter = recall.Filter{Metadata: map[string]string{"session": docs[c.rng.IntN(len(docs))].Group}}
		}
	}
	// Warm up caches (SQLite's page cache, the document frequencies
	// recall/postgres keeps of searched terms) before measuring.
	for _, q := range queries {
		if _, err := ix.Search(bg, q); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		q := queries[i%len(queries)]
		t := time.Now()
		hits, err := ix.Search(bg, q)
		lat = append(lat, time.Since(t))
		if err != nil {
			b.Fatal(err)
		}
		if len(hits) == 0 && !scoped { // a session may hold none of the words
			b.Fatalf("no hits for %q", q.Text)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(lat)))) - 1
		return float64(lat[max(i, 0)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchUpsert measures Backend.Upsert of one turn at a time into a
// tenant already holding n turns, by writers goroutines at once.
func BenchUpsert(b *testing.B, backend recall.Backend, n, writers int) {
	texts := seedUpsert(b, backend, n)
	var next atomic.Int64
	b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			if err := backend.Upsert(bg, turnDoc(texts, i)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchUpsertBatch measures Backend.Upsert of batch turns at once (as a
// recallview.Follower indexes the log) into a tenant already holding n
// turns, reporting the time per document (ns/doc) too.
func BenchUpsertBatch(b *testing.B, backend recall.Backend, n, batch int) {
	benchUpsertBatch(b, backend, n, batch, false)
}

// BenchUpsertBatchSearched is BenchUpsertBatch after 256 searches of the
// tenant, each scoped to one of its sessions: a backend that keeps the
// document frequencies of searched terms (recall/postgres) then has
// them to keep up to date as it indexes.
func BenchUpsertBatchSearched(b *testing.B, backend recall.Backend, n, batch int) {
	benchUpsertBatch(b, backend, n, batch, true)
}

func benchUpsertBatch(b *testing.B, backend recall.Backend, n, batch int, searched bool) {
	texts := seedUpsert(b, backend, n)
	if searched {
		c := NewCorpus(8)
		ix := recall.New(backend, recall.Options{})
		for i := range 256 {
			f := recall.Filter{Metadata: map[string]string{"session": fmt.Sprintf("c%d-s%d", i%max(n/200, 1), i%10)}}
			if _, err := ix.Search(bg, recall.Query{Tenant: "bench", Text: c.Query(), K: 10, Filter: f}); err != nil {
				b.Fatal(err)
			}
		}
	}
	docs := make([]recall.Doc, batch)
	var next int64
	b.ResetTimer()
	for range b.N {
		for j := range docs {
			next++
			docs[j] = turnDoc(texts, next)
		}
		if err := backend.Upsert(bg, docs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/doc")
}

// seedUpsert fills the tenant "bench" of backend with n documents of a
// corpus and returns the texts of new turns. The turns are an agent's,
// longer than chat turns: a few hundred words of reasoning, tool output
// and code.
func seedUpsert(b *testing.B, backend recall.Backend, n int) []string {
	c := NewCorpus(7)
	docs := c.Docs("bench", n)
	for start := 0; start < len(docs); start += 1000 {
		if err := backend.Upsert(bg, docs[start:min(start+1000, len(docs))]...); err != nil {
			b.Fatal(err)
		}
	}
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = c.Sentence(300)
	}
	return texts
}

// turnDoc is the i-th new turn of BenchUpsert's session "new".
func turnDoc(texts []string, i int64) recall.Doc {
	return recall.Doc{
		ID: fmt.Sprintf("new#%d", i), Tenant: "bench", Text: texts[i%int64(len(texts))],
		Group: "new", Seq: i, Time: time.Unix(i, 0),
	}
}
