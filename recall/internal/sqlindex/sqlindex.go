// Package sqlindex is the recall index over a SQL database, written once
// for SQLite and PostgreSQL (and Citus) over internal/sqldb. It has the
// documents' rows and their upsert, delete and clear, the tenants' BM25
// statistics, and filters. It has the reads (Get, Around, Stale), exact
// vector search, embeddings' updates, tenant scoping and the mapping of
// errors.
//
// What the two backends really do differently is their Dialect. It says
// how the database indexes the documents' terms for lexical search, and
// how a metadata filter reads the documents' metadata. SQLite uses FTS5,
// with document frequencies kept by every write. PostgreSQL uses a
// tsvector with a GIN index, with BM25 computed in SQL. recall/sqlite and
// recall/postgres each give their Dialect, open the database and run their
// migrations. They add only what they alone have (pgvector).
//
// Both schemas have recall_docs with the same columns, terms in the
// dialect's form. Both have a table of each tenant's document count and
// total length: recall_stats on SQLite and recall_tenants on PostgreSQL.
package sqlindex

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/recall"
)

// Dialect is what a backend does its own way. Its methods run inside the
// Index's calls, which have checked their arguments and map their errors.
type Dialect interface {
	// Insert writes docs, all of one tenant and none of them in the index
	// yet, whose analyzed terms (recall.Tokenize) are terms. It writes their
	// recall_docs rows and what the dialect keeps beside them. The rows go a
	// row at a time with Queries.InsertSQL and DocArgs, or in one statement
	// of the dialect's with MetadataJSON for the metadata column.
	Insert(ctx context.Context, q *Queries, tx sqldb.Tx, docs []recall.Doc, terms [][]string) error
	// Remove deletes the tenant's documents that cond selects, with what the
	// dialect keeps of them. cond is a condition on recall_docs d whose
	// parameters are args from $2 on ($1 is the tenant). It returns how many
	// there were and their total length.
	Remove(ctx context.Context, tx sqldb.Tx, tenant, cond string, args []any) (n, length int64, err error)
	// MetadataCond is the condition on recall_docs d that a document's
	// metadata holds every pair of meta, which is not empty. arg adds a
	// query parameter and returns its placeholder.
	MetadataCond(meta map[string]string, arg func(v any) string) string
	// EntryAtMost is the condition on recall_docs d that the document was
	// made from a log entry at most through (a placeholder). The entry is
	// its metadata's recall.MetaEntry when that is 1 to 18 decimal digits,
	// or else its seq (recall.EntrySeq).
	EntryAtMost(through string) string
	// Lexical is recall.LexicalSearcher's Lexical for a checked query whose
	// unique terms are terms (not empty).
	Lexical(ctx context.Context, q *Queries, lq recall.LexicalQuery, terms []string) ([]recall.Match, error)
	// DocFreqs is the query of how many of the tenant's documents hold each
	// of terms (unique, not empty), and its arguments. The query's rows are
	// (term, count).
	DocFreqs(tenant string, terms []string) (query string, args []any)
}

// Config configures an Index.
type Config struct {
	// Name prefixes the Index's errors, such as "recall/sqlite".
	Name string
	// Dialect is the backend's.
	Dialect Dialect
	// Nearest, when set, is what Vector tries first, for a checked query of
	// a non-zero vector. ok false means that it did not search, and the
	// exact search runs.
	Nearest func(ctx context.Context, q *Queries, vq recall.VectorQuery) (ms []recall.Match, ok bool, err error)
}

// Index is a recall.Backend, with every capability, over a sqldb.DB. It
// is safe for concurrent use.
type Index struct {
	q *Queries
	// g closes the database once, and names and classifies the errors.
	g       *sqldb.Guard
	nearest func(ctx context.Context, q *Queries, vq recall.VectorQuery) ([]recall.Match, bool, error)
}

var (
	_ recall.Backend         = (*Index)(nil)
	_ recall.LexicalSearcher = (*Index)(nil)
	_ recall.VectorSearcher  = (*Index)(nil)
	_ recall.EmbeddingStore  = (*Index)(nil)
	_ recall.Scanner         = (*Index)(nil)
)

// New returns an Index over db, whose recall tables are up to date. It
// closes db on Close.
func New(db sqldb.DB, c Config) *Index {
	return &Index{
		q:       &Queries{db: db, d: c.Dialect, sql: textOf(db.Dialect()), reader: sqldb.NewPrepared(db)},
		g:       sqldb.NewGuard(db, c.Name, recall.ErrClosed),
		nearest: c.Nearest,
	}
}

// Close closes the database; later calls fail with recall.ErrClosed.
func (x *Index) Close() error {
	err := x.g.Close()
	x.q.reader.Close()
	return err
}

