package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/recall"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the recall index's schema migrations, component "recall"
// of the agentmem_migrations table. On Citus both tables are distributed
// by tenant, co-located with the session store's: a search, and the
// writes of one tenant, run on one worker.
var migrations = migrate.MustLoad("recall", migrationFiles, "migrations").WithCitus(migrate.Citus{
	Distributed: []string{"recall_tenants", "recall_docs"},
	Prepare: `ALTER TABLE recall_docs ALTER COLUMN tenant TYPE text COLLATE "C";
		ALTER TABLE recall_tenants ALTER COLUMN tenant TYPE text COLLATE "C";`,
})

// SchemaVersion is the newest schema version this package knows.
func SchemaVersion() int { return migrations.Version() }

func init() {
	open := func(ctx context.Context, u *url.URL) (recall.Backend, error) {
		conn, opts, err := splitURL(u)
		if err != nil {
			return nil, err
		}
		return Open(ctx, conn, opts)
	}
	recall.Register("postgres", open)
	recall.Register("postgresql", open)
}

// Options configures a Backend. The zero value is a good default.
type Options struct {
	// Schema is the PostgreSQL schema of the recall tables, created when
	// missing and set as every connection's search_path; empty means the
	// database's default search_path.
	Schema string
	// MaxConns caps the connection pool; zero means pgxpool's default.
	MaxConns int32
	// PGVector says whether vector search uses the pgvector extension:
	// PGVectorAuto (the default, also ""), PGVectorOff or
	// PGVectorRequire. The URL parameter pgvector sets it.
	PGVector PGVectorMode
	// PGVectorHNSW, with pgvector 0.8.0 or later, builds an HNSW index
	// for each embedding dimension (up to 2,000) in the background when
	// that dimension is first searched, which makes vector search
	// approximate once the index is ready (see the package
	// documentation). Without pgvector it does nothing. The URL
	// parameter pgvector_hnsw sets it.
	PGVectorHNSW bool
	// Logger receives what the backend finds out about pgvector (at
	// open, when it goes away, HNSW index builds); nil means
	// slog.Default().
	Logger *slog.Logger
}

// BM25 parameters, the same as the in-memory backend's defaults.
const (
	k1 = recall.DefaultK1
	b  = recall.DefaultB
)

// Backend is a recall.Backend over a PostgreSQL database, which any
// number of servers can share. It is safe for concurrent use.
type Backend struct {
	pool   *pgxpool.Pool
	schema string
	log    *slog.Logger
	// ext is the pgvector extension vector search uses; nil for the
	// exact path. Set at open; cleared when pgvector goes away.
	ext atomic.Pointer[extension]
	// hnsw tracks the HNSW indexes when they are used, else it is nil.
	hnsw   *hnswIndexes
	closed atomic.Bool
}

var _ recall.Backend = (*Backend)(nil)

// Open connects to the database connString names, brings the recall
// tables up to date, and chooses the vector search path (see
// Options.PGVector and VectorSearch).
func Open(ctx context.Context, connString string, opts Options) (*Backend, error) {
	return open(ctx, connString, opts, probePGVector)
}

// open is Open with the prober that finds pgvector.
func open(ctx context.Context, connString string, opts Options, probe prober) (*Backend, error) {
	mode, err := parseMode(string(opts.PGVector))
	if err != nil {
		return nil, err
	}
	pool, err := pgdb.Open(ctx, connString, opts.Schema, opts.MaxConns)
	if err != nil {
		return nil, err
	}
	if err := migrate.Postgres(ctx, pool, opts.Schema, migrations); err != nil {
		pool.Close()
		return nil, err
	}
	p := &Backend{pool: pool, schema: opts.Schema, log: opts.Logger}
	if p.log == nil {
		p.log = slog.Default()
	}
	if err := p.setUpPGVector(ctx, mode, opts.PGVectorHNSW, probe); err != nil {
		pool.Close()
		return nil, err
	}
	return p, nil
}

// Close closes the pool; later calls fail with recall.ErrClosed.
func (p *Backend) Close() error {
	if !p.closed.Swap(true) {
		if p.hnsw != nil {
			p.hnsw.close()
		}
		p.pool.Close()
	}
	return nil
}

func (p *Backend) open() error {
	if p.closed.Load() {
		return recall.ErrClosed
	}
	return nil
}

