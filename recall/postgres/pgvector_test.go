package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/recall/recalltest"
)

// The pgvector path is tested two ways:
//
//   - against the real extension, when the PostgreSQL server has it
//     (pg_available_extensions lists "vector"). Without it these tests
//     skip, also in CI, unless AGENTMEM_TEST_PGVECTOR=1 says the server
//     must have it (then they fail). See docs/testing.md.
//   - always, against a stand-in (standIn): a schema with a domain
//     "vector" over real[], a cosine distance computed in real (float32)
//     arithmetic as pgvector does, and the operator <=>. The backend's SQL
//     names the extension's schema, so the stand-in exercises the same
//     statements (the vec column, the ranking, dropping and re-adding
//     the column, the fallback) except for the HNSW index, which needs
//     the real access method: its build fails on the stand-in, which
//     tests that failure.

// PGVectorEnv, set to 1 or true, makes the tests of the real pgvector
// extension fail rather than skip when the server does not have it.
const PGVectorEnv = "AGENTMEM_TEST_PGVECTOR"

// quietLogger discards the backend's logs (each Open logs the search
// path it chose).
var quietLogger = slog.New(slog.DiscardHandler)

// pgvectorAvailable reports whether the server at url offers pgvector.
func pgvectorAvailable(t testing.TB, url string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// realPGVectorURL returns the test database's URL when its server has
// pgvector, and skips (or fails, with AGENTMEM_TEST_PGVECTOR=1) otherwise.
func realPGVectorURL(t testing.TB) string {
	t.Helper()
	return pgvectorAt(t, testenv.PostgresURL(t))
}

// pgvectorAt returns url when its server has pgvector, and skips (or
// fails, as realPGVectorURL) otherwise.
func pgvectorAt(t testing.TB, url string) string {
	t.Helper()
	if pgvectorAvailable(t, url) {
		return url
	}
	if v := strings.ToLower(strings.TrimSpace(os.Getenv(PGVectorEnv))); v == "1" || v == "true" {
		t.Fatalf("%s=%s but the PostgreSQL server has no pgvector (pg_available_extensions has no \"vector\"): install it (see docs/testing.md)", PGVectorEnv, v)
	}
	t.Skipf("skipping: needs the pgvector extension, which this PostgreSQL server does not have "+
		"(pg_available_extensions has no \"vector\"); the same tests ran against the SQL stand-in (TestPGVectorStandIn); "+
		"install pgvector into the server (see docs/testing.md) to run them, and set %s=1 to make its absence a failure", PGVectorEnv)
	return ""
}

// flavor is a pgvector to test against: the real extension or the stand-in.
type flavor struct {
	url string
	// probe finds the extension; nil for Open's own.
	probe prober
	// drop takes the extension away (with the vec column); restore brings
	// it back (without the column).
	drop, restore func(t *testing.T)
	// approximate: HNSW indexes can be built, so results with
	// pgvector_hnsw may differ from the exact ones.
	approximate bool
}

// prober is the flavor's prober.
func (f *flavor) prober() prober {
	if f.probe == nil {
		return probePGVector
	}
	return f.probe
}

func (f *flavor) open(schema string, mode PGVectorMode, hnsw bool) (*Backend, error) {
	opts := Options{Schema: schema, MaxConns: 8, PGVector: mode, PGVectorHNSW: hnsw, Logger: quietLogger}
	return open(context.Background(), f.url, opts, f.prober())
}

func (f *flavor) mustOpen(t testing.TB, schema string, mode PGVectorMode, hnsw bool) *Backend {
	t.Helper()
	b, err := f.open(schema, mode, hnsw)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// syncBuffer is a bytes.Buffer for logs written by several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// execSQL runs sql in the database at url, on a connection of its own.
func execSQL(t *testing.T, url, sql string) { execIn(t, url, sql, false) }

// execLocked runs sql, which creates or drops the extension, under the
// lock probePGVector takes to create it: other packages' tests share the
// database, and two CREATE EXTENSION IF NOT EXISTS at once can fail on a
// unique index.
func execLocked(t *testing.T, url, sql string) { execIn(t, url, sql, true) }

// execIn runs sql in a transaction on a connection of its own, first
// taking the extension's lock when locked is set.
func execIn(t *testing.T, url, sql string, locked bool) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if locked {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("create extension")); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, sql)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// realFlavor is the real extension, in the test database.
func realFlavor(t *testing.T) *flavor { return realFlavorAt(realPGVectorURL(t)) }

// realFlavorAt is the real extension in the database at url.
func realFlavorAt(url string) *flavor {
	return &flavor{
		url:         url,
		drop:        func(t *testing.T) { execLocked(t, url, `DROP EXTENSION IF EXISTS vector CASCADE`) },
		restore:     func(t *testing.T) { execLocked(t, url, createExtensionSQL) },
		approximate: true,
	}
}

// standInSQL creates the stand-in for pgvector in schema s (quoted).
func standInSQL(s string) string {
	return `CREATE SCHEMA ` + s + `;
		CREATE DOMAIN ` + s + `.vector AS real[];
		CREATE FUNCTION ` + s + `.cosine_distance(a ` + s + `.vector, b ` + s + `.vector) RETURNS double precision
			IMMUTABLE STRICT PARALLEL SAFE LANGUAGE sql
			AS $$ SELECT 1 - sum(x * y) / sqrt(sum(x * x) * sum(y * y)) FROM unnest(a::real[], b::real[]) AS t(x, y) $$;
		CREATE OPERATOR ` + s + `.<=> (LEFTARG = ` + s + `.vector, RIGHTARG = ` + s + `.vector, FUNCTION = ` + s + `.cosine_distance)`
}

// standInFlavor is the stand-in, in a schema of its own whose name needs
// quoting (a quote, a space, upper case), dropped when the test ends.
func standInFlavor(t *testing.T) *flavor {
	url := testenv.PostgresURL(t)
	name := testenv.NewSchemaName() + `_Ext "q"`
	t.Cleanup(func() { testenv.DropSchema(t, url, name) })
	quoted := pgx.Identifier{name}.Sanitize()
	execSQL(t, url, standInSQL(quoted))
	ext := &extension{schema: quoted, version: "0.8.0-stand-in"}
	return &flavor{
		url:     url,
		probe:   func(context.Context, *pgxpool.Pool) (*extension, string, error) { return ext, "", nil },
		drop:    func(t *testing.T) { execSQL(t, url, `DROP SCHEMA `+quoted+` CASCADE`) },
		restore: func(t *testing.T) { execSQL(t, url, standInSQL(quoted)) },
	}
}

func TestPGVectorStandIn(t *testing.T) { testPGVector(t, standInFlavor(t)) }
func TestPGVectorReal(t *testing.T)    { testPGVector(t, realFlavor(t)) }

// TestPGVectorCitus runs the real pgvector's tests on a Citus cluster:
// the extension on every node, recall_docs and its vec column distributed
// by tenant, the HNSW indexes built on each shard.
func TestPGVectorCitus(t *testing.T) {
	testPGVector(t, realFlavorAt(pgvectorAt(t, testenv.CitusURL(t))))
}

func testPGVector(t *testing.T, f *flavor) {
	for _, hnsw := range []bool{false, true} {
		if hnsw && !f.approximate {
			// On the stand-in the HNSW build fails and searches take
			// the path of the plain run: HNSW below covers that.
			continue
		}
		name := "Conformance"
		want := VectorSearchPGVector
		if hnsw {
			name, want = "ConformanceHNSW", VectorSearchHNSW
		}
		t.Run(name, func(t *testing.T) {
			schemas := map[recall.Backend]string{}
			open := func(t *testing.T, schema string) recall.Backend {
				b := f.mustOpen(t, schema, PGVectorRequire, hnsw)
				if got := b.VectorSearch(); got != want {
					t.Fatalf("VectorSearch() = %q, want %q", got, want)
				}
				schemas[b] = schema
				return b
			}
			// The suite's vector tests search a handful of documents:
			// the planner scans them rather than use an index, and the
			// index is built in the background anyway, so even the
			// HNSW path is exact here.
			recalltest.Run(t, recalltest.Config{
				New: func(t *testing.T) recall.Backend { return open(t, testenv.FreshSchema(t, f.url)) },
				Reopen: func(t *testing.T, b recall.Backend) recall.Backend {
					if err := b.Close(); err != nil {
						t.Fatal(err)
					}
					return open(t, schemas[b])
				},
			})
		})
	}
	t.Run("AgreesWithExact", func(t *testing.T) { testAgreement(t, f, false) })
	t.Run("HNSW", func(t *testing.T) { testAgreement(t, f, true) })
	t.Run("DropExtension", func(t *testing.T) { testDropExtension(t, f) })
}

// corpus upserts n random documents of dims dimensions in tenants a and
// b, with exact duplicates, scaled copies (the same cosine) and metadata
// for filters, and returns the query vectors to try.
func corpus(t testing.TB, b *Backend, rng *rand.Rand, n, dims int) [][]float32 {
	t.Helper()
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	docs := map[string][]recall.Doc{}
	var prev []float32
	flush := func(tenant string) {
		if err := b.Upsert(context.Background(), docs[tenant]...); err != nil {
			t.Fatal(err)
		}
		docs[tenant] = docs[tenant][:0]
	}
	for i := range n {
		v := vec()
		switch {
		case i%17 == 0 && prev != nil:
			v = slices.Clone(prev) // a tie
		case i%19 == 0 && prev != nil:
			v = slices.Clone(prev)
			for j := range v {
				v[j] *= 2 // same cosine, to the bit
			}
		case i%3 == 0 && prev != nil:
			// A near tie: pgvector's float32 distance may not tell it
			// from prev, the exact score does.
			v = slices.Clone(prev)
			v[i%dims] = math.Nextafter32(v[i%dims], 2*v[i%dims])
		case i%23 == 0:
			v = make([]float32, dims) // no cosine: never a match
		}
		prev = v
		tenant := []string{"a", "b"}[i%5/4] // 4 in 5 in a
		docs[tenant] = append(docs[tenant], recall.Doc{
			ID:        fmt.Sprintf("d%05d", i),
			Tenant:    tenant,
			Text:      fmt.Sprintf("document %d", i),
			Metadata:  map[string]string{"k": fmt.Sprint(i % 3)},
			Embedding: v,
		})
		if len(docs[tenant]) == 500 {
			flush(tenant)
		}
	}
	for tenant, ds := range docs {
		if len(ds) > 0 {
			flush(tenant)
		}
	}
	// Another dimension, which a search must not see.
	if err := b.Upsert(context.Background(), recall.Doc{ID: "other", Tenant: "a", Text: "x", Embedding: []float32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	queries := [][]float32{prev}
	for range 20 {
		queries = append(queries, vec())
	}
	return queries
}

// testAgreement checks that pgvector's results are the exact path's: the
// same IDs in the same order with the same scores, for every limit and
// filter. With hnsw on the real extension the index makes them
// approximate: then most of the exact best must be found, each with its
// exact score.
func testAgreement(t *testing.T, f *flavor, hnsw bool) {
	schema := testenv.FreshSchema(t, f.url)
	var logs syncBuffer
	pg, err := open(context.Background(), f.url, Options{Schema: schema, MaxConns: 8, PGVector: PGVectorRequire, PGVectorHNSW: hnsw,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, f.prober())
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	exact := f.mustOpen(t, schema, PGVectorOff, false)
	defer exact.Close()
	if got := exact.VectorSearch(); got != VectorSearchExact {
		t.Fatalf("pgvector=off: VectorSearch() = %q", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 600
	if hnsw && f.approximate {
		n = 3000 // enough rows for the planner to use the index
	}
	queries := corpus(t, pg, rng, n, 24)
	if hnsw {
		// On the stand-in the build fails (no access method hnsw), and
		// the searches go on without the index.
		want := hnswFailed
		if f.approximate {
			want = hnswReady
		}
		if st := waitHNSW(t, pg, 24); st != want {
			t.Fatalf("HNSW index: state %d, want %d; log:\n%s", st, want, logs.String())
		}
		// The stand-in's build gets as far as CREATE INDEX, which parses
		// and then fails on the stand-in's type (a domain takes no
		// dimension, vector(24); and there is no access method hnsw).
		if !f.approximate && !strings.Contains(logs.String(), `type modifier is not allowed for type`) {
			t.Errorf("the HNSW build did not fail at CREATE INDEX; log:\n%s", logs.String())
		}
		if got := pg.VectorSearch(); got != VectorSearchHNSW {
			t.Errorf("VectorSearch() = %q", got)
		}
		if f.approximate {
			checkHNSWPlan(t, pg, "a", queries[0])
		}
	}
	ctx := context.Background()
	var found, wanted int
	for qi, v := range queries {
		for _, limit := range []int{1, 5, 10, 50} {
			for _, filter := range []recall.Filter{{}, {Metadata: map[string]string{"k": "1"}}} {
				q := recall.VectorQuery{Tenant: "a", Vector: v, Limit: limit, Filter: filter}
				want, err := exact.Vector(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				got, err := pg.Vector(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if len(want) != limit {
					t.Fatalf("query %d limit %d: exact found %d", qi, limit, len(want))
				}
				if !(hnsw && f.approximate) {
					if !slices.Equal(got, want) {
						t.Fatalf("query %d, limit %d, filter %v:\npgvector %v\nexact    %v", qi, limit, filter, got, want)
					}
					continue
				}
				// Approximate: every match has its exact score, in order.
				scores := map[string]float64{}
				for _, m := range want {
					scores[m.ID] = m.Score
				}
				ref, err := exact.Vector(ctx, recall.VectorQuery{Tenant: "a", Vector: v, Limit: n, Filter: filter})
				if err != nil {
					t.Fatal(err)
				}
				all := map[string]float64{}
				for _, m := range ref {
					all[m.ID] = m.Score
				}
				for i, m := range got {
					if s, ok := all[m.ID]; !ok || s != m.Score {
						t.Fatalf("query %d: match %v is not scored exactly (%v)", qi, m, s)
					}
					if i > 0 && got[i-1].Score < m.Score {
						t.Fatalf("query %d: matches out of order: %v", qi, got)
					}
					if _, ok := scores[m.ID]; ok {
						found++
					}
				}
				wanted += len(want)
			}
		}
	}
	if hnsw && f.approximate {
		recallRate := float64(found) / float64(wanted)
		t.Logf("HNSW recall of the exact best: %.3f (%d of %d)", recallRate, found, wanted)
		if recallRate < 0.9 {
			t.Errorf("HNSW recall %.3f, want at least 0.9", recallRate)
		}
	}
	// Another tenant, and a dimension nobody has.
	if ms, err := pg.Vector(ctx, recall.VectorQuery{Tenant: "nobody", Vector: queries[0], Limit: 3}); err != nil || len(ms) != 0 {
		t.Errorf("tenant nobody: %v, %v", ms, err)
	}
	if ms, err := pg.Vector(ctx, recall.VectorQuery{Tenant: "a", Vector: []float32{3, 1}, Limit: 3}); err != nil || len(ms) != 1 || ms[0].ID != "other" {
		t.Errorf("2 dimensions: %v, %v", ms, err)
	}
}

// waitHNSW starts building the HNSW index of dims and waits until it is
// ready or its build has failed, and returns which.
// checkHNSWPlan fails the test unless PostgreSQL plans b's HNSW search
// of vec in tenant to use the index.
func checkHNSWPlan(t testing.TB, b *Backend, tenant string, vec []float32) {
	t.Helper()
	ctx := context.Background()
	rows, err := b.pool.Query(ctx, "EXPLAIN "+vectorSQL(b.ext.Load().schema, len(vec), true, ""), tenant, vec, candidates(10))
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	var line string
	if _, err := pgx.ForEachRow(rows, []any{&line}, func() error { plan.WriteString(line + "\n"); return nil }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), hnswIndexName(len(vec))) {
		t.Fatalf("the search does not use the HNSW index %s:\n%s", hnswIndexName(len(vec)), plan.String())
	}
}

// hnswWait bounds how long waitHNSW waits for a build; BenchmarkVector's
// large corpora take longer.
var hnswWait = 5 * time.Minute

func waitHNSW(t testing.TB, b *Backend, dims int) hnswState {
	t.Helper()
	if b.hnsw == nil {
		t.Fatal("no HNSW indexes")
	}
	b.hnsw.ready(b, b.ext.Load(), dims) // starts the build
	deadline := time.Now().Add(hnswWait)
	for {
		b.hnsw.mu.Lock()
		st := b.hnsw.state[dims]
		b.hnsw.mu.Unlock()
		if st != hnswBuilding {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the HNSW index was not built in %v", hnswWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testDropExtension takes pgvector away under a running backend, which
// must go on searching exactly, then reopens: nothing is lost, and with
// the extension back the column is added again.
func testDropExtension(t *testing.T, f *flavor) {
	ctx := context.Background()
	schema := testenv.FreshSchema(t, f.url)
	b := f.mustOpen(t, schema, PGVectorRequire, false)
	defer b.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	queries := corpus(t, b, rng, 200, 8)
	q := recall.VectorQuery{Tenant: "a", Vector: queries[1], Limit: 10}
	before, err := b.Vector(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	docsBefore := allDocs(t, b)

	f.drop(t)
	after, err := b.Vector(ctx, q)
	if err != nil {
		t.Fatalf("search after the extension was dropped: %v", err)
	}
	if !slices.Equal(after, before) {
		t.Errorf("after the drop:\n%v\nwant %v", after, before)
	}
	if got := b.VectorSearch(); got != VectorSearchExact {
		t.Errorf("after the drop, VectorSearch() = %q, want exact", got)
	}
	// Writes go on (the generated column is gone with the extension).
	if err := b.Upsert(ctx, recall.Doc{ID: "new", Tenant: "a", Text: "new", Embedding: queries[1]}); err != nil {
		t.Fatal(err)
	}
	b.Close()

	f.restore(t) // the extension without the column: Open adds it

	b = f.mustOpen(t, schema, PGVectorAuto, false)
	defer b.Close()
	if got := b.VectorSearch(); got != VectorSearchPGVector {
		t.Fatalf("reopened with pgvector back: VectorSearch() = %q", got)
	}
	got, err := b.Vector(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[0].ID != "new" || got[0].Score < 0.999999 || !slices.Equal(got[1:], before[:9]) {
		t.Errorf("reopened:\n%v\nwant new, then %v", got, before[:9])
	}
	docsAfter := allDocs(t, b)
	if len(docsAfter) != len(docsBefore)+1 {
		t.Fatalf("%d documents, want %d", len(docsAfter), len(docsBefore)+1)
	}
	byID := map[string]recall.Doc{}
	for _, d := range docsAfter {
		byID[d.ID] = d
	}
	for _, d := range docsBefore {
		a := byID[d.ID]
		if a.ID != d.ID || a.Text != d.Text || !slices.Equal(a.Embedding, d.Embedding) || a.Metadata["k"] != d.Metadata["k"] {
			t.Fatalf("document %s changed: %+v, was %+v", d.ID, a, d)
		}
	}
	var filled int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM recall_docs WHERE vec IS NOT NULL`).Scan(&filled); err != nil {
		t.Fatal(err)
	}
	var nonzero int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM recall_docs WHERE emb_norm > 0`).Scan(&nonzero); err != nil {
		t.Fatal(err)
	}
	if filled != nonzero {
		t.Errorf("vec filled in %d rows, want %d (every embedding that is not zero)", filled, nonzero)
	}
}

// allDocs returns every document of tenants a and b, by ID.
func allDocs(t testing.TB, b *Backend) []recall.Doc {
	t.Helper()
	var ids []string
	rows, err := b.pool.Query(context.Background(), `SELECT id FROM recall_docs WHERE tenant = 'a' ORDER BY id COLLATE "C"`)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	docs, err := b.Get(context.Background(), "a", ids...)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestPGVectorUnavailable opens with the real prober where the database
// has no pgvector: auto falls back to exact and logs why, require fails
// with ErrPGVectorUnavailable, off does not look.
func TestPGVectorUnavailable(t *testing.T) {
	url := testenv.PostgresURL(t)
	if pgvectorAvailable(t, url) {
		t.Skip("skipping: this PostgreSQL server has pgvector; TestPGVectorStubs covers a refusal")
	}
	var logs bytes.Buffer
	schema := testenv.FreshSchema(t, url)
	b, err := Open(context.Background(), url, Options{Schema: schema, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := b.VectorSearch(); got != VectorSearchExact {
		t.Errorf("auto: VectorSearch() = %q, want exact", got)
	}
	if !strings.Contains(logs.String(), "pgvector is not available") || !strings.Contains(logs.String(), "not installed on this PostgreSQL server") {
		t.Errorf("auto: the log does not say why: %q", logs.String())
	}
	upsertVec(t, b)
	_, err = Open(context.Background(), url, Options{Schema: schema, PGVector: PGVectorRequire, Logger: quietLogger})
	if !errors.Is(err, ErrPGVectorUnavailable) || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("require: err = %v, want ErrPGVectorUnavailable saying it is not installed", err)
	}
	// Through a URL too.
	u := mustParse(t, url)
	q := u.Query()
	q.Set("schema", schema)
	q.Set(PGVectorParam, "require")
	u.RawQuery = q.Encode()
	if _, err := recall.OpenBackend(context.Background(), u.String()); !errors.Is(err, ErrPGVectorUnavailable) {
		t.Errorf("recall.OpenBackend with pgvector=require: err = %v", err)
	}
	// pgx never sees the backend's parameters (it would send them to
	// the server as settings, which would refuse them).
	q.Set(PGVectorParam, "off")
	q.Set(PGVectorHNSWParam, "true")
	u.RawQuery = q.Encode()
	ob, err := recall.OpenBackend(context.Background(), u.String())
	if err != nil {
		t.Fatalf("recall.OpenBackend with pgvector=off&pgvector_hnsw=true: %v", err)
	}
	defer ob.Close()
	if got := ob.(*Backend).VectorSearch(); got != VectorSearchExact {
		t.Errorf("pgvector=off: VectorSearch() = %q", got)
	}
}

// upsertVec upserts two documents and checks that vector search finds
// them in order.
func upsertVec(t *testing.T, b *Backend) {
	t.Helper()
	ctx := context.Background()
	if err := b.Upsert(ctx,
		recall.Doc{ID: "x", Tenant: "t", Text: "x", Embedding: []float32{1, 0}},
		recall.Doc{ID: "xy", Tenant: "t", Text: "xy", Embedding: []float32{1, 1}}); err != nil {
		t.Fatal(err)
	}
	ms, err := b.Vector(ctx, recall.VectorQuery{Tenant: "t", Vector: []float32{1, 0.1}, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{ms[0].ID, ms[1].ID}; len(ms) != 2 || got[0] != "x" || got[1] != "xy" {
		t.Errorf("Vector = %v", ms)
	}
}

// TestPGVectorStubs opens with prober stubs: a prober that fails fails
// Open; an extension whose column PostgreSQL refuses (here: a schema with
// no type vector) means exact search under auto and
// ErrPGVectorUnavailable under require; off never probes.
func TestPGVectorStubs(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	opts := func(schema string, mode PGVectorMode, log *slog.Logger) Options {
		return Options{Schema: schema, PGVector: mode, Logger: log}
	}
	t.Run("ProbeError", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := open(ctx, url, opts(testenv.FreshSchema(t, url), PGVectorAuto, quietLogger),
			func(context.Context, *pgxpool.Pool) (*extension, string, error) { return nil, "", boom })
		if !errors.Is(err, boom) {
			t.Errorf("err = %v, want boom", err)
		}
	})
	t.Run("Off", func(t *testing.T) {
		b, err := open(ctx, url, opts(testenv.FreshSchema(t, url), PGVectorOff, quietLogger),
			func(context.Context, *pgxpool.Pool) (*extension, string, error) {
				t.Error("pgvector=off probed")
				return nil, "", nil
			})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if got := b.VectorSearch(); got != VectorSearchExact {
			t.Errorf("VectorSearch() = %q", got)
		}
		upsertVec(t, b)
	})
	bogus := func(context.Context, *pgxpool.Pool) (*extension, string, error) {
		return &extension{schema: `pg_catalog`, version: "0.8.0"}, "", nil
	}
	t.Run("ColumnRefusedAuto", func(t *testing.T) {
		var logs bytes.Buffer
		b, err := open(ctx, url, opts(testenv.FreshSchema(t, url), PGVectorAuto, slog.New(slog.NewTextHandler(&logs, nil))), bogus)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if got := b.VectorSearch(); got != VectorSearchExact {
			t.Errorf("VectorSearch() = %q", got)
		}
		if !strings.Contains(logs.String(), "adding the column vec") || !strings.Contains(logs.String(), "SQLSTATE 42704") {
			t.Errorf("the log does not say why: %q", logs.String())
		}
		upsertVec(t, b)
	})
	t.Run("ColumnRefusedRequire", func(t *testing.T) {
		_, err := open(ctx, url, opts(testenv.FreshSchema(t, url), PGVectorRequire, quietLogger), bogus)
		if !errors.Is(err, ErrPGVectorUnavailable) || !strings.Contains(err.Error(), "adding the column vec") {
			t.Errorf("err = %v, want ErrPGVectorUnavailable", err)
		}
	})
	t.Run("NotInstalledRequire", func(t *testing.T) {
		_, err := open(ctx, url, opts(testenv.FreshSchema(t, url), PGVectorRequire, quietLogger),
			func(context.Context, *pgxpool.Pool) (*extension, string, error) { return nil, "no vector here", nil })
		if !errors.Is(err, ErrPGVectorUnavailable) || !strings.Contains(err.Error(), "no vector here") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("BadMode", func(t *testing.T) {
		_, err := Open(ctx, url, Options{PGVector: "sometimes"})
		var inv *agentmem.InvalidError
		if !errors.As(err, &inv) || inv.Field != PGVectorParam {
			t.Errorf("err = %v, want an InvalidError of field pgvector", err)
		}
	})
}

// TestPGVectorConcurrentOpen opens one schema from several backends at
// once with the stand-in: one adds the column, none fails.
func TestPGVectorConcurrentOpen(t *testing.T) {
	f := standInFlavor(t)
	schema := testenv.FreshSchema(t, f.url)
	f.mustOpen(t, schema, PGVectorOff, false).Close() // the tables exist
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			b, err := f.open(schema, PGVectorRequire, true)
			if err == nil {
				if b.VectorSearch() != VectorSearchHNSW {
					err = fmt.Errorf("VectorSearch() = %q", b.VectorSearch())
				}
				b.hnsw.ready(b, b.ext.Load(), 3)
				b.Close() // cancels the build
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func mustParse(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSplitURL(t *testing.T) {
	for _, tc := range []struct {
		url    string
		conn   string
		want   Options
		errFld string
	}{
		{url: "postgres://h/db?sslmode=disable", conn: "postgres://h/db?sslmode=disable"},
		{url: "postgres://h/db?pgvector=off&schema=s&sslmode=disable", conn: "postgres://h/db?sslmode=disable", want: Options{Schema: "s", PGVector: PGVectorOff}},
		{url: "postgres://h/db?pgvector=REQUIRE", conn: "postgres://h/db", want: Options{PGVector: PGVectorRequire}},
		{url: "postgres://h/db?pgvector=auto&pgvector_hnsw=true", conn: "postgres://h/db", want: Options{PGVector: PGVectorAuto, PGVectorHNSW: true}},
		{url: "postgres://h/db?pgvector_hnsw=0", conn: "postgres://h/db", want: Options{}},
		{url: "postgres://h/db?pgvector=yes", errFld: PGVectorParam},
		{url: "postgres://h/db?pgvector=", errFld: PGVectorParam},
		{url: "postgres://h/db?pgvector=off&pgvector=require", errFld: PGVectorParam},
		{url: "postgres://h/db?pgvector_hnsw=maybe", errFld: PGVectorHNSWParam},
		{url: "postgres://h/db?pgvector_hnsw=", errFld: PGVectorHNSWParam},
	} {
		conn, opts, err := splitURL(mustParse(t, tc.url))
		if tc.errFld != "" {
			var inv *agentmem.InvalidError
			if !errors.As(err, &inv) || inv.Field != tc.errFld || inv.Reason == "" {
				t.Errorf("%s: err = %v, want an InvalidError of field %s", tc.url, err, tc.errFld)
			}
			continue
		}
		if err != nil || conn != tc.conn || opts != tc.want {
			t.Errorf("%s: %q, %+v, %v; want %q, %+v", tc.url, conn, opts, err, tc.conn, tc.want)
		}
	}
	// recall.Open reports a bad parameter before it connects.
	_, err := recall.OpenBackend(context.Background(), "postgres://127.0.0.1:1/db?pgvector=fast")
	var inv *agentmem.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), `"fast" is not a pgvector mode`) {
		t.Errorf("recall.Open: err = %v", err)
	}
}

func TestExtensionVersion(t *testing.T) {
	for v, want := range map[string]bool{"0.8.0": true, "0.8": true, "0.10.1": true, "1.0.0": true, "0.7.4": false, "0": false, "x.y": false, "": false} {
		if got := (&extension{version: v}).atLeast(0, 8); got != want {
			t.Errorf("%q at least 0.8: %v", v, got)
		}
	}
}

func TestPGVectorSQLQuoting(t *testing.T) {
	ext := pgx.Identifier{`we"ird; DROP TABLE x; --`}.Sanitize()
	for _, sql := range []string{vectorSQL(ext, 3, false, ""), vectorSQL(ext, 3, true, ""), hnswIndexSQL(ext, 3), vecColumnSQL(ext)} {
		if !strings.Contains(sql, `"we""ird; DROP TABLE x; --"`) || strings.Contains(sql, `we"ird`) {
			t.Errorf("badly quoted: %s", sql)
		}
	}
}
