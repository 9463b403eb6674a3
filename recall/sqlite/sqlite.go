package sqlite

import (
	"context"
	"embed"
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/recall/internal/sqlindex"
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

// Options configures a Backend, as for every component in a SQLite file.
// BusyTimeout is how long a write waits for another process that holds the
// database's write lock (zero means 5s). ReadConns is the number of
// connections that serve reads (zero means 4). The zero value is a good
// default.
type Options = sqlitedb.Options

// Backend is a recall.Backend in a SQLite database file, which it can
// share with the session store (each keeps its own tables). It is safe for
// concurrent use, and by several processes that open one file. Concurrent
// writes commit together (sqlitedb.Group). A server indexes every appended
// step, and one commit per step would bound indexing, and so appending, to
// one fsync each.
type Backend struct {
	*sqlindex.Index
}

var (
	_ recall.Backend         = (*Backend)(nil)
	_ recall.LexicalSearcher = (*Backend)(nil)
	_ recall.VectorSearcher  = (*Backend)(nil)
	_ recall.EmbeddingStore  = (*Backend)(nil)
)

// Open opens (creating it if needed) the SQLite database at path, or
// sqlitedb.MemoryPath, and brings the recall tables up to date.
func Open(ctx context.Context, path string, opts Options) (*Backend, error) {
	db, err := sqlitedb.OpenSQLDB(ctx, path, opts, migrations)
	if err != nil {
		return nil, err
	}
	return &Backend{sqlindex.New(db, sqlindex.Config{Name: "recall/sqlite", Dialect: fts{}})}, nil
}

// fts is the SQLite dialect of the index. The documents' terms are in the
// FTS5 table recall_fts (its rowid the document's). recall_fts keeps no
// positions (detail = none, migration 0004): every query of it matches
// single terms, and BM25 is computed from recall_docs' terms. The document
// frequency of each term but the identifiers (see identifier) is in
// recall_df.
type fts struct{}

// identifier reports whether a term looks like an identifier, a hash, a
// timestamp or a long number. Such a term has only ASCII digits and
// letters (and letters outside ASCII), with a digit. It has eight bytes or
// more, or five or more of which more than half are digits
// ("f9a6dabda26c", "10436", "2024112415"). recall_df keeps no row for such
// a term: its document frequency is counted in the FTS index when a search
// asks for it.
//
// Nearly every term that occurs in a single document is one of these,
// since tool output is full of IDs, hashes and sizes. A turn holds a dozen
// or more. One row of recall_df each, inserted at random places of its
// B-tree, would make the document frequencies most of the cost of
// indexing. Their postings are short, so counting them is cheap. The rule
// is the schema's: migration 0002 removed their rows, and a change of it
// needs a migration too.
func identifier(term string) bool {
	digits := 0
	for i := 0; i < len(term); i++ {
		switch c := term[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c < 0x80 && (c < 'a' || c > 'z'):
			return false // not a term: no document holds it
		}
	}
	return digits > 0 && (len(term) >= 8 || len(term) >= 5 && 2*digits > len(term))
}

// jsonList is a list as a query argument, for json_each.
func jsonList[T any](v []T) string {
	j, _ := json.Marshal(v)
	return string(j)
}

// Insert implements sqlindex.Dialect. It runs a statement for each
// document's row, then one for the terms of them all in FTS5, which reads
// the rows just inserted. Their rowids are the ones above the largest
// before the batch, since SQLite has one writer and a new row's rowid is
// the largest plus one. A statement for each document's terms would cost
// far more.
func (fts) Insert(ctx context.Context, x *sqlindex.Queries, tx sqldb.Tx, docs []recall.Doc, terms [][]string) error {
	var before int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(rowid), 0) FROM recall_docs`).Scan(&before); err != nil {
		return err
	}
	df := newDFDelta()
	for i, d := range docs {
		if _, err := tx.Exec(ctx, x.InsertSQL(), x.DocArgs(d, strings.Join(terms[i], " "), len(terms[i]))...); err != nil {
			return err
		}
		df.count(terms[i], 1)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO recall_fts (rowid, terms) SELECT rowid, terms FROM recall_docs WHERE rowid > $1`, before); err != nil {
		return err
	}
	return applyDF(ctx, tx, docs[0].Tenant, df)
}