func (p *Backend) err(op string, err error) error {
	if p.closed.Load() {
		return fmt.Errorf("recall/postgres: %s: %w", op, recall.ErrClosed)
	}
	return fmt.Errorf("recall/postgres: %s: %w", op, pgdb.Classify(err))
}

// quoteLexeme quotes a lexeme for tsvector and tsquery input: verbatim,
// with quotes and backslashes doubled.
func quoteLexeme(s string) string {
	if !strings.ContainsAny(s, `'\`) {
		return "'" + s + "'"
	}
	return "'" + lexemeQuoter.Replace(s) + "'"
}

// lexemeQuoter doubles quotes and backslashes. A Replacer is built on its
// first use, which costs far more than replacing: it is built once.
var lexemeQuoter = strings.NewReplacer(`'`, `''`, `\`, `\\`)

// tsvector is the tsvector literal of analyzed terms: each lexeme with
// positions 1..tf (at most 256), so cardinality(positions) is tf.
func tsvector(terms []string) string {
	tf := map[string]int{}
	for _, t := range terms {
		tf[t]++
	}
	keys := make([]string, 0, len(tf))
	for t := range tf {
		keys = append(keys, t)
	}
	slices.Sort(keys)
	var sb strings.Builder
	for i, t := range keys {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(quoteLexeme(t))
		sb.WriteByte(':')
		for p := 1; p <= min(tf[t], 256); p++ {
			if p > 1 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(p))
		}
	}
	return sb.String()
}

// tsquery is the tsquery literal that matches any of the terms.
func tsquery(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = quoteLexeme(t)
	}
	return strings.Join(q, " | ")
}

// lockTenant takes the tenant's statistics row lock for the transaction,
// creating the row if needed, so that a tenant's writers serialize.
func lockTenant(ctx context.Context, tx pgx.Tx, tenant string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO recall_tenants (tenant) VALUES ($1) ON CONFLICT DO NOTHING`, tenant); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `SELECT 1 FROM recall_tenants WHERE tenant = $1 FOR UPDATE`, tenant)
	return err
}

// delta is a change of a tenant's statistics.
type delta struct {
	n, len int64
}

// write runs fn in a transaction that holds the tenant's lock, then
// applies the change of the tenant's statistics fn reports; fn returns
// the number of documents it touched too.
func (p *Backend) write(ctx context.Context, op, tenant string, fn func(tx pgx.Tx) (int, delta, error)) (int, error) {
	if err := p.open(); err != nil {
		return 0, err
	}
	var n int
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if err := lockTenant(ctx, tx, tenant); err != nil {
			return err
		}
		var (
			d   delta
			err error
		)
		if n, d, err = fn(tx); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE recall_tenants SET n = n + $2, total_len = total_len + $3 WHERE tenant = $1`, tenant, d.n, d.len)
		return err
	})
	if err != nil {
		return 0, p.err(op, err)
	}
	return n, nil
}

// removed deletes the rows a condition selects and returns their count
// and the statistics change.
func removed(ctx context.Context, tx pgx.Tx, query string, args ...any) (int, delta, error) {
	var d delta
	err := tx.QueryRow(ctx, `WITH gone AS (`+query+` RETURNING len) SELECT count(*), coalesce(sum(len), 0) FROM gone`, args...).Scan(&d.n, &d.len)
	return int(d.n), delta{-d.n, -d.len}, err
}

