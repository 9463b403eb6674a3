package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/recall"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the recall index's schema migrations, component "recall"
// of the agentmem_migrations table.
var migrations = migrate.MustLoad("recall", migrationFiles, "migrations")

// SchemaVersion is the newest schema version this package knows.
func SchemaVersion() int { return migrations.Version() }

func init() {
	recall.Register(sqlitedb.Scheme, func(ctx context.Context, u *url.URL) (recall.Backend, error) {
		path, opts, err := sqlitedb.ParseURL(u)
		if err != nil {
			return nil, err
		}
		return Open(ctx, path, opts)
	})
}

// Options configures a Backend, as for every component in a SQLite file:
// BusyTimeout is how long a write waits for another process that holds
// the database's write lock (zero means 5s), ReadConns the number of
// connections that serve reads (zero means 4). The zero value is a good
// default.
type Options = sqlitedb.Options

// Backend is a recall.Backend in a SQLite database file, which it can
// share with the session store (each keeps its own tables). It is safe
// for concurrent use, and by several processes that open one file.
type Backend struct {
	db *sqlitedb.DB
	// group commits concurrent writes together (see sqlitedb.Group): a
	// server indexes every appended step, and one commit per step would
	// bound indexing, and so appending, to one fsync each.
	group  *sqlitedb.Group
	closed atomic.Bool
	// stmts caches the read statements prepared on db.R, by query text:
	// parsing a query costs as much as running a small one.
	stmts sync.Map
}

// query runs a read query through a cached prepared statement.
func (b *Backend) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, ok := b.stmts.Load(query)
	if !ok {
		prepared, err := b.db.R.PrepareContext(ctx, query)
		if err != nil {
			return nil, err
		}
		var loaded bool
		if st, loaded = b.stmts.LoadOrStore(query, prepared); loaded {
			prepared.Close()
		}
	}
	return st.(*sql.Stmt).QueryContext(ctx, args...)
}

var _ recall.Backend = (*Backend)(nil)

// Open opens (creating it if needed) the SQLite database at path, or
// sqlitedb.MemoryPath, and brings the recall tables up to date.
func Open(ctx context.Context, path string, opts Options) (*Backend, error) {
	db, err := sqlitedb.OpenMigrated(ctx, path, opts, migrations)
	if err != nil {
		return nil, err
	}
	return &Backend{db: db, group: sqlitedb.NewGroup(db.W)}, nil
}

// Close closes the database; later calls fail with recall.ErrClosed.
func (b *Backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.group.Close()
	b.stmts.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
	return b.db.Close()
}

func (b *Backend) err(op string, err error) error {
	if b.closed.Load() {
		return fmt.Errorf("recall/sqlite: %s: %w", op, recall.ErrClosed)
	}
	return fmt.Errorf("recall/sqlite: %s: %w", op, sqlitedb.Classify(err))
}

func (b *Backend) open() error {
	if b.closed.Load() {
		return recall.ErrClosed
	}
	return nil
}

