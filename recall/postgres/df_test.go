package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/recall"
)

// TestDocFreqRows checks recall_df (dfRows): a scoped search gives rows
// to the terms it counted in at least dfMin documents and to no other,
// the next searches score the same from them, and every kind of write
// (new documents, a document replaced, deleted, a session cleared, the
// tenant emptied and filled again, another backend on the same schema
// with a memory of its own) keeps each row equal to the count of the
// tenant's documents that hold its term.
func TestDocFreqRows(t *testing.T) { docFreqRows(t, testenv.PostgresURL(t)) }

// TestDocFreqRowsCitus is TestDocFreqRows on a Citus cluster.
func TestDocFreqRowsCitus(t *testing.T) { docFreqRows(t, testenv.CitusURL(t)) }

func docFreqRows(t *testing.T, url string) {
	ctx := context.Background()
	schema := testenv.FreshSchema(t, url)
	open := func() *Backend {
		t.Helper()
		b, err := Open(ctx, url, Options{Schema: schema, PGVector: PGVectorOff, Logger: quietLogger, dfMin: 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	a, other := open(), open()
	doc := func(tenant, session string, seq int64, text string) recall.Doc {
		return recall.Doc{Tenant: tenant, ID: fmt.Sprintf("%s#%d", session, seq), Group: session, Seq: seq, Text: text,
			Metadata: map[string]string{"session": session}}
	}
	upsert := func(b *Backend, docs ...recall.Doc) {
		t.Helper()
		if err := b.Upsert(ctx, docs...); err != nil {
			t.Fatal(err)
		}
	}
	// search runs a scoped search and returns its scores by document.
	search := func(b *Backend, tenant, session, text string) map[string]float64 {
		t.Helper()
		ms, err := b.Lexical(ctx, recall.LexicalQuery{Tenant: tenant, Terms: recall.Tokenize(text), Limit: 50,
			Filter: recall.Filter{Metadata: map[string]string{"session": session}}})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, m := range ms {
			got[m.ID] = m.Score
		}
		return got
	}
	// rows returns the tenant's rows of recall_df.
	rows := func(tenant string) map[string]int64 {
		t.Helper()
		r, err := a.pool.Query(ctx, `SELECT lexeme, df FROM recall_df WHERE tenant = $1`, tenant)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		got := map[string]int64{}
		for r.Next() {
			var (
				l string
				n int64
			)
			if err := r.Scan(&l, &n); err != nil {
				t.Fatal(err)
			}
			got[l] = n
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// exact checks that every row of the tenant is the count of its
	// documents that hold the term, and returns the rows.
	exact := func(when, tenant string) map[string]int64 {
		t.Helper()
		got := rows(tenant)
		for l, n := range got {
			var want int64
			if err := a.pool.QueryRow(ctx, `SELECT count(*) FROM recall_docs WHERE tenant = $1 AND terms @@ $2::tsquery`,
				tenant, quoteLexeme(l)).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("%s: recall_df holds %d documents for %q of tenant %q, the index %d", when, n, l, tenant, want)
			}
		}
		return got
	}

	deploy, timeout, retry := recall.Tokenize("deploy")[0], recall.Tokenize("timeout")[0], recall.Tokenize("retry")[0]
	upsert(a,
		doc("acme", "s1", 1, "the deploy failed on a timeout"),
		doc("acme", "s1", 2, "retry the deploy with a longer timeout"),
		doc("acme", "s2", 1, "deploy again after the timeout"),
		doc("acme", "s2", 2, "a retry of the build"),
	)
	upsert(a, doc("beta", "s1", 1, "deploy deploy deploy timeout"))
	before := search(a, "acme", "s1", "deploy timeout retry")
	if len(before) != 2 {
		t.Fatalf("the first search found %v, want s1#1 and s1#2", before)
	}
	got := exact("after the first search", "acme")
	if got[deploy] != 3 || got[timeout] != 3 {
		t.Errorf("after the first search: rows %v, want %q and %q at 3", got, deploy, timeout)
	}
	if _, ok := got[retry]; ok {
		t.Errorf("after the first search: %q, in 2 documents (fewer than 3), has a row: %v", retry, got)
	}
	if n := len(rows("beta")); n != 0 {
		t.Errorf("tenant beta has %d rows; only acme was searched", n)
	}
	again := search(a, "acme", "s1", "deploy timeout retry")
	for id, s := range before {
		if again[id] != s {
			t.Errorf("from the rows, %s scores %v, counted %v", id, again[id], s)
		}
	}

	// New documents, through the other backend (which has no memory of
	// the tracked terms yet), and in another tenant.
	upsert(other, doc("acme", "s3", 1, "deploy to staging"), doc("acme", "s3", 2, "nothing to see"))
	upsert(a, doc("beta", "s2", 1, "deploy timeout"))
	if got := exact("after new documents", "acme"); got[deploy] != 4 {
		t.Errorf("after new documents: %q at %d, want 4", deploy, got[deploy])
	}
	// A document replaced: s1#2 no longer says deploy.
	upsert(a, doc("acme", "s1", 2, "retry with a longer timeout"))
	if got := exact("after a replacement", "acme"); got[deploy] != 3 || got[timeout] != 3 {
		t.Errorf("after a replacement: %v, want %q at 3 and %q at 3", got, deploy, timeout)
	}
	// A new tracked term, added by the other backend's search; then a
	// write through the first, whose memory of the tracked terms is old.
	upsert(a, doc("acme", "s4", 1, "retry the retry"))
	search(other, "acme", "s4", "retry")
	if got := rows("acme"); got[retry] != 3 {
		t.Errorf("after the other backend's search: %v, want %q at 3", got, retry)
	}
	upsert(a, doc("acme", "s4", 2, "one more retry"))
	if got := exact("after a write through the backend with an old memory", "acme"); got[retry] != 4 {
		t.Errorf("after a write through the backend with an old memory: %q at %d, want 4", retry, got[retry])
	}
	// Deletes and clears.
	if _, err := other.Delete(ctx, "acme", "s3#1"); err != nil {
		t.Fatal(err)
	}
	exact("after a delete", "acme")
	if _, err := a.Clear(ctx, "acme", recall.Filter{Metadata: map[string]string{"session": "s1"}}); err != nil {
		t.Fatal(err)
	}
	if got := exact("after a clear", "acme"); got[deploy] != 1 {
		t.Errorf("after a clear: %q at %d, want 1", deploy, got[deploy])
	}
	exact("after acme's writes", "beta")

	// The tenant emptied: its statistics go, and its rows with them.
	for _, s := range []string{"s2", "s3", "s4"} {
		if _, err := other.Clear(ctx, "acme", recall.Filter{Metadata: map[string]string{"session": s}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := rows("acme"); len(got) != 0 {
		t.Errorf("the emptied tenant keeps rows %v", got)
	}
	// Filled again: the first backend remembers the old tracked terms,
	// which the tenant no longer has; new rows come from a new search.
	upsert(a, doc("acme", "t1", 1, "timeout timeout"), doc("acme", "t1", 2, "a timeout"), doc("acme", "t2", 1, "timeout and deploy"))
	search(a, "acme", "t1", "timeout deploy")
	upsert(other, doc("acme", "t2", 2, "deploy after the timeout"))
	upsert(a, doc("acme", "t2", 3, "the last timeout"))
	if got := exact("after the tenant is filled again", "acme"); got[timeout] != 5 {
		t.Errorf("after the tenant is filled again: %v, want %q at 5", got, timeout)
	}
}

// TestDocFreqRowsConcurrent checks that rows of recall_df stay exact
// while two backends on one schema write a tenant's documents and search
// it at once, each search adding rows for the terms it counted.
func TestDocFreqRowsConcurrent(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	schema := testenv.FreshSchema(t, url)
	var backends []*Backend
	for range 2 {
		b, err := Open(ctx, url, Options{Schema: schema, PGVector: PGVectorOff, Logger: quietLogger, dfMin: 2, MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		backends = append(backends, b)
	}
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 4 {
		b := backends[w%2]
		wg.Go(func() {
			for i := range 40 {
				session := fmt.Sprintf("w%d-%d", w, i%4)
				text := strings.Join([]string{words[(w+i)%len(words)], words[(w*3+i*7)%len(words)], words[i%len(words)]}, " ")
				d := recall.Doc{Tenant: "t", ID: fmt.Sprintf("%s#%d", session, i), Group: session, Seq: int64(i), Text: text,
					Metadata: map[string]string{"session": session}}
				if err := b.Upsert(ctx, d); err != nil {
					errs <- err
					return
				}
				if i%5 == 0 {
					if _, err := b.Delete(ctx, "t", fmt.Sprintf("%s#%d", session, i-5)); err != nil {
						errs <- err
						return
					}
				}
				if _, err := b.Lexical(ctx, recall.LexicalQuery{Tenant: "t", Terms: recall.Tokenize(strings.Join(words[i%3:i%3+4], " ")), Limit: 5,
					Filter: recall.Filter{Metadata: map[string]string{"session": session}}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var rows, wrong int
	if err := backends[0].pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE f.df <> (SELECT count(*) FROM recall_docs d
		WHERE d.tenant = f.tenant AND d.terms @@ quote_literal(f.lexeme)::tsquery)) FROM recall_df f`).Scan(&rows, &wrong); err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		t.Fatal("no term got a row of recall_df: the test searched nothing it counted")
	}
	if wrong != 0 {
		t.Errorf("%d of %d rows of recall_df differ from the count of documents that hold their term", wrong, rows)
	}
}
