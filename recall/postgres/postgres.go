package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/recall/internal/sqlindex"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the recall index's schema migrations, component "recall"
// of the agentmem_migrations table. On Citus both tables are distributed
// by tenant, co-located with the session store's: a search, and the
// writes of one tenant, run on one worker.
var migrations = migrate.MustLoad("recall", migrationFiles, "migrations").WithCitus(migrate.Citus{
	Distributed: []string{"recall_tenants", "recall_docs", "recall_df"},
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
	// PGVectorHNSW, with pgvector 0.8.0 or later, builds an HNSW index for
	// each embedding dimension (up to 2,000). It builds it in the background
	// when that dimension is first searched. Vector search is approximate
	// once the index is ready (see the package documentation). Without
	// pgvector it does nothing. The URL parameter pgvector_hnsw sets it.
	PGVectorHNSW bool
	// Logger receives what the backend finds out about pgvector: at open,
	// when it goes away, and HNSW index builds. It also receives the
	// failures to keep a searched term's document frequency (see dfRows).
	// Nil means slog.Default().
	Logger *slog.Logger

	// dfMin, for tests, replaces DefaultDocFreqRows; negative: no rows.
	dfMin int64
}

// BM25 parameters, the same as the in-memory backend's defaults.
const (
	k1 = recall.DefaultK1
	b  = recall.DefaultB
)

// Backend is a recall.Backend over a PostgreSQL database, which any
// number of servers can share. It is safe for concurrent use.
type Backend struct {
	*sqlindex.Index
	pool   *pgxpool.Pool
	db     *pgdb.SQLDB
	schema string
	log    *slog.Logger
	// ext is the pgvector extension vector search uses; nil for the
	// exact path. Set at open; cleared when pgvector goes away.
	ext atomic.Pointer[extension]
	// hnsw tracks the HNSW indexes when they are used, else it is nil.
	hnsw *hnswIndexes
}

var (
	_ recall.Backend         = (*Backend)(nil)
	_ recall.LexicalSearcher = (*Backend)(nil)
	_ recall.VectorSearcher  = (*Backend)(nil)
	_ recall.EmbeddingStore  = (*Backend)(nil)
)

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
	db, err := pgdb.OpenSQLDB(ctx, connString, opts.Schema, opts.MaxConns, migrations)
	if err != nil {
		return nil, err
	}
	p := &Backend{pool: db.Pool(), db: db, schema: opts.Schema, log: opts.Logger}
	if p.log == nil {
		p.log = slog.Default()
	}
	if err := p.setUpPGVector(ctx, mode, opts.PGVectorHNSW, probe); err != nil {
		db.Close()
		return nil, err
	}
	dfMin := int64(DefaultDocFreqRows)
	switch {
	case opts.dfMin > 0:
		dfMin = opts.dfMin
	case opts.dfMin < 0:
		dfMin = 0
	}
	p.Index = sqlindex.New(p.db, sqlindex.Config{Name: "recall/postgres", Dialect: tsv{df: newDFRows(dfMin, p.log)}, Nearest: p.nearest})
	return p, nil
}

// Close closes the pool, after ending the HNSW builds; later calls fail
// with recall.ErrClosed.
func (p *Backend) Close() error {
	if p.hnsw != nil {
		p.hnsw.close()
	}
	return p.Index.Close()
}

// tsv is the PostgreSQL dialect of the index. The documents' terms are in
// the tsvector column terms (GIN-indexed). BM25 is computed in SQL, with
// the document frequencies of the terms searched most kept in recall_df
// (dfRows). The metadata filter is a jsonb containment (GIN-indexed).
type tsv struct {
	df *dfRows
}

// quoteLexeme quotes a lexeme for tsvector and tsquery input: verbatim,
// with quotes and backslashes doubled.
func quoteLexeme(s string) string { return string(appendLexeme(nil, s)) }

// tsvector is the tsvector of analyzed terms: each lexeme with positions
// 1..tf (at most 256), so cardinality(positions) is tf. The lexemes are in
// the order PostgreSQL keeps them (bytewise, as Go compares strings). It
// goes to the server in tsvector's binary form, which the server reads
// much faster than the text literal.
func tsvector(terms []string) pgtype.TSVector {
	sorted := slices.Clone(terms)
	slices.Sort(sorted)
	lexemes := make([]pgtype.TSVectorLexeme, 0, len(sorted))
	for i := 0; i < len(sorted); {
		t := sorted[i]
		tf := 1
		for i+tf < len(sorted) && sorted[i+tf] == t {
			tf++
		}
		i += tf
		// The positions are read only: every lexeme shares one array.
		lexemes = append(lexemes, pgtype.TSVectorLexeme{Word: t, Positions: tfPositions[:min(tf, len(tfPositions))]})
	}
	return pgtype.TSVector{Lexemes: lexemes, Valid: true}
}

