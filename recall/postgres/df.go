package postgres

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/recall/internal/sqlindex"
)

// DefaultDocFreqRows is the document count from which a search keeps a
// term's document frequency in recall_df (see dfRows). Below it, counting
// the term's documents through the GIN index at each search costs less
// than keeping the count up to date.
const DefaultDocFreqRows = 256

// maxTrackedTenants bounds the tenants whose tracked terms a backend keeps
// in memory. Past it, one is forgotten, and read again when its documents
// are next written.
const maxTrackedTenants = 1024

// dfRows keeps the document frequencies of the terms searches ask for most
// in recall_df, exactly (migration 0004).
//
// A search's BM25 needs each query term's number of the tenant's
// documents. It reads the term's row of recall_df or, for a term without
// one, counts the documents through the GIN index. Counting grows with the
// tenant: a common word, in most of its documents, costs a read of each.
// So a search that counted a term in at least min documents adds its row.
// In a transaction that holds the tenant's lock, it counts again, inserts,
// and sets the tenant's df_version to a new random value.
//
// Every write of the tenant's documents holds the same lock. An insert
// reads df_version and, when it has changed, the tenant's terms with rows.
// It adds to the rows of the terms its documents hold. A removal
// subtracts, in its DELETE's statement. So a row, once there, is the exact
// count, and a term without one is counted: the scores are the same either
// way.
//
// The terms with rows of each tenant written recently are kept in memory
// with their df_version. So an insert reads one number, and writes only
// the rows of the terms it holds that have rows.
type dfRows struct {
	min int64 // a term counted in at least min documents gets a row; 0: never
	log *slog.Logger

	mu      sync.Mutex
	tenants map[string]*trackedTerms
}

// trackedTerms are a tenant's terms with rows of recall_df, as of its
// df_version. It is not changed once made.
type trackedTerms struct {
	version int64
	lexemes map[string]struct{}
}

func newDFRows(min int64, log *slog.Logger) *dfRows {
	return &dfRows{min: min, log: log, tenants: map[string]*trackedTerms{}}
}

// tracked returns the tenant's terms with rows, nil for none. It runs in a
// write transaction that holds the tenant's lock, so its row of
// recall_tenants exists.
func (r *dfRows) tracked(ctx context.Context, tx sqldb.Tx, tenant string) (map[string]struct{}, error) {
	var version int64
	if err := tx.QueryRow(ctx, `SELECT df_version FROM recall_tenants WHERE tenant = $1`, tenant).Scan(&version); err != nil {
		return nil, err
	}
	if version == 0 {
		return nil, nil
	}
	r.mu.Lock()
	t := r.tenants[tenant]
	r.mu.Unlock()
	if t != nil && t.version == version {
		return t.lexemes, nil
	}
	rows, err := tx.Query(ctx, `SELECT lexeme FROM recall_df WHERE tenant = $1`, tenant)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	t = &trackedTerms{version: version, lexemes: map[string]struct{}{}}
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return nil, err
		}
		t.lexemes[l] = struct{}{}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if _, ok := r.tenants[tenant]; !ok && len(r.tenants) >= maxTrackedTenants {
		for k := range r.tenants { // any one
			delete(r.tenants, k)
			break
		}
	}
	r.tenants[tenant] = t
	r.mu.Unlock()
	return t.lexemes, nil
}

// added adds to the rows of recall_df the documents just inserted, whose
// tsvectors are tsvs, in the insert's transaction.
func (r *dfRows) added(ctx context.Context, tx sqldb.Tx, tenant string, tsvs []pgtype.TSVector) error {
	tracked, err := r.tracked(ctx, tx, tenant)
	if err != nil || len(tracked) == 0 {
		return err
	}
	counts := map[string]int64{}
	for _, v := range tsvs {
		for _, l := range v.Lexemes { // each once a document
			if _, ok := tracked[l.Word]; ok {
				counts[l.Word]++
			}
		}
	}
	if len(counts) == 0 {
		return nil
	}
	lexemes, ns := make([]string, 0, len(counts)), make([]int64, 0, len(counts))
	for l, n := range counts {
		lexemes, ns = append(lexemes, l), append(ns, n)
	}
	_, err = tx.Exec(ctx, `UPDATE recall_df f SET df = f.df + u.n
		FROM unnest($2::text[], $3::bigint[]) AS u (lexeme, n)
		WHERE f.tenant = $1 AND f.lexeme = u.lexeme`, tenant, lexemes, ns)
	return err
}

// removeSQL deletes the tenant's ($1) documents that cond selects, and
// subtracts them from the rows of recall_df of the terms they hold, in one
// statement. It selects their count and total length.
func removeSQL(cond string) string {
	return `WITH gone AS (DELETE FROM recall_docs d WHERE d.tenant = $1 AND ` + cond + ` RETURNING d.len, d.terms),
		held AS (SELECT u.lexeme, count(*) AS n FROM gone, unnest(gone.terms) AS u
			WHERE EXISTS (SELECT 1 FROM recall_df WHERE tenant = $1) GROUP BY u.lexeme),
		counted AS (UPDATE recall_df f SET df = f.df - held.n FROM held WHERE f.tenant = $1 AND f.lexeme = held.lexeme)
		SELECT count(*), coalesce(sum(len), 0) FROM gone`
}

// add gives rows of recall_df to the tenant's terms that a search counted
// in at least r.min documents (lexemes, with their tsquery literals
// queries). It counts them again, in a transaction that holds the tenant's
// lock. It does not wait for the lock: while a write of the tenant's
// documents holds it, the terms stay without rows, and a later search adds
// them. Waiting would queue searches behind the index's writes, and writes
// behind the count. A failure too leaves the terms to be counted by
// searches. It is logged, not returned: the search has its answer.
func (r *dfRows) add(ctx context.Context, x *sqlindex.Queries, tenant string, lexemes, queries []string) {
	err := x.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		rows, err := tx.Query(ctx, `SELECT 1 FROM recall_tenants WHERE tenant = $1 FOR UPDATE SKIP LOCKED`, tenant)
		if err != nil {
			return err
		}
		locked := rows.Next()
		rows.Close()
		if err := rows.Err(); err != nil || !locked {
			return err // locked by a writer, or no documents
		}
		n, err := tx.Exec(ctx, `INSERT INTO recall_df (tenant, lexeme, df)
			SELECT $1, u.lexeme, (SELECT count(*) FROM recall_docs c WHERE c.tenant = $1 AND c.terms @@ u.q::tsquery)
			FROM unnest($2::text[], $3::text[]) AS u (lexeme, q)
			ON CONFLICT (tenant, lexeme) DO NOTHING`, tenant, lexemes, queries)
		if err != nil || n == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE recall_tenants SET df_version = $2 WHERE tenant = $1`, tenant, newDFVersion())
		return err
	})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		r.log.Warn("recall/postgres: keeping the document frequencies of searched terms failed; searches count them",
			"tenant", tenant, "terms", len(lexemes), "err", err)
	}
}

// newDFVersion returns a new df_version. It is random, so that a tenant
// whose statistics were dropped and made again (df_version back at 0, then
// a new value) does not meet a version a writer remembers. It is never 0,
// which says that the tenant has no rows.
func newDFVersion() int64 {
	for {
		if v := rand.Int64(); v != 0 {
			return v
		}
	}
}
