package sqlindex

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/recall"
)

// Queries is what a Dialect (and a backend's own search, such as
// pgvector's) builds its SQL with. It has the Index's database, its
// reader, the documents' row, filters and scoring, each written once.
type Queries struct {
	db  sqldb.DB
	d   Dialect
	sql *sqlText
	// reader runs the reads, each query prepared once (on SQLite,
	// parsing a query costs as much as running a small one).
	reader *sqldb.Prepared
}

// insertSQL inserts a row of recall_docs; DocArgs are its arguments.
const insertSQL = `INSERT INTO recall_docs (tenant, id, text, metadata, time, grp, seq, terms, len, embedding, dims, emb_norm, emb_model)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

// Reader runs the Index's read queries (prepared once each on SQLite).
func (q *Queries) Reader() sqldb.Querier { return q.reader }

// Write runs fn in a write transaction of the Index's database. It
// takes no lock of its own: fn takes the locks it needs (on PostgreSQL,
// a tenant's writes of its documents hold its row of recall_tenants).
func (q *Queries) Write(ctx context.Context, fn func(ctx context.Context, tx sqldb.Tx) error) error {
	return q.db.Write(ctx, fn)
}

// InsertSQL is the statement that inserts a document's row of
// recall_docs, with DocArgs.
func (q *Queries) InsertSQL() string { return insertSQL }

// DocArgs are InsertSQL's arguments for a document whose terms column is
// terms (in the dialect's form) and whose length is n terms.
func (q *Queries) DocArgs(d recall.Doc, terms any, n int) []any {
	var meta any
	if j := MetadataJSON(d); j != nil {
		meta = *j
	}
	return []any{d.Tenant, d.ID, d.Text, meta, q.db.Dialect().Time(d.Time), d.Group, d.Seq, terms, n,
		q.sql.vector(d.Embedding), len(d.Embedding), recall.Norm(d.Embedding), d.EmbeddingModel}
}

// MetadataJSON is the metadata column of a document: its metadata as a
// JSON object, nil (NULL) when it has none.
func MetadataJSON(d recall.Doc) *string {
	if len(d.Metadata) == 0 {
		return nil
	}
	s := metadataJSON(d.Metadata)
	return &s
}

// Filter returns the SQL condition of a filter on recall_docs d, to
// follow another condition (" AND ..."), with its arguments, numbered
// from next.
func (q *Queries) Filter(f recall.Filter, next int) (string, []any) {
	f = f.Normalize()
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(next+len(args)-1)
	}
	if len(f.Metadata) > 0 {
		conds = append(conds, q.d.MetadataCond(f.Metadata, arg))
	}
	if !f.Since.IsZero() {
		conds = append(conds, `d.time >= `+arg(q.db.Dialect().Time(f.Since)))
	}
	if !f.Until.IsZero() {
		conds = append(conds, `d.time < `+arg(q.db.Dialect().Time(f.Until)))
	}
	if len(f.Spans) > 0 {
		// grp <> '' lets a generic plan use the partial index on
		// (tenant, grp, seq), as Around's query does.
		spans := make([]string, len(f.Spans))
		for i, s := range f.Spans {
			spans[i] = `(d.grp = ` + arg(s.Group) + ` AND d.grp <> '' AND d.seq > ` + arg(s.After)
			if s.Through != 0 {
				through := arg(s.Through)
				spans[i] += ` AND d.seq <= ` + through + ` AND ` + q.d.EntryAtMost(through)
			}
			spans[i] += `)`
		}
		conds = append(conds, `(`+strings.Join(spans, ` OR `)+`)`)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " AND " + strings.Join(conds, " AND "), args
}

// ScoreRows scores rows of (id, grp, seq, embedding, emb_norm) of the
// tenant's documents by cosine similarity to vec, keeping the best limit,
// and returns how many rows there were. A row whose embedding does not
// decode to a vector of vec's dimension is left out and reported to ctx
// (agentmem.ReportDamaged). It closes rows.
func (q *Queries) ScoreRows(ctx context.Context, tenant string, rows sqldb.Rows, vec []float32, limit int) (*recall.TopK, int, error) {
	defer rows.Close()
	qn := recall.Norm(vec)
	top := recall.NewTopK(limit)
	n := 0
	var emb vecScan
	dest := q.sql.vecDest(&emb)
	for rows.Next() {
		var (
			m    recall.Match
			norm float64
		)
		emb = vecScan{}
		if err := rows.Scan(&m.ID, &m.Group, &m.Seq, dest, &norm); err != nil {
			return nil, 0, err
		}
		v, err := emb.vector()
		if err == nil && len(v) != len(vec) {
			err = fmt.Errorf("%d numbers where its dimension says %d", len(v), len(vec))
		}
		if err != nil {
			agentmem.ReportDamaged(ctx, &agentmem.DamagedError{Kind: "document", Tenant: tenant, ID: m.ID, Err: fmt.Errorf("its embedding does not decode: %w", err)})
			continue
		}
		m.Score = recall.Dot(vec, v) / (qn * norm)
		top.Push(m)
		n++
	}
	return top, n, rows.Err()
}

// Stats returns the tenant's number of documents and their total
// length (zero for a tenant without documents).
func (q *Queries) Stats(ctx context.Context, tenant string) (n, total int64, err error) {
	err = q.reader.QueryRow(ctx, q.sql.readStats, tenant).Scan(&n, &total)
	if errors.Is(err, sqldb.ErrNoRows) {
		return 0, 0, nil
	}
	return n, total, err
}

// TermDocs returns how many of the tenant's documents hold each of terms
// (unique, not empty), as the Dialect counts them.
func (q *Queries) TermDocs(ctx context.Context, tenant string, terms []string) (map[string]int64, error) {
	query, args := q.d.DocFreqs(tenant, terms)
	rows, err := q.reader.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	df := make(map[string]int64, len(terms))
	for rows.Next() {
		var (
			t string
			n int64
		)
		if err := rows.Scan(&t, &n); err != nil {
			return nil, err
		}
		df[t] = n
	}
	return df, rows.Err()
}