// micros encodes a time; the zero time is NULL.
func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// Upsert implements recall.Backend.
func (b *Backend) Upsert(ctx context.Context, docs ...recall.Doc) error {
	docs, err := recall.CheckDocs(docs)
	if err != nil || len(docs) == 0 {
		return err
	}
	// Analyze outside the write transaction.
	terms := make([][]string, len(docs))
	for i, d := range docs {
		terms[i] = recall.Tokenize(d.Text)
	}
	_, err = b.write(ctx, "upsert", func(ctx context.Context, tx *sql.Tx) (int, error) {
		tenant := docs[0].Tenant
		ids := make([]string, len(docs))
		for i, d := range docs {
			ids[i] = d.ID
		}
		j, _ := json.Marshal(ids)
		if _, err := deleteCount(ctx, tx, tenant, `id IN (SELECT value FROM json_each(?))`, string(j)); err != nil {
			return 0, err
		}
		st := newStats()
		for i, d := range docs {
			var meta any
			if len(d.Metadata) > 0 {
				j, _ := json.Marshal(d.Metadata)
				meta = string(j)
			}
			joined := strings.Join(terms[i], " ")
			res, err := tx.ExecContext(ctx, `INSERT INTO recall_docs (tenant, id, text, metadata, time, grp, seq, terms, len, embedding, dims, emb_norm, emb_model)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				d.Tenant, d.ID, d.Text, meta, micros(d.Time), d.Group, d.Seq, joined, len(terms[i]),
				recall.EncodeVector(d.Embedding), len(d.Embedding), recall.Norm(d.Embedding), d.EmbeddingModel)
			if err != nil {
				return 0, err
			}
			row, err := res.LastInsertId()
			if err != nil {
				return 0, err
			}
			for k, v := range d.Metadata {
				if _, err := tx.ExecContext(ctx, `INSERT INTO recall_meta (doc, key, value) VALUES (?, ?, ?)`, row, k, v); err != nil {
					return 0, err
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO recall_fts (rowid, terms) VALUES (?, ?)`, row, joined); err != nil {
				return 0, err
			}
			st.add(terms[i], 1)
		}
		return 0, st.apply(ctx, tx, tenant)
	})
	return err
}

// stats is a change of a tenant's BM25 statistics.
type stats struct {
	n, len int64
	df     map[string]int64
}

func newStats() *stats { return &stats{df: map[string]int64{}} }

// add counts a document's terms in (sign 1) or out (sign -1).
func (s *stats) add(terms []string, sign int64) {
	s.n += sign
	s.len += sign * int64(len(terms))
	seen := make(map[string]bool, len(terms))
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			s.df[t] += sign
		}
	}
}

// apply writes the change to the tenant's statistics.
func (s *stats) apply(ctx context.Context, tx *sql.Tx, tenant string) error {
	if s.n == 0 && s.len == 0 && len(s.df) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO recall_stats (tenant, n, total_len) VALUES (?, ?, ?)
		ON CONFLICT (tenant) DO UPDATE SET n = n + excluded.n, total_len = total_len + excluded.total_len`, tenant, s.n, s.len); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM recall_stats WHERE tenant = ? AND n <= 0`, tenant); err != nil {
		return err
	}
	// The document frequencies change in one statement each way, not one
	// per term: a turn has about a hundred distinct terms, and a statement
	// per term made the statistics most of an upsert's cost.
	changed := make(map[string]int64, len(s.df))
	anyNegative := false
	for t, d := range s.df {
		if d != 0 {
			changed[t] = d
			anyNegative = anyNegative || d < 0
		}
	}
	if len(changed) == 0 {
		return nil
	}
	j, err := json.Marshal(changed)
	if err != nil {
		return err
	}
	// "WHERE true" keeps SQLite from reading ON CONFLICT as a join
	// constraint of the SELECT.
	if _, err := tx.ExecContext(ctx, `INSERT INTO recall_df (tenant, term, df) SELECT ?, key, value FROM json_each(?) WHERE true
		ON CONFLICT (tenant, term) DO UPDATE SET df = df + excluded.df`, tenant, string(j)); err != nil {
		return err
	}
	if anyNegative {
		if _, err := tx.ExecContext(ctx, `DELETE FROM recall_df WHERE tenant = ? AND df <= 0
			AND term IN (SELECT key FROM json_each(?) WHERE value < 0)`, tenant, string(j)); err != nil {
			return err
		}
	}
	return nil
}