// Remove implements sqlindex.Dialect.
func (fts) Remove(ctx context.Context, tx sqldb.Tx, tenant, cond string, args []any) (n, length int64, err error) {
	rows, err := tx.Query(ctx, `SELECT d.rowid, d.terms FROM recall_docs d WHERE d.tenant = $1 AND `+cond, append([]any{tenant}, args...)...)
	if err != nil {
		return 0, 0, err
	}
	var gone []int64
	df := newDFDelta()
	for rows.Next() {
		var (
			row   int64
			terms string
		)
		if err := rows.Scan(&row, &terms); err != nil {
			rows.Close()
			return 0, 0, err
		}
		gone = append(gone, row)
		t := strings.Fields(terms)
		length += int64(len(t))
		df.count(t, -1)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(gone) == 0 {
		return 0, 0, err
	}
	j := jsonList(gone)
	if _, err := tx.Exec(ctx, `DELETE FROM recall_fts WHERE rowid IN (SELECT value FROM json_each($1))`, j); err != nil {
		return 0, 0, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM recall_docs WHERE rowid IN (SELECT value FROM json_each($1))`, j); err != nil {
		return 0, 0, err
	}
	return int64(len(gone)), length, applyDF(ctx, tx, tenant, df)
}

// count counts a document's distinct terms, but the identifiers, in
// (sign 1) or out (sign -1) of the document frequencies.
func (df *dfDelta) count(terms []string, sign int64) {
	df.docs++
	for _, t := range terms {
		c := df.m[t]
		if c.doc == df.docs || c.doc < 0 {
			continue // seen in this document, or an identifier
		}
		if c.doc == 0 && identifier(t) {
			df.m[t] = termCount{doc: -1}
			continue
		}
		df.m[t] = termCount{n: c.n + sign, doc: df.docs}
	}
}

// dfDelta is a change of a tenant's document frequencies, counted
// document by document (count) with one map lookup a term.
type dfDelta struct {
	m    map[string]termCount
	docs int
}

func newDFDelta() *dfDelta { return &dfDelta{m: map[string]termCount{}} }

// termCount is a term's change of document frequency, and the number of
// the last document counted that held it (-1 for an identifier).
type termCount struct {
	n   int64
	doc int
}

// applyDF writes a change of the tenant's document frequencies.
func applyDF(ctx context.Context, tx sqldb.Tx, tenant string, df *dfDelta) error {
	// The document frequencies change in one statement each way, not one per
	// term. A turn has about a hundred distinct terms, and a statement per
	// term would make the statistics most of an upsert's cost.
	terms := make([]string, 0, len(df.m))
	anyNegative := false
	size := 1
	for t, c := range df.m {
		if c.doc > 0 && c.n != 0 {
			terms = append(terms, t)
			anyNegative = anyNegative || c.n < 0
			size += len(t) + 24 // quotes, colon, comma and a number of up to 20 bytes
		}
	}
	if len(terms) == 0 {
		return nil
	}
	// The object {"term":change,...}, its terms in order, as encoding/json
	// writes a map, without a map or reflection.
	slices.Sort(terms)
	j := make([]byte, 0, size)
	j = append(j, '{')
	for i, t := range terms {
		if i > 0 {
			j = append(j, ',')
		}
		j = sqlindex.AppendJSONString(j, t)
		j = append(j, ':')
		j = strconv.AppendInt(j, df.m[t].n, 10)
	}
	j = append(j, '}')
	changes := string(j)
	// "WHERE true" keeps SQLite from reading ON CONFLICT as a join
	// constraint of the SELECT.
	if _, err := tx.Exec(ctx, `INSERT INTO recall_df (tenant, term, df) SELECT $1, key, value FROM json_each($2) WHERE true
		ON CONFLICT (tenant, term) DO UPDATE SET df = df + excluded.df`, tenant, changes); err != nil {
		return err
	}
	if anyNegative {
		if _, err := tx.Exec(ctx, `DELETE FROM recall_df WHERE tenant = $1 AND df <= 0
			AND term IN (SELECT key FROM json_each($2) WHERE value < 0)`, tenant, changes); err != nil {
			return err
		}
	}
	return nil
}

// MetadataCond implements sqlindex.Dialect: each of meta's pairs is one
// of the document's metadata column. The pairs are not indexed, since no
// query starts from them: the filter reads the column of each candidate
// the rest of the query found.
//
// A pair is first looked for as text. The column is always written by
// sqlindex.MetadataJSON, so a pair it holds is there as MetadataJSON
// writes it, and a candidate without that text is out without parsing its
// JSON. The JSON functions then decide: a key by its path, or among all
// the pairs (json_each) when a path cannot quote it, for a double quote
// ends the path's label and a backslash starts an escape in it. Metadata
// that is not JSON (a damaged row) has no pairs, for the JSON functions
// would fail the whole query on it.
func (fts) MetadataCond(meta map[string]string, arg func(any) string) string {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	conds := make([]string, len(keys))
	for i, k := range keys {
		v := meta[k]
		pair := sqlindex.AppendJSONString(append(sqlindex.AppendJSONString(nil, k), ':'), v)
		var cond string
		if strings.ContainsAny(k, `"\`) {
			cond = `EXISTS (SELECT 1 FROM json_each(d.metadata) m WHERE m.key = ` + arg(k) + ` AND m.value = ` + arg(v) + `)`
		} else {
			cond = `json_extract(d.metadata, ` + arg(`$."`+k+`"`) + `) = ` + arg(v)
		}
		conds[i] = `(instr(d.metadata, ` + arg(string(pair)) + `) > 0 AND CASE WHEN json_valid(d.metadata) THEN ` + cond + ` END)`
	}
	return strings.Join(conds, " AND ")
}