// Upsert implements recall.Backend.
func (p *Backend) Upsert(ctx context.Context, docs ...recall.Doc) error {
	docs, err := recall.CheckDocs(docs)
	if err != nil || len(docs) == 0 {
		return err
	}
	_, err = p.write(ctx, "upsert", docs[0].Tenant, func(tx pgx.Tx) (int, delta, error) {
		ids := make([]string, len(docs))
		for i, d := range docs {
			ids[i] = d.ID
		}
		var old delta
		if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(len), 0) FROM recall_docs WHERE tenant = $1 AND id = ANY($2)`, docs[0].Tenant, ids).Scan(&old.n, &old.len); err != nil {
			return 0, delta{}, err
		}
		d := delta{n: int64(len(docs)) - old.n, len: -old.len}
		batch := &pgx.Batch{}
		for _, doc := range docs {
			terms := recall.Tokenize(doc.Text)
			d.len += int64(len(terms))
			var meta, t, emb any
			if len(doc.Metadata) > 0 {
				j, _ := json.Marshal(doc.Metadata)
				meta = string(j)
			}
			if !doc.Time.IsZero() {
				t = doc.Time
			}
			if len(doc.Embedding) > 0 {
				emb = doc.Embedding
			}
			batch.Queue(`INSERT INTO recall_docs (tenant, id, text, metadata, time, grp, seq, terms, len, embedding, dims, emb_norm, emb_model)
				VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8::tsvector, $9, $10, $11, $12, $13)
				ON CONFLICT (tenant, id) DO UPDATE SET text = excluded.text, metadata = excluded.metadata, time = excluded.time,
					grp = excluded.grp, seq = excluded.seq, terms = excluded.terms, len = excluded.len, embedding = excluded.embedding,
					dims = excluded.dims, emb_norm = excluded.emb_norm, emb_model = excluded.emb_model`,
				doc.Tenant, doc.ID, doc.Text, meta, t, doc.Group, doc.Seq, tsvector(terms), len(terms), emb, len(doc.Embedding), recall.Norm(doc.Embedding), doc.EmbeddingModel)
		}
		return 0, d, tx.SendBatch(ctx, batch).Close()
	})
	return err
}

const docColumns = `id, tenant, text, metadata, time, grp, seq, embedding, emb_model`

func scanDocs(rows pgx.Rows) ([]recall.Doc, error) {
	defer rows.Close()
	var out []recall.Doc
	for rows.Next() {
		var (
			d    recall.Doc
			meta []byte
			t    *time.Time
			emb  []float32
		)
		if err := rows.Scan(&d.ID, &d.Tenant, &d.Text, &meta, &t, &d.Group, &d.Seq, &emb, &d.EmbeddingModel); err != nil {
			return nil, err
		}
		if meta != nil {
			if err := json.Unmarshal(meta, &d.Metadata); err != nil {
				return nil, fmt.Errorf("document %q: metadata: %w", d.ID, err)
			}
		}
		if t != nil {
			d.Time = t.UTC()
		}
		if len(emb) > 0 {
			d.Embedding = emb
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

func (p *Backend) queryDocs(ctx context.Context, op, query string, args ...any) ([]recall.Doc, error) {
	if err := p.open(); err != nil {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, p.err(op, err)
	}
	docs, err := scanDocs(rows)
	if err != nil {
		return nil, p.err(op, err)
	}
	return docs, nil
}

// Get implements recall.Backend.
func (p *Backend) Get(ctx context.Context, tenant string, ids ...string) ([]recall.Doc, error) {
	if err := recall.CheckIDs(tenant, ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	docs, err := p.queryDocs(ctx, "get", `SELECT `+docColumns+` FROM recall_docs WHERE tenant = $1 AND id = ANY($2)`, tenant, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]recall.Doc, len(docs))
	for _, d := range docs {
		byID[d.ID] = d
	}
	out := make([]recall.Doc, 0, len(docs))
	for _, id := range ids {
		if d, ok := byID[id]; ok {
			out = append(out, d)
			delete(byID, id)
		}
	}
	return out, nil
}

// Delete implements recall.Backend.
func (p *Backend) Delete(ctx context.Context, tenant string, ids ...string) (int, error) {
	if err := recall.CheckIDs(tenant, ids); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return p.write(ctx, "delete", tenant, func(tx pgx.Tx) (int, delta, error) {
		return removed(ctx, tx, `DELETE FROM recall_docs WHERE tenant = $1 AND id = ANY($2)`, tenant, ids)
	})
}

// filterSQL returns the SQL condition of a filter on the columns of
// recall_docs (aliased d), numbering its arguments from next.
func filterSQL(f recall.Filter, next int) (string, []any) {
	f = f.Normalize()
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(next+len(args)-1)
	}
	if len(f.Metadata) > 0 {
		j, _ := json.Marshal(f.Metadata)
		conds = append(conds, `d.metadata @> `+arg(string(j))+`::jsonb`)
	}
	if !f.Since.IsZero() {
		conds = append(conds, `d.time >= `+arg(f.Since))
	}
	if !f.Until.IsZero() {
		conds = append(conds, `d.time < `+arg(f.Until))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " AND " + strings.Join(conds, " AND "), args
}

// Clear implements recall.Backend.
func (p *Backend) Clear(ctx context.Context, tenant string, f recall.Filter) (int, error) {
	if err := recall.CheckTenant(tenant); err != nil {
		return 0, err
	}
	if err := recall.CheckFilter(f); err != nil {
		return 0, err
	}
	cond, args := filterSQL(f, 2)
	n, err := p.write(ctx, "clear", tenant, func(tx pgx.Tx) (int, delta, error) {
		return removed(ctx, tx, `DELETE FROM recall_docs d WHERE d.tenant = $1`+cond, append([]any{tenant}, args...)...)
	})
	if err == nil {
		// Drop the statistics of a tenant left empty.
		_, _ = p.pool.Exec(ctx, `DELETE FROM recall_tenants WHERE tenant = $1 AND n = 0`, tenant)
	}
	return n, err
}

// Lexical implements recall.Backend: the tsvector's GIN index finds the
// documents holding a query term, and BM25 is computed in SQL exactly as
// the in-memory backend computes it (k1 = 1.2, b = 0.75, idf = ln(1 +
// (N - df + 0.5) / (df + 0.5)), N, df and the average length counted over
// the tenant's documents), from each lexeme's position count as the term
// frequency (capped at 256).
func (p *Backend) Lexical(ctx context.Context, q recall.LexicalQuery) ([]recall.Match, error) {
	if err := recall.CheckQuery(q.Tenant, q.Filter, q.Limit); err != nil {
		return nil, err
	}
	terms := recall.UniqueTerms(q.Terms)
	if len(terms) == 0 {
		return nil, nil
	}
	if err := p.open(); err != nil {
		return nil, err
	}
	cond, fargs := filterSQL(q.Filter, 5)
	query := `WITH st AS (
			SELECT n::float8 AS n, greatest(total_len::float8 / greatest(n, 1), 1) AS avg FROM recall_tenants WHERE tenant = $1
		), m AS (
			SELECT d.id, d.grp, d.seq, d.len, d.metadata, d.time, u.lexeme, cardinality(u.positions) AS tf
			FROM recall_docs d, unnest(d.terms) u
			WHERE d.tenant = $1 AND d.terms @@ $2::tsquery AND u.lexeme = ANY($3)
		), df AS (
			SELECT lexeme, count(*)::float8 AS df FROM m GROUP BY lexeme
		)
		SELECT d.id, d.grp, d.seq,
			sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * d.tf * ` + ftoa(k1+1) + ` / (d.tf + ` + ftoa(k1) + ` * (1 - ` + ftoa(b) + ` + ` + ftoa(b) + ` * d.len / st.avg))) AS s
		FROM m d JOIN df USING (lexeme) CROSS JOIN st
		WHERE true` + cond + `
		GROUP BY d.id, d.grp, d.seq ORDER BY s DESC, d.id COLLATE "C" LIMIT $4`
	args := append([]any{q.Tenant, tsquery(terms), terms, q.Limit}, fargs...)
	rows, err := p.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, p.err("lexical", err)
	}
	defer rows.Close()
	var out []recall.Match
	for rows.Next() {
		var m recall.Match
		if err := rows.Scan(&m.ID, &m.Group, &m.Seq, &m.Score); err != nil {
			return nil, p.err("lexical", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, p.err("lexical", err)
	}
	return out, nil
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Vector implements recall.Backend by exact cosine scoring of the
// tenant's embeddings of the query's dimension: all of them, or with
// pgvector those it ranks nearest (see the package documentation).
func (p *Backend) Vector(ctx context.Context, q recall.VectorQuery) ([]recall.Match, error) {
	if err := recall.CheckQuery(q.Tenant, q.Filter, q.Limit); err != nil {
		return nil, err
	}
	if err := recall.CheckVectorQuery(q.Vector); err != nil {
		return nil, err
	}
	qn := recall.Norm(q.Vector)
	if qn == 0 {
		return nil, nil
	}
	if err := p.open(); err != nil {
		return nil, err
	}
	if ext := p.ext.Load(); ext != nil && len(q.Vector) <= pgvectorMaxDims {
		ms, err := p.vectorPG(ctx, ext, q, qn)
		switch {
		case err == nil:
			return ms, nil
		case !pgvectorGone(err):
			return nil, p.err("vector", err)
		}
		// The extension or the column was dropped: search exactly from
		// now on (Open adds the column again when it has pgvector).
		if p.ext.CompareAndSwap(ext, nil) {
			p.log.Warn("recall/postgres: pgvector is gone (was the extension dropped?); vector search is exact, in Go, from now on", "err", err)
		}
	}
	cond, fargs := filterSQL(q.Filter, 3)
	rows, err := p.pool.Query(ctx, `SELECT d.id, d.grp, d.seq, d.embedding, d.emb_norm FROM recall_docs d
		WHERE d.tenant = $1 AND d.dims = $2 AND d.emb_norm > 0`+cond, append([]any{q.Tenant, len(q.Vector)}, fargs...)...)
	if err != nil {
		return nil, p.err("vector", err)
	}
	top, _, err := scoreRows(rows, q.Vector, qn, q.Limit)
	if err != nil {
		return nil, p.err("vector", err)
	}
	return top.Sorted(), nil
}

// Around implements recall.Backend.
func (p *Backend) Around(ctx context.Context, tenant, group string, from, to int64) ([]recall.Doc, error) {
	if err := recall.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if group == "" {
		return nil, nil
	}
	return p.queryDocs(ctx, "around", `SELECT `+docColumns+` FROM recall_docs WHERE tenant = $1 AND grp = $2 AND grp <> '' AND seq BETWEEN $3 AND $4 ORDER BY seq, id COLLATE "C"`, tenant, group, from, to)
}

// Stale implements recall.Backend.
func (p *Backend) Stale(ctx context.Context, tenant, model, after string, limit int) ([]recall.Doc, error) {
	if err := recall.CheckQuery(tenant, recall.Filter{}, limit); err != nil {
		return nil, err
	}
	return p.queryDocs(ctx, "stale", `SELECT id, tenant, text, metadata, time, grp, seq, NULL::real[], emb_model FROM recall_docs
		WHERE tenant = $1 AND emb_model <> $2 AND id COLLATE "C" > $3 ORDER BY id COLLATE "C" LIMIT $4`, tenant, model, after, limit)
}

// SetEmbeddings implements recall.Backend.
func (p *Backend) SetEmbeddings(ctx context.Context, tenant string, updates []recall.EmbeddingUpdate) (int, error) {
	if err := recall.CheckUpdates(tenant, updates); err != nil {
		return 0, err
	}
	if len(updates) == 0 {
		return 0, nil
	}
	if err := p.open(); err != nil {
		return 0, err
	}
	n := 0
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		for _, u := range updates {
			tag, err := tx.Exec(ctx, `UPDATE recall_docs SET embedding = $1, dims = $2, emb_norm = $3, emb_model = $4 WHERE tenant = $5 AND id = $6 AND text = $7`,
				u.Vector, len(u.Vector), recall.Norm(u.Vector), u.Model, tenant, u.ID, u.Text)
			if err != nil {
				return err
			}
			n += int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return 0, p.err("set embeddings", err)
	}
	return n, nil
}

// DocFreqs implements recall.Backend: the document count kept with the
// tenant's statistics, and each term's documents counted through the
// tsvector's GIN index (the same count Lexical's BM25 uses).
func (p *Backend) DocFreqs(ctx context.Context, tenant string, terms []string) (recall.DocStats, error) {
	if err := recall.CheckTenant(tenant); err != nil {
		return recall.DocStats{}, err
	}
	if err := p.open(); err != nil {
		return recall.DocStats{}, err
	}
	st := recall.DocStats{DF: map[string]int64{}}
	if err := p.pool.QueryRow(ctx, `SELECT coalesce((SELECT n FROM recall_tenants WHERE tenant = $1), 0)`, tenant).Scan(&st.Docs); err != nil {
		return recall.DocStats{}, p.err("docfreqs", err)
	}
	terms = recall.UniqueTerms(terms)
	if len(terms) == 0 || st.Docs == 0 {
		return st, nil
	}
	rows, err := p.pool.Query(ctx, `SELECT u.lexeme, count(*) FROM recall_docs d, unnest(d.terms) u
		WHERE d.tenant = $1 AND d.terms @@ $2::tsquery AND u.lexeme = ANY($3) GROUP BY u.lexeme`, tenant, tsquery(terms), terms)
	if err != nil {
		return recall.DocStats{}, p.err("docfreqs", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int64
		if err := rows.Scan(&t, &n); err != nil {
			return recall.DocStats{}, p.err("docfreqs", err)
		}
		st.DF[t] = n
	}
	if err := rows.Err(); err != nil {
		return recall.DocStats{}, p.err("docfreqs", err)
	}
	return st, nil
}

// Tenants implements recall.Backend.
func (p *Backend) Tenants(ctx context.Context) ([]string, error) {
	if err := p.open(); err != nil {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, `SELECT tenant FROM recall_tenants WHERE n > 0 ORDER BY tenant COLLATE "C"`)
	if err != nil {
		return nil, p.err("tenants", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, p.err("tenants", err)
	}
	return out, nil
}