// delta is a change of a tenant's statistics.
type delta struct{ n, len int64 }

// write runs fn in a write transaction that holds the tenant's lock. On
// PostgreSQL a tenant's writes serialize, so that its statistics stay
// exact; SQLite has one writer. It then applies the change of the tenant's
// statistics fn returns, with the number of documents it touched.
func (x *Index) write(ctx context.Context, op, tenant string, fn func(ctx context.Context, tx sqldb.Tx) (int, delta, error)) (int, error) {
	if err := x.g.Closed(op); err != nil {
		return 0, err
	}
	var n int
	err := x.q.db.Write(ctx, func(ctx context.Context, tx sqldb.Tx) (err error) {
		n, err = x.inTenant(ctx, tx, tenant, fn)
		return err
	})
	if err != nil {
		return 0, x.g.Err(op, err)
	}
	return n, nil
}

// inTenant runs fn in tx, a write transaction, holding the tenant's lock,
// and applies the change of the tenant's statistics it returns.
func (x *Index) inTenant(ctx context.Context, tx sqldb.Tx, tenant string, fn func(ctx context.Context, tx sqldb.Tx) (int, delta, error)) (int, error) {
	if x.q.sql.lock != "" {
		if _, err := tx.Exec(ctx, x.q.sql.lock, tenant); err != nil {
			return 0, err
		}
	}
	n, d, err := fn(ctx, tx)
	if err != nil || d == (delta{}) {
		return n, err
	}
	if _, err := tx.Exec(ctx, x.q.sql.addStats, tenant, d.n, d.len); err != nil || d.n >= 0 {
		return n, err
	}
	// A tenant left empty has no statistics.
	_, err = tx.Exec(ctx, x.q.sql.dropStats, tenant)
	return n, err
}

// Upsert implements recall.Backend.
func (x *Index) Upsert(ctx context.Context, docs ...recall.Doc) error {
	docs, err := recall.CheckDocs(docs)
	if err != nil || len(docs) == 0 {
		return err
	}
	// Analyze outside the write transaction.
	terms := make([][]string, len(docs))
	ids := make([]string, len(docs))
	for i, d := range docs {
		terms[i] = recall.Tokenize(d.Text)
		ids[i] = d.ID
	}
	tenant := docs[0].Tenant
	_, err = x.write(ctx, "upsert", tenant, func(ctx context.Context, tx sqldb.Tx) (int, delta, error) {
		d, err := x.upsert(ctx, tx, docs, ids, terms)
		return 0, d, err
	})
	return err
}

// upsert writes checked documents of one tenant, with their IDs and
// analyzed terms, in tx, and returns the change of the tenant's
// statistics.
func (x *Index) upsert(ctx context.Context, tx sqldb.Tx, docs []recall.Doc, ids []string, terms [][]string) (delta, error) {
	n, length, err := x.q.d.Remove(ctx, tx, docs[0].Tenant, `d.id`+x.q.sql.inList(2), []any{x.q.sql.list(ids)})
	if err != nil {
		return delta{}, err
	}
	d := delta{n: int64(len(docs)) - n, len: -length}
	for _, t := range terms {
		d.len += int64(len(t))
	}
	return d, x.q.d.Insert(ctx, x.q, tx, docs, terms)
}

// Delete implements recall.Backend.
func (x *Index) Delete(ctx context.Context, tenant string, ids ...string) (int, error) {
	if err := recall.CheckIDs(tenant, ids); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return x.write(ctx, "delete", tenant, func(ctx context.Context, tx sqldb.Tx) (int, delta, error) {
		return x.remove(ctx, tx, tenant, `d.id`+x.q.sql.inList(2), x.q.sql.list(ids))
	})
}

// Clear implements recall.Backend.
func (x *Index) Clear(ctx context.Context, tenant string, f recall.Filter) (int, error) {
	if err := recall.CheckTenant(tenant); err != nil {
		return 0, err
	}
	if err := recall.CheckFilter(f); err != nil {
		return 0, err
	}
	cond, args := x.q.Filter(f, 2)
	// Nothing to remove is common: a session is forgotten when it is
	// deleted, then again when a follower of the log reaches its deletion. A
	// read tells, without waiting for a write transaction (on SQLite, the
	// one writer).
	if err := x.g.Closed("clear"); err != nil {
		return 0, err
	}
	rows, err := x.q.reader.Query(ctx, `SELECT 1 FROM recall_docs d WHERE d.tenant = $1`+cond+` LIMIT 1`, append([]any{tenant}, args...)...)
	if err != nil {
		return 0, x.g.Err("clear", err)
	}
	some := rows.Next()
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, x.g.Err("clear", err)
	}
	if !some {
		return 0, nil
	}
	return x.write(ctx, "clear", tenant, func(ctx context.Context, tx sqldb.Tx) (int, delta, error) {
		return x.remove(ctx, tx, tenant, `true`+cond, args...)
	})
}