// deleteCount deletes the tenant's documents that a condition on
// recall_docs d selects, with their FTS rows, metadata and statistics, and
// returns how many there were.
func deleteCount(ctx context.Context, tx *sql.Tx, tenant, where string, args ...any) (int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT d.rowid, d.terms FROM recall_docs d WHERE d.tenant = ? AND `+where, append([]any{tenant}, args...)...)
	if err != nil {
		return 0, err
	}
	var gone []int64
	st := newStats()
	for rows.Next() {
		var row int64
		var terms string
		if err := rows.Scan(&row, &terms); err != nil {
			rows.Close()
			return 0, err
		}
		gone = append(gone, row)
		st.add(strings.Fields(terms), -1)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(gone) == 0 {
		return 0, nil
	}
	j, _ := json.Marshal(gone)
	if _, err := tx.ExecContext(ctx, `DELETE FROM recall_fts WHERE rowid IN (SELECT value FROM json_each(?))`, string(j)); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM recall_docs WHERE rowid IN (SELECT value FROM json_each(?))`, string(j)); err != nil {
		return 0, err
	}
	return len(gone), st.apply(ctx, tx, tenant)
}

const docColumns = `id, tenant, text, metadata, time, grp, seq, embedding, emb_model`

// scanDoc reads the docColumns of a row.
func scanDoc(rows *sql.Rows) (recall.Doc, error) {
	var (
		d    recall.Doc
		meta sql.NullString
		t    sql.NullInt64
		emb  []byte
	)
	if err := rows.Scan(&d.ID, &d.Tenant, &d.Text, &meta, &t, &d.Group, &d.Seq, &emb, &d.EmbeddingModel); err != nil {
		return d, err
	}
	if meta.Valid {
		if err := json.Unmarshal([]byte(meta.String), &d.Metadata); err != nil {
			return d, fmt.Errorf("document %q: metadata: %w", d.ID, err)
		}
	}
	if t.Valid {
		d.Time = time.UnixMicro(t.Int64).UTC()
	}
	var err error
	if d.Embedding, err = recall.DecodeVector(emb); err != nil {
		return d, fmt.Errorf("document %q: %w", d.ID, err)
	}
	return d, nil
}