// tfPositions are the positions 1..256 (tsvector's most per lexeme).
var tfPositions = func() []pgtype.TSVectorPosition {
	p := make([]pgtype.TSVectorPosition, 256)
	for i := range p {
		p[i].Position = uint16(i + 1)
	}
	return p
}()

// appendLexeme appends a lexeme quoted as quoteLexeme quotes it.
func appendLexeme(b []byte, s string) []byte {
	b = append(b, '\'')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\'' || c == '\\' {
			b = append(b, c)
		}
		b = append(b, s[i])
	}
	return append(b, '\'')
}

// tsquery is the tsquery literal that matches any of the terms.
func tsquery(terms []string) string { return strings.Join(termQueries(terms), " | ") }

// insertSQL inserts the rows of recall_docs of one tenant ($1) in one
// statement, from arrays of their columns. A statement for each row would
// cost the server, and this process, more per document.
const insertSQL = `INSERT INTO recall_docs (tenant, id, text, metadata, time, grp, seq, terms, len, embedding, dims, emb_norm, emb_model)
	SELECT $1, u.id, u.text, u.metadata::jsonb, u.time, u.grp, u.seq, u.terms, u.len, u.embedding::real[], u.dims, u.emb_norm, u.emb_model
	FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::bigint[], $8::tsvector[], $9::integer[], $10::text[], $11::integer[], $12::float8[], $13::text[])
		AS u (id, text, metadata, time, grp, seq, terms, len, embedding, dims, emb_norm, emb_model)`

// Insert implements sqlindex.Dialect: the rows in one statement, then
// the rows of recall_df of the terms they hold (dfRows).
func (t tsv) Insert(ctx context.Context, _ *sqlindex.Queries, tx sqldb.Tx, docs []recall.Doc, terms [][]string) error {
	n := len(docs)
	var (
		ids, texts, grps, models = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		tsvs                     = make([]pgtype.TSVector, n)
		metas, embs              = make([]*string, n), make([]*string, n)
		times                    = make([]*time.Time, n)
		seqs                     = make([]int64, n)
		lens, dims               = make([]int32, n), make([]int32, n)
		norms                    = make([]float64, n)
	)
	for i, d := range docs {
		ids[i], texts[i], grps[i], seqs[i], models[i] = d.ID, d.Text, d.Group, d.Seq, d.EmbeddingModel
		metas[i] = sqlindex.MetadataJSON(d)
		if !d.Time.IsZero() {
			t := d.Time.UTC().Truncate(time.Microsecond)
			times[i] = &t
		}
		tsvs[i], lens[i] = tsvector(terms[i]), int32(len(terms[i]))
		if len(d.Embedding) > 0 {
			e := realArray(d.Embedding)
			embs[i], dims[i], norms[i] = &e, int32(len(d.Embedding)), recall.Norm(d.Embedding)
		}
	}
	if _, err := tx.Exec(ctx, insertSQL, docs[0].Tenant, ids, texts, metas, times, grps, seqs, tsvs, lens, embs, dims, norms, models); err != nil {
		return err
	}
	return t.df.added(ctx, tx, docs[0].Tenant, tsvs)
}

// realArray is the real[] literal of v: each float32 in the shortest form
// that reads back as the same value.
func realArray(v []float32) string {
	b := make([]byte, 0, 2+len(v)*12)
	b = append(b, '{')
	for i, f := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
	}
	return string(append(b, '}'))
}

// Remove implements sqlindex.Dialect, with the rows of recall_df of the
// terms the documents held (removeSQL).
func (tsv) Remove(ctx context.Context, tx sqldb.Tx, tenant, cond string, args []any) (n, length int64, err error) {
	err = tx.QueryRow(ctx, removeSQL(cond), append([]any{tenant}, args...)...).Scan(&n, &length)
	return n, length, err
}

// MetadataCond implements sqlindex.Dialect.
func (tsv) MetadataCond(meta map[string]string, arg func(any) string) string {
	j, _ := json.Marshal(meta)
	return `d.metadata @> ` + arg(string(j)) + `::jsonb`
}