// EntryAtMost implements sqlindex.Dialect. Metadata that is not JSON (a
// damaged row) counts as none, for json_extract would fail the whole
// query on it.
func (fts) EntryAtMost(through string) string {
	const e = `(CASE WHEN json_valid(d.metadata) THEN json_extract(d.metadata, '$.` + recall.MetaEntry + `') END)`
	return `(CASE WHEN typeof(` + e + `) = 'text' AND length(` + e + `) BETWEEN 1 AND 18 AND ` + e + ` NOT GLOB '*[^0-9]*' THEN CAST(` + e + ` AS INTEGER) ELSE d.seq END) <= ` + through
}

// phrases is an FTS5 OR of terms, each a quoted phrase.
func phrases(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(q, " OR ")
}

// DocFreqs implements sqlindex.Dialect: the document frequencies every
// write keeps, and those of identifiers counted in the FTS index.
func (fts) DocFreqs(tenant string, terms []string) (string, []any) {
	var words, ids []string
	for _, t := range terms {
		if identifier(t) {
			ids = append(ids, t)
		} else {
			words = append(words, t)
		}
	}
	const kept = `SELECT term, df FROM recall_df WHERE tenant = $1 AND term IN (SELECT value FROM json_each($2))`
	if len(ids) == 0 {
		return kept, []any{tenant, jsonList(words)}
	}
	// An identifier holds no quote or separator, so it is a phrase of one
	// term as it is.
	return kept + ` UNION ALL SELECT t.value, (SELECT count(*) FROM recall_fts f JOIN recall_docs d ON d.rowid = f.rowid
		WHERE recall_fts MATCH '"' || t.value || '"' AND d.tenant = $1) FROM json_each($3) t`, []any{tenant, jsonList(words), jsonList(ids)}
}

// Lexical implements sqlindex.Dialect. FTS5 finds the documents that hold
// a query term. BM25 is computed here exactly as the in-memory backend
// computes it: Lucene's idf, k1 = 1.2, b = 0.75, statistics of the tenant
// alone, candidate gating (see recall.GateShare). It uses the statistics
// every write keeps and the candidates' stored terms. FTS5's own bm25() is
// not used: it counts each query term's documents by walking the term's
// whole posting list at every search. That cost grows with the tenant.
func (fts) Lexical(ctx context.Context, x *sqlindex.Queries, q recall.LexicalQuery, terms []string) ([]recall.Match, error) {
	docs, total, err := x.Stats(ctx, q.Tenant)
	if err != nil || docs == 0 {
		return nil, err
	}
	n := float64(docs)
	avg := 1.0
	if n > 0 && total > 0 {
		avg = float64(total) / n
	}
	counts, err := x.TermDocs(ctx, q.Tenant, terms)
	if err != nil {
		return nil, err
	}
	df := func(t string) float64 { return float64(counts[t]) }
	idf := map[string]float64{}
	for _, t := range terms {
		if d := df(t); d > 0 {
			idf[t] = math.Log(1 + (n-d+0.5)/(d+0.5))
		}
	}
	if len(idf) == 0 {
		return nil, nil
	}
	gate := recall.GateTerms(terms, df, n)
	// A document's score sums its terms' shares in this order, the gate
	// terms then the others, as the in-memory backend sums them. Floating
	// point addition is not associative. Summing in a map's order would make
	// near-equal scores, and so the order of ties, change from run to run.
	order := slices.Clone(gate)
	for _, t := range terms {
		if idf[t] > 0 && !slices.Contains(gate, t) {
			order = append(order, t)
		}
	}
	top := recall.NewTopK(q.Limit)
	found, err := score(ctx, x, q, gate, order, idf, avg, top)
	if err == nil && found == 0 && len(gate) < len(idf) {
		var all []string
		for _, t := range terms {
			if idf[t] > 0 {
				all = append(all, t)
			}
		}
		_, err = score(ctx, x, q, all, order, idf, avg, top)
	}
	if err != nil {
		return nil, err
	}
	return top.Sorted(), nil
}

// score offers to top the tenant's documents that hold a gate term and
// pass the filter, scored on every term of idf. It returns how many it
// found. It reads at most max(recall.GateBudget, q.Limit) of them, the
// newest. So when even the rarest query term is that common, the search
// stays bounded and favours recent documents.
func score(ctx context.Context, x *sqlindex.Queries, q recall.LexicalQuery, gate, order []string, idf map[string]float64, avg float64, top *recall.TopK) (int, error) {
	if len(gate) == 0 {
		return 0, nil
	}
	const k1, bb = recall.DefaultK1, recall.DefaultB
	cond, fargs := x.Filter(q.Filter, 4)
	rows, err := x.Reader().Query(ctx, `SELECT d.id, d.grp, d.seq, d.len, d.terms FROM recall_fts f JOIN recall_docs d ON d.rowid = f.rowid
		WHERE recall_fts MATCH $1 AND d.tenant = $2`+cond+` ORDER BY f.rowid DESC LIMIT $3`, append([]any{phrases(gate), q.Tenant, max(recall.GateBudget, q.Limit)}, fargs...)...)
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