func (b *Backend) queryDocs(ctx context.Context, op, query string, args ...any) ([]recall.Doc, error) {
	if err := b.open(); err != nil {
		return nil, err
	}
	rows, err := b.query(ctx, query, args...)
	if err != nil {
		return nil, b.err(op, err)
	}
	defer rows.Close()
	var out []recall.Doc
	for rows.Next() {
		d, err := scanDoc(rows)
		if err != nil {
			return nil, b.err(op, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, b.err(op, err)
	}
	return out, nil
}

// Get implements recall.Backend.
func (b *Backend) Get(ctx context.Context, tenant string, ids ...string) ([]recall.Doc, error) {
	if err := recall.CheckIDs(tenant, ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	j, _ := json.Marshal(ids)
	docs, err := b.queryDocs(ctx, "get", `SELECT `+docColumns+` FROM recall_docs WHERE tenant = ? AND id IN (SELECT value FROM json_each(?))`, tenant, string(j))
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

// write runs fn in a write transaction.
func (b *Backend) write(ctx context.Context, op string, fn func(ctx context.Context, tx *sql.Tx) (int, error)) (int, error) {
	if err := b.open(); err != nil {
		return 0, err
	}
	var n int
	err := b.group.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		n, err = fn(ctx, tx)
		return err
	})
	if err != nil {
		if errors.Is(err, sqlitedb.ErrGroupClosed) {
			err = recall.ErrClosed
		}
		return 0, b.err(op, err)
	}
	return n, nil
}

// Delete implements recall.Backend.
func (b *Backend) Delete(ctx context.Context, tenant string, ids ...string) (int, error) {
	if err := recall.CheckIDs(tenant, ids); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	j, _ := json.Marshal(ids)
	return b.write(ctx, "delete", func(ctx context.Context, tx *sql.Tx) (int, error) {
		return deleteCount(ctx, tx, tenant, `d.id IN (SELECT value FROM json_each(?))`, string(j))
	})
}

// filterSQL returns the SQL condition on recall_docs d of a filter, and
// its arguments.
func filterSQL(f recall.Filter) (string, []any) {
	f = f.Normalize()
	var conds []string
	var args []any
	keys := make([]string, 0, len(f.Metadata))
	for k := range f.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		conds = append(conds, `EXISTS (SELECT 1 FROM recall_meta m WHERE m.doc = d.rowid AND m.key = ? AND m.value = ?)`)
		args = append(args, k, f.Metadata[k])
	}
	if !f.Since.IsZero() {
		conds = append(conds, `d.time >= ?`)
		args = append(args, f.Since.UnixMicro())
	}
	if !f.Until.IsZero() {
		conds = append(conds, `d.time < ?`)
		args = append(args, f.Until.UnixMicro())
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " AND " + strings.Join(conds, " AND "), args
}

// Clear implements recall.Backend.
func (b *Backend) Clear(ctx context.Context, tenant string, f recall.Filter) (int, error) {
	if err := recall.CheckTenant(tenant); err != nil {
		return 0, err
	}
	if err := recall.CheckFilter(f); err != nil {
		return 0, err
	}
	cond, args := filterSQL(f)
	return b.write(ctx, "clear", func(ctx context.Context, tx *sql.Tx) (int, error) {
		return deleteCount(ctx, tx, tenant, `true`+cond, args...)
	})
}

// phrases is an FTS5 OR of terms, each a quoted phrase.
func phrases(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(q, " OR ")
}

// tenantStats reads the tenant's document count, average length and the
// query terms' document frequencies.
func (b *Backend) tenantStats(ctx context.Context, tenant string, terms []string) (n, avg float64, df map[string]float64, err error) {
	var total float64
	srows, err := b.query(ctx, `SELECT n, total_len FROM recall_stats WHERE tenant = ?`, tenant)
	if err != nil {
		return 0, 0, nil, err
	}
	if !srows.Next() {
		srows.Close()
		return 0, 0, nil, srows.Err()
	}
	err = srows.Scan(&n, &total)
	srows.Close()
	if err != nil {
		return 0, 0, nil, err
	}
	avg = 1
	if n > 0 && total > 0 {
		avg = total / n
	}
	j, _ := json.Marshal(terms)
	rows, err := b.query(ctx, `SELECT term, df FROM recall_df WHERE tenant = ? AND term IN (SELECT value FROM json_each(?))`, tenant, string(j))
	if err != nil {
		return 0, 0, nil, err
	}
	defer rows.Close()
	df = map[string]float64{}
	for rows.Next() {
		var t string
		var d float64
		if err := rows.Scan(&t, &d); err != nil {
			return 0, 0, nil, err
		}
		df[t] = d
	}
	return n, avg, df, rows.Err()
}

// Lexical implements recall.Backend: FTS5 finds the documents that hold
// a query term, and BM25 is computed here exactly as the in-memory
// backend computes it (Lucene's idf, k1 = 1.2, b = 0.75, statistics of
// the tenant alone, candidate gating: see recall.GateShare), from the
// statistics every write keeps and the candidates' stored terms. FTS5's
// own bm25() is not used: it counts each query term's documents by
// walking the term's whole posting list at every search, which costs
// tens of milliseconds per common term at 100,000 documents.
func (b *Backend) Lexical(ctx context.Context, q recall.LexicalQuery) ([]recall.Match, error) {
	if err := recall.CheckQuery(q.Tenant, q.Filter, q.Limit); err != nil {
		return nil, err
	}
	terms := recall.UniqueTerms(q.Terms)
	if len(terms) == 0 {
		return nil, nil
	}
	if err := b.open(); err != nil {
		return nil, err
	}
	n, avg, df, err := b.tenantStats(ctx, q.Tenant, terms)
	if err != nil {
		return nil, b.err("lexical", err)
	}
	idf := map[string]float64{}
	for _, t := range terms {
		if d := df[t]; d > 0 {
			idf[t] = math.Log(1 + (n-d+0.5)/(d+0.5))
		}
	}
	if len(idf) == 0 {
		return nil, nil
	}
	gate := recall.GateTerms(terms, func(t string) float64 { return df[t] }, n)
	// A document's score sums its terms' shares in this order, the gate
	// terms then the others, as the in-memory backend sums them: floating
	// point addition is not associative, and summing in a map's order made
	// near-equal scores, and so the order of ties, change from run to run.
	order := slices.Clone(gate)
	for _, t := range terms {
		if idf[t] > 0 && !slices.Contains(gate, t) {
			order = append(order, t)
		}
	}
	top := recall.NewTopK(q.Limit)
	found, err := b.score(ctx, q, gate, order, idf, avg, top)
	if err == nil && found == 0 && len(gate) < len(idf) {
		var all []string
		for _, t := range terms {
			if idf[t] > 0 {
				all = append(all, t)
			}
		}
		_, err = b.score(ctx, q, all, order, idf, avg, top)
	}
	if err != nil {
		return nil, b.err("lexical", err)
	}
	return top.Sorted(), nil
}

// score offers to top the tenant's documents that hold a gate term and
// pass the filter, scored on every term of idf, and returns how many it
// found. It reads at most max(recall.GateBudget, q.Limit) of them, the
// newest: when even the rarest query term is that common, the search
// stays bounded and favours recent documents.
func (b *Backend) score(ctx context.Context, q recall.LexicalQuery, gate, order []string, idf map[string]float64, avg float64, top *recall.TopK) (int, error) {
	if len(gate) == 0 {
		return 0, nil
	}
	const k1, bb = recall.DefaultK1, recall.DefaultB
	cond, fargs := filterSQL(q.Filter)
	rows, err := b.query(ctx, `SELECT d.id, d.grp, d.seq, d.len, d.terms FROM recall_fts f JOIN recall_docs d ON d.rowid = f.rowid
		WHERE recall_fts MATCH ? AND d.tenant = ?`+cond+` ORDER BY f.rowid DESC LIMIT ?`, append(append([]any{phrases(gate), q.Tenant}, fargs...), max(recall.GateBudget, q.Limit))...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	found := 0
	tf := make(map[string]float64, len(idf))
	for rows.Next() {
		var (
			m     recall.Match
			dl    float64
			terms string
		)
		if err := rows.Scan(&m.ID, &m.Group, &m.Seq, &dl, &terms); err != nil {
			return 0, err
		}
		found++
		clear(tf)
		for t := range strings.FieldsSeq(terms) {
			if _, ok := idf[t]; ok {
				tf[t]++
			}
		}
		norm := k1 * (1 - bb + bb*dl/avg)
		for _, t := range order {
			if f := tf[t]; f > 0 {
				m.Score += idf[t] * f * (k1 + 1) / (f + norm)
			}
		}
		if m.Score > 0 {
			top.Push(m)
		}
	}
	return found, rows.Err()
}

// Vector implements recall.Backend by exact cosine scoring of the
// tenant's embeddings of the query's dimension.
func (b *Backend) Vector(ctx context.Context, q recall.VectorQuery) ([]recall.Match, error) {
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
	if err := b.open(); err != nil {
		return nil, err
	}
	cond, fargs := filterSQL(q.Filter)
	rows, err := b.db.R.QueryContext(ctx, `SELECT d.id, d.grp, d.seq, d.embedding, d.emb_norm FROM recall_docs d
		WHERE d.tenant = ? AND d.dims = ? AND d.emb_norm > 0`+cond, append([]any{q.Tenant, len(q.Vector)}, fargs...)...)
	if err != nil {
		return nil, b.err("vector", err)
	}
	defer rows.Close()
	top := recall.NewTopK(q.Limit)
	for rows.Next() {
		var (
			m    recall.Match
			emb  []byte
			norm float64
		)
		if err := rows.Scan(&m.ID, &m.Group, &m.Seq, &emb, &norm); err != nil {
			return nil, b.err("vector", err)
		}
		v, err := recall.DecodeVector(emb)
		if err != nil {
			return nil, b.err("vector", err)
		}
		m.Score = recall.Dot(q.Vector, v) / (qn * norm)
		top.Push(m)
	}
	if err := rows.Err(); err != nil {
		return nil, b.err("vector", err)
	}
	return top.Sorted(), nil
}

// Around implements recall.Backend.
func (b *Backend) Around(ctx context.Context, tenant, group string, from, to int64) ([]recall.Doc, error) {
	if err := recall.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if group == "" {
		return nil, nil
	}
	return b.queryDocs(ctx, "around", `SELECT `+docColumns+` FROM recall_docs WHERE tenant = ? AND grp = ? AND grp <> '' AND seq BETWEEN ? AND ? ORDER BY seq, id`, tenant, group, from, to)
}

// Stale implements recall.Backend.
func (b *Backend) Stale(ctx context.Context, tenant, model, after string, limit int) ([]recall.Doc, error) {
	if err := recall.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, recall.CheckQuery(tenant, recall.Filter{}, limit)
	}
	return b.queryDocs(ctx, "stale", `SELECT id, tenant, text, metadata, time, grp, seq, NULL, emb_model FROM recall_docs
		WHERE tenant = ? AND emb_model <> ? AND id > ? ORDER BY id LIMIT ?`, tenant, model, after, limit)
}

// SetEmbeddings implements recall.Backend.
func (b *Backend) SetEmbeddings(ctx context.Context, tenant string, updates []recall.EmbeddingUpdate) (int, error) {
	if err := recall.CheckUpdates(tenant, updates); err != nil {
		return 0, err
	}
	if len(updates) == 0 {
		return 0, nil
	}
	return b.write(ctx, "set embeddings", func(ctx context.Context, tx *sql.Tx) (int, error) {
		n := 0
		for _, u := range updates {
			res, err := tx.ExecContext(ctx, `UPDATE recall_docs SET embedding = ?, dims = ?, emb_norm = ?, emb_model = ? WHERE tenant = ? AND id = ? AND text = ?`,
				recall.EncodeVector(u.Vector), len(u.Vector), recall.Norm(u.Vector), u.Model, tenant, u.ID, u.Text)
			if err != nil {
				return 0, err
			}
			c, err := res.RowsAffected()
			if err != nil {
				return 0, err
			}
			n += int(c)
		}
		return n, nil
	})
}

// DocFreqs implements recall.Backend, from the statistics every write
// keeps.
func (b *Backend) DocFreqs(ctx context.Context, tenant string, terms []string) (recall.DocStats, error) {
	if err := recall.CheckTenant(tenant); err != nil {
		return recall.DocStats{}, err
	}
	if err := b.open(); err != nil {
		return recall.DocStats{}, err
	}
	n, _, df, err := b.tenantStats(ctx, tenant, recall.UniqueTerms(terms))
	if err != nil {
		return recall.DocStats{}, b.err("docfreqs", err)
	}
	st := recall.DocStats{Docs: int64(n), DF: make(map[string]int64, len(df))}
	for t, d := range df {
		if d > 0 {
			st.DF[t] = int64(d)
		}
	}
	return st, nil
}

// Tenants implements recall.Backend.
func (b *Backend) Tenants(ctx context.Context) ([]string, error) {
	if err := b.open(); err != nil {
		return nil, err
	}
	rows, err := b.db.R.QueryContext(ctx, `SELECT tenant FROM recall_stats WHERE n > 0 ORDER BY tenant`)
	if err != nil {
		return nil, b.err("tenants", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, b.err("tenants", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, b.err("tenants", err)
	}
	return out, nil
}