// EntryAtMost implements sqlindex.Dialect.
func (tsv) EntryAtMost(through string) string {
	e := `(d.metadata->>'` + recall.MetaEntry + `')`
	return `(CASE WHEN ` + e + ` ~ '^[0-9]{1,18}$' THEN ` + e + `::bigint ELSE d.seq END) <= ` + through
}

// Lexical implements sqlindex.Dialect. The tsvector's GIN index finds the
// documents holding a query term. BM25 is computed in SQL exactly as the
// in-memory backend computes it: k1 = 1.2, b = 0.75 and
// idf = ln(1 + (N - df + 0.5) / (df + 0.5)). N, df and the average length
// are counted over the tenant's documents. The term frequency is each
// lexeme's position count (capped at 256).
//
// A search (scoped or not) also returns the terms it counted in at least
// dfRows.min documents. It gives them rows of recall_df before it returns
// (dfRows.add), so that the next searches read their counts.
func (t tsv) Lexical(ctx context.Context, x *sqlindex.Queries, q recall.LexicalQuery, terms []string) ([]recall.Match, error) {
	query, args := lexicalSQL(x, q, terms, t.df.min)
	rows, err := x.Reader().Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		out     []recall.Match
		counted []string // terms to keep the document frequency of
	)
	for rows.Next() {
		var (
			m  recall.Match
			id *string // NULL on the rows of counted terms
			// seq is NULL on those rows
			seq *int64
		)
		if err := rows.Scan(&id, &m.Group, &seq, &m.Score); err != nil {
			return nil, err
		}
		if id == nil {
			counted = append(counted, m.Group)
			continue
		}
		m.ID, m.Seq = *id, *seq
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if len(counted) > 0 {
		t.df.add(ctx, x, q.Tenant, counted, termQueries(counted))
	}
	return out, nil
}

// lexicalSQL is Lexical's query and its arguments: BM25 with the in-memory
// backend's candidate gating (recall.GateTerms), in one statement.
//
//   - df: each query term's number of the tenant's documents, from its
//     row of recall_df or else counted through the GIN index by the
//     term's own tsquery (docFreqSQL), in a materialized CTE so that the
//     count runs once, not once per joined row.
//   - gate: in a tenant of recall.GateMinDocs documents or more, the
//     rarest terms, as many as fit together in recall.GateBudget
//     documents and at least the rarest (ties in the query's order);
//     below, every term a document holds.
//   - candidates: the documents that hold a gate term and pass the
//     filter; when there are none (a session's scope holds none of the
//     rarer terms), those that hold any query term and pass it.
//   - m: the query's lexemes of each candidate (queryLexemes) with their
//     term frequencies, every query term scoring, the commoner ones too.
//
// So a search reads the postings of its rarer terms and the documents in
// its scope, however large the tenant and however common its other terms.
//
// Each document's terms are summed in one order (the lexemes'). So
// documents alike score alike to the last bit, and ties go by ID, as in
// the in-memory backend.
//
// After the matches, ordered, come rows (NULL, term, NULL, count) for
// Lexical to give rows of recall_df. They are the terms without such a row
// counted in at least dfMin documents (0: none).
func lexicalSQL(x *sqlindex.Queries, q recall.LexicalQuery, terms []string, dfMin int64) (string, []any) {
	bm25 := `sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * d.tf * ` + ftoa(k1+1) + ` / (d.tf + ` + ftoa(k1) + ` * (1 - ` + ftoa(b) + ` + ` + ftoa(b) + ` * d.len / st.avg))`
	cond, fargs := x.Filter(q.Filter, 6)
	minArg := "$" + strconv.Itoa(6+len(fargs))
	// cands selects the candidates. Without a filter, they are the documents
	// that hold a gate term, which the GIN index finds; when the gate has
	// terms, some document holds one. With a filter, they are first the
	// documents in scope that hold a query term. The plan finds them as it
	// found them when that was the only condition, since the gate's tsquery,
	// made in the statement, is a value the planner cannot estimate. Of
	// those, the candidates are the ones that hold a gate term, unless none
	// does.
	gate := `(SELECT string_agg(q, ' | ')::tsquery FROM gate)`
	// ($2 is named once in every form, for its type.)
	cands := `SELECT d.id, d.grp, d.seq, d.len, d.terms FROM recall_docs d WHERE d.tenant = $1 AND d.terms @@ ` + gate + ` AND $2::tsquery IS NOT NULL`
	if cond != "" {
		cands = `SELECT d.id, d.grp, d.seq, d.len, d.terms FROM recall_docs d
			WHERE d.tenant = $1 AND d.terms @@ $2::tsquery` + cond + `
			AND (d.terms @@ ` + gate + ` OR NOT EXISTS (SELECT 1 FROM recall_docs d WHERE d.tenant = $1 AND d.terms @@ ` + gate + cond + `))`
	}
	return `WITH st AS (
			SELECT n::float8 AS n, greatest(total_len::float8 / greatest(n, 1), 1) AS avg FROM recall_tenants WHERE tenant = $1
		), df AS MATERIALIZED (` + docFreqSQL("$1", "$3", "$5") + `
		), gate AS MATERIALIZED (
			SELECT g.q FROM (
				SELECT q, sum(df) OVER w AS run, row_number() OVER w AS rn FROM df WHERE df > 0 WINDOW w AS (ORDER BY df, i)
			) g CROSS JOIN st
			WHERE st.n < ` + strconv.Itoa(recall.GateMinDocs) + ` OR g.rn = 1 OR g.run <= ` + strconv.Itoa(recall.GateBudget) + `
		), m AS (
			SELECT d.id, d.grp, d.seq, d.len, u.lexeme, cardinality(u.positions) AS tf
			FROM (` + cands + `) d, unnest(` + queryLexemes + `) u
		), top AS (
			SELECT d.id, d.grp, d.seq, ` + bm25 + ` ORDER BY d.lexeme) AS s
			FROM m d JOIN df USING (lexeme) CROSS JOIN st
			GROUP BY d.id, d.grp, d.seq ORDER BY s DESC, d.id COLLATE "C" LIMIT $4
		)
		SELECT id, grp, seq, s FROM (
			SELECT 0 AS k, id, grp, seq, s FROM top
			UNION ALL SELECT 1, NULL, lexeme, NULL, df FROM df WHERE counted AND ` + minArg + `::bigint > 0 AND df >= ` + minArg + `::bigint
		) r ORDER BY k, s DESC, id COLLATE "C"`, append(append([]any{q.Tenant, tsquery(terms), terms, q.Limit, termQueries(terms)}, fargs...), dfMin)
}