// remove is the Dialect's Remove as a write's function.
func (x *Index) remove(ctx context.Context, tx sqldb.Tx, tenant, cond string, args ...any) (int, delta, error) {
	n, length, err := x.q.d.Remove(ctx, tx, tenant, cond, args)
	return int(n), delta{-n, -length}, err
}

const docColumns = `id, tenant, text, metadata, time, grp, seq, embedding, emb_model`

// queryDocs runs a query of docColumns' rows. A row that does not decode
// (its metadata not an object of strings, its embedding not a vector) is
// left out and reported to ctx (agentmem.ReportDamaged). One damaged
// document must not fail every read, and so every search, that meets it.
func (x *Index) queryDocs(ctx context.Context, op, query string, args ...any) ([]recall.Doc, error) {
	if err := x.g.Closed(op); err != nil {
		return nil, err
	}
	rows, err := x.q.reader.Query(ctx, query, args...)
	if err != nil {
		return nil, x.g.Err(op, err)
	}
	defer rows.Close()
	dialect := x.q.db.Dialect()
	var out []recall.Doc
	for rows.Next() {
		var (
			d    recall.Doc
			meta []byte
			emb  vecScan
		)
		if err := rows.Scan(&d.ID, &d.Tenant, &d.Text, &meta, dialect.ScanTime(&d.Time), &d.Group, &d.Seq, x.q.sql.vecDest(&emb), &d.EmbeddingModel); err != nil {
			return nil, x.g.Err(op, err)
		}
		var bad error
		if meta != nil {
			if err := json.Unmarshal(meta, &d.Metadata); err != nil {
				bad = fmt.Errorf("its metadata does not decode: %w", err)
			}
		}
		if bad == nil {
			if d.Embedding, err = emb.vector(); err != nil {
				bad = fmt.Errorf("its embedding does not decode: %w", err)
			}
		}
		if bad != nil {
			agentmem.ReportDamaged(ctx, &agentmem.DamagedError{Kind: "document", Tenant: d.Tenant, ID: d.ID, Err: bad})
			continue
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, x.g.Err(op, err)
	}
	return out, nil
}

// Get implements recall.Backend.
func (x *Index) Get(ctx context.Context, tenant string, ids ...string) ([]recall.Doc, error) {
	if err := recall.CheckIDs(tenant, ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	docs, err := x.queryDocs(ctx, "get", `SELECT `+docColumns+` FROM recall_docs WHERE tenant = $1 AND id`+x.q.sql.inList(2), tenant, x.q.sql.list(ids))
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

// Around implements recall.Backend.
func (x *Index) Around(ctx context.Context, tenant, group string, from, to int64) ([]recall.Doc, error) {
	if err := recall.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if group == "" {
		return nil, nil
	}
	return x.queryDocs(ctx, "around", `SELECT `+docColumns+` FROM recall_docs
		WHERE tenant = $1 AND grp = $2 AND grp <> '' AND seq BETWEEN $3 AND $4 ORDER BY seq, id`+x.q.sql.collate, tenant, group, from, to)
}

// Stale implements recall.EmbeddingStore.
func (x *Index) Stale(ctx context.Context, tenant, model, after string, limit int) ([]recall.Doc, error) {
	if err := recall.CheckQuery(tenant, recall.Filter{}, limit); err != nil {
		return nil, err
	}
	return x.queryDocs(ctx, "stale", `SELECT id, tenant, text, metadata, time, grp, seq, `+x.q.sql.noVector+`, emb_model FROM recall_docs
		WHERE tenant = $1 AND emb_model <> $2 AND id`+x.q.sql.collate+` > $3 ORDER BY id`+x.q.sql.collate+` LIMIT $4`, tenant, model, after, limit)
}

// Scan implements recall.Scanner.
func (x *Index) Scan(ctx context.Context, tenant string, f recall.Filter, after string, limit int) ([]recall.Doc, error) {
	if err := recall.CheckQuery(tenant, f, limit); err != nil {
		return nil, err
	}
	cond, args := x.q.Filter(f, 4)
	return x.queryDocs(ctx, "scan", `SELECT `+docColumns+` FROM recall_docs d
		WHERE d.tenant = $1 AND d.id`+x.q.sql.collate+` > $2`+cond+` ORDER BY d.id`+x.q.sql.collate+` LIMIT $3`, append([]any{tenant, after, limit}, args...)...)
}

// SetEmbeddings implements recall.EmbeddingStore.
func (x *Index) SetEmbeddings(ctx context.Context, tenant string, updates []recall.EmbeddingUpdate) (int, error) {
	if err := recall.CheckUpdates(tenant, updates); err != nil {
		return 0, err
	}
	if len(updates) == 0 {
		return 0, nil
	}
	if err := x.g.Closed("set embeddings"); err != nil {
		return 0, err
	}
	var n int
	err := x.q.db.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		n = 0
		for _, u := range updates {
			c, err := tx.Exec(ctx, `UPDATE recall_docs SET embedding = $1, dims = $2, emb_norm = $3, emb_model = $4 WHERE tenant = $5 AND id = $6 AND text = $7`,
				x.q.sql.vector(u.Vector), len(u.Vector), recall.Norm(u.Vector), u.Model, tenant, u.ID, u.Text)
			if err != nil {
				return err
			}
			n += int(c)
		}
		return nil
	})
	if err != nil {
		return 0, x.g.Err("set embeddings", err)
	}
	return n, nil
}

// Vector implements recall.VectorSearcher: Config.Nearest's search when it
// searches, else exact cosine scoring of the tenant's embeddings of the
// query's dimension.
func (x *Index) Vector(ctx context.Context, q recall.VectorQuery) ([]recall.Match, error) {
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
	if err := x.g.Closed("vector"); err != nil {
		return nil, err
	}
	if x.nearest != nil {
		ms, ok, err := x.nearest(ctx, x.q, q)
		if err != nil {
			return nil, x.g.Err("vector", err)
		}
		if ok {
			return ms, nil
		}
	}
	cond, fargs := x.q.Filter(q.Filter, 3)
	rows, err := x.q.reader.Query(ctx, `SELECT d.id, d.grp, d.seq, d.embedding, d.emb_norm FROM recall_docs d
		WHERE d.tenant = $1 AND d.dims = $2 AND d.emb_norm > 0`+cond, append([]any{q.Tenant, len(q.Vector)}, fargs...)...)
	if err != nil {
		return nil, x.g.Err("vector", err)
	}
	top, _, err := x.q.ScoreRows(ctx, q.Tenant, rows, q.Vector, q.Limit)
	if err != nil {
		return nil, x.g.Err("vector", err)
	}
	return top.Sorted(), nil
}

// Lexical implements recall.LexicalSearcher with the Dialect's lexical search.
func (x *Index) Lexical(ctx context.Context, q recall.LexicalQuery) ([]recall.Match, error) {
	if err := recall.CheckQuery(q.Tenant, q.Filter, q.Limit); err != nil {
		return nil, err
	}
	terms := recall.UniqueTerms(q.Terms)
	if len(terms) == 0 {
		return nil, nil
	}
	if err := x.g.Closed("lexical"); err != nil {
		return nil, err
	}
	ms, err := x.q.d.Lexical(ctx, x.q, q, terms)
	if err != nil {
		return nil, x.g.Err("lexical", err)
	}
	return ms, nil
}

// DocFreqs implements recall.LexicalSearcher. It returns the tenant's
// document count kept by every write, and the terms' document frequencies
// as the Dialect counts them (the counts its Lexical uses).
func (x *Index) DocFreqs(ctx context.Context, tenant string, terms []string) (recall.DocStats, error) {
	if err := recall.CheckTenant(tenant); err != nil {
		return recall.DocStats{}, err
	}
	if err := x.g.Closed("docfreqs"); err != nil {
		return recall.DocStats{}, err
	}
	n, _, err := x.q.Stats(ctx, tenant)
	if err != nil {
		return recall.DocStats{}, x.g.Err("docfreqs", err)
	}
	st := recall.DocStats{Docs: n, DF: map[string]int64{}}
	terms = recall.UniqueTerms(terms)
	if len(terms) == 0 || n <= 0 {
		return st, nil
	}
	df, err := x.q.TermDocs(ctx, tenant, terms)
	if err != nil {
		return recall.DocStats{}, x.g.Err("docfreqs", err)
	}
	for t, d := range df {
		if d > 0 {
			st.DF[t] = d
		}
	}
	return st, nil
}

// Tenants implements recall.Backend.
func (x *Index) Tenants(ctx context.Context) ([]string, error) {
	if err := x.g.Closed("tenants"); err != nil {
		return nil, err
	}
	rows, err := x.q.reader.Query(ctx, x.q.sql.tenants)
	if err != nil {
		return nil, x.g.Err("tenants", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, x.g.Err("tenants", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, x.g.Err("tenants", err)
	}
	return out, nil
}