// docFreqSQL selects (lexeme, q, i, df, counted) for each of the terms.
// terms is the text array placeholder, and i a term's place in it. q is
// the term's own tsquery, from queries, the text array termQueries makes.
// df is the number of the tenant's documents that hold the term, from its
// row of recall_df (dfRows), or else counted through the GIN index
// (counted true).
func docFreqSQL(tenant, terms, queries string) string {
	return `SELECT u.lexeme, u.q, u.i, coalesce(f.df, (SELECT count(*) FROM recall_docs c WHERE c.tenant = ` + tenant + ` AND c.terms @@ u.q::tsquery))::float8 AS df,
				f.df IS NULL AS counted
			FROM unnest(` + terms + `::text[], ` + queries + `::text[]) WITH ORDINALITY AS u (lexeme, q, i)
			LEFT JOIN recall_df f ON f.tenant = ` + tenant + ` AND f.lexeme = u.lexeme`
}

// termQueries is the tsquery literal of each term alone.
func termQueries(terms []string) []string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = quoteLexeme(t)
	}
	return q
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// DocFreqs implements sqlindex.Dialect: each term's documents counted
// through the tsvector's GIN index (the count Lexical's BM25 uses).
func (tsv) DocFreqs(tenant string, terms []string) (string, []any) {
	return `SELECT u.lexeme, count(*) FROM recall_docs d, unnest(` + queryLexemes + `) u
		WHERE d.tenant = $1 AND d.terms @@ $2::tsquery GROUP BY u.lexeme`, []any{tenant, tsquery(terms), terms}
}

// queryLexemes is the SQL of a document's terms (d.terms) cut to the
// query's lexemes (the text array $3), with their positions. setweight
// marks them (weight A; every stored lexeme has the default, D), and
// ts_filter keeps the marked. A document's term frequencies are read from
// that vector of a lexeme or two. Unnesting the whole vector would build a
// row of two arrays for each lexeme and cost most of the search.
const queryLexemes = `ts_filter(setweight(d.terms, 'A', $3::text[]), '{a}')`
