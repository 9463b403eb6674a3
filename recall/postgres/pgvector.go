package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/recall/internal/sqlindex"
)

// PGVectorMode says whether a Backend searches embeddings with the
// pgvector extension (see the package documentation).
type PGVectorMode string

const (
	// PGVectorAuto uses pgvector when the database has the extension, or the
	// server offers it and the role may create it. Otherwise vector search
	// is exact, in Go, and Open logs why. The zero PGVectorMode means
	// PGVectorAuto.
	PGVectorAuto PGVectorMode = "auto"
	// PGVectorOff never uses pgvector, even when the database has it.
	PGVectorOff PGVectorMode = "off"
	// PGVectorRequire uses pgvector, and Open fails with an error
	// wrapping ErrPGVectorUnavailable when it cannot.
	PGVectorRequire PGVectorMode = "require"
)

// URL query parameters of the backend's own, taken out of a postgres://
// URL before the rest goes to pgx. pgx would send an unknown parameter to
// the server as a setting, and fail. For example
// "postgres://db/agentmem?pgvector=require&pgvector_hnsw=true".
const (
	// PGVectorParam sets Options.PGVector: auto, off or require.
	PGVectorParam = "pgvector"
	// PGVectorHNSWParam sets Options.PGVectorHNSW: true or false (or any
	// value strconv.ParseBool accepts).
	PGVectorHNSWParam = "pgvector_hnsw"
)

// ErrPGVectorUnavailable is wrapped by the error of Open with
// PGVectorRequire when the pgvector extension cannot be used.
var ErrPGVectorUnavailable = errors.New("the pgvector extension is not available")

// The vector search paths, as Backend.VectorSearch reports them.
const (
	// VectorSearchExact: every embedding of the query's dimension is
	// read and scored in Go.
	VectorSearchExact = "exact"
	// VectorSearchPGVector: pgvector ranks the embeddings in SQL, by an
	// exact (sequential) scan, and the best are scored in Go.
	VectorSearchPGVector = "pgvector"
	// VectorSearchHNSW: as VectorSearchPGVector, with an HNSW index per
	// dimension that the planner may use: approximate.
	VectorSearchHNSW = "pgvector-hnsw"
)

const (
	// pgvectorMaxDims is the largest dimension of pgvector's vector type.
	pgvectorMaxDims = 16000
	// hnswMaxDims is the largest dimension an HNSW index of vector takes.
	hnswMaxDims = 2000
)

// parseMode parses a PGVectorMode; "" is PGVectorAuto.
func parseMode(s string) (PGVectorMode, error) {
	switch m := PGVectorMode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", PGVectorAuto:
		return PGVectorAuto, nil
	case PGVectorOff, PGVectorRequire:
		return m, nil
	}
	return "", &agentmem.InvalidError{Field: PGVectorParam, Reason: fmt.Sprintf("%q is not a pgvector mode (auto, off or require)", s)}
}

// splitURL returns u as a connection string for Open, without the
// parameters of the backend (schema, pgvector, pgvector_hnsw), and the
// Options they set. A parameter given twice, or with an empty or unknown
// value, is an *agentmem.InvalidError.
func splitURL(u *url.URL) (string, Options, error) {
	v := *u
	q := v.Query()
	var opts Options
	one := func(name string) (string, bool, error) {
		vals, ok := q[name]
		q.Del(name)
		switch {
		case !ok:
			return "", false, nil
		case len(vals) > 1:
			return "", false, &agentmem.InvalidError{Field: name, Reason: fmt.Sprintf("given %d times", len(vals))}
		case strings.TrimSpace(vals[0]) == "":
			return "", false, &agentmem.InvalidError{Field: name, Reason: "has no value"}
		}
		return vals[0], true, nil
	}
	s, ok, err := one(PGVectorParam)
	if err != nil {
		return "", Options{}, err
	}
	if ok {
		if opts.PGVector, err = parseMode(s); err != nil {
			return "", Options{}, err
		}
	}
	s, ok, err = one(PGVectorHNSWParam)
	if err != nil {
		return "", Options{}, err
	}
	if ok {
		if opts.PGVectorHNSW, err = strconv.ParseBool(s); err != nil {
			return "", Options{}, &agentmem.InvalidError{Field: PGVectorHNSWParam, Reason: fmt.Sprintf("%q is not true or false", s)}
		}
	}
	v.RawQuery = q.Encode()
	conn, schema := pgdb.SplitSchema(&v)
	opts.Schema = schema
	return conn, opts, nil
}

// extension is the pgvector extension of the database.
type extension struct {
	// schema is the extension's schema as a quoted identifier. The SQL names
	// its type, operator and operator class with it, since the connections'
	// search_path may not hold it.
	schema  string
	version string
}

// atLeast reports whether the extension's version is major.minor or
// later; an unparsable version is not.
func (e *extension) atLeast(major, minor int) bool {
	parts := strings.SplitN(e.version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// prober finds the pgvector extension at open: an extension to use, or
// nil and the reason there is none. Its error is a failure to ask the
// database, which fails Open. Tests substitute one.
type prober func(ctx context.Context, pool *pgxpool.Pool) (ext *extension, reason string, err error)

// createExtensionSQL creates pgvector in schema public when the database
// lacks it. It avoids the recall schema, which an operator may drop with
// CASCADE, taking the extension away from every other schema.
const createExtensionSQL = `CREATE EXTENSION IF NOT EXISTS vector SCHEMA public`

// lockKey is an advisory lock key of the backend's, for a purpose.
func lockKey(parts ...string) int64 {
	h := fnv.New64a()
	h.Write([]byte("agentmem recall/postgres"))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return int64(h.Sum64())
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// findExtension returns the database's pgvector extension, or nil.
func findExtension(ctx context.Context, q queryRower) (*extension, error) {
	var schema, version string
	err := q.QueryRow(ctx, `SELECT n.nspname, e.extversion FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'vector'`).Scan(&schema, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &extension{schema: pgx.Identifier{schema}.Sanitize(), version: version}, nil
}

// probePGVector is the prober of Open. It returns the extension when the
// database has it. Else, when the server offers it
// (pg_available_extensions), it tries to create it, in a transaction of
// its own. A refusal (the role may not) means no pgvector rather than a
// failure.
func probePGVector(ctx context.Context, pool *pgxpool.Pool) (*extension, string, error) {
	ext, err := findExtension(ctx, pool)
	if err != nil || ext != nil {
		return ext, "", err
	}
	var available bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).Scan(&available); err != nil {
		return nil, "", err
	}
	if !available {
		return nil, `pgvector is not installed on this PostgreSQL server (pg_available_extensions has no "vector")`, nil
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Serialize creators: two CREATE EXTENSION IF NOT EXISTS at once
		// can fail on a unique index.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("create extension")); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, createExtensionSQL); err != nil {
			return err
		}
		ext, err = findExtension(ctx, tx)
		return err
	})
	if err != nil {
		reason, err := refusal("CREATE EXTENSION vector", err)
		return nil, reason, err
	}
	if ext == nil {
		return nil, "CREATE EXTENSION vector succeeded but pg_extension has no vector", nil
	}
	return ext, "", nil
}

// refusal sorts a failure of a statement that sets pgvector up. The server
// refusing it (an error of PostgreSQL's, such as a permission error) means
// that pgvector cannot be used, and refusal returns the reason. Anything
// else (the connection, the context) is an error.
func refusal(what string, err error) (reason string, _ error) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return "", err
	}
	reason = fmt.Sprintf("pgvector: %s failed: %s (SQLSTATE %s)", what, pgErr.Message, pgErr.Code)
	if pgErr.Code == "42501" { // insufficient_privilege
		reason += "; a superuser (or the table's owner, for ALTER TABLE) can run it"
	}
	return reason, nil
}

// setUpPGVector chooses the vector search path at open. It probes for
// pgvector (unless mode is off) and adds the vec column when missing. It
// sets p.ext (and p.hnsw) when pgvector is used.
func (p *Backend) setUpPGVector(ctx context.Context, mode PGVectorMode, hnsw bool, probe prober) error {
	if mode == PGVectorOff {
		p.log.Debug("recall/postgres: vector search is exact, in Go (pgvector=off)")
		return nil
	}
	ext, reason, err := probe(ctx, p.pool)
	if err != nil {
		return fmt.Errorf("recall/postgres: open: looking for pgvector: %w", err)
	}
	if ext != nil {
		if reason, err = p.ensureVecColumn(ctx, ext); err != nil {
			return fmt.Errorf("recall/postgres: open: %w", err)
		}
		if reason != "" {
			ext = nil
		}
	}
	if ext == nil {
		if mode == PGVectorRequire {
			return fmt.Errorf("recall/postgres: open with pgvector=require: %w: %s", ErrPGVectorUnavailable, reason)
		}
		p.log.Info("recall/postgres: pgvector is not available; vector search is exact, in Go", "reason", reason)
		return nil
	}
	p.ext.Store(ext)
	if hnsw {
		// Without iterative index scans (pgvector 0.8.0), an HNSW scan
		// filtered by tenant or metadata returns at most ef_search rows before
		// filtering. Often none of them is the tenant's.
		if ext.atLeast(0, 8) {
			p.hnsw = newHNSWIndexes()
		} else {
			p.log.Warn("recall/postgres: pgvector_hnsw needs pgvector 0.8.0 or later (iterative index scans); searching without an index", "version", ext.version)
		}
	}
	p.log.Info("recall/postgres: vector search with pgvector", "version", ext.version, "path", p.VectorSearch())
	return nil
}

// vecColumnSQL adds recall_docs' pgvector column, vec: a copy of each
// embedding as the extension's vector type (ext, a quoted schema). The
// real[] column embedding stays the source of truth. vec is a stored
// generated column, so PostgreSQL computes it on every write, whichever
// agentmem writes (one with pgvector=off too). Losing it (DROP EXTENSION
// vector CASCADE drops it) loses nothing. It is NULL without an embedding,
// for a zero vector (no cosine) and past pgvector's 16,000 dimensions.
//
// The column is not one of the recall migrations: it exists only while the
// extension does, and Open adds it again whenever it finds it missing. IF
// NOT EXISTS: ALTER TABLE locks the table before it looks, so of two
// servers adding it at once the second finds it there.
func vecColumnSQL(ext string) string {
	return `ALTER TABLE recall_docs ADD COLUMN IF NOT EXISTS vec ` + ext + `.vector
		GENERATED ALWAYS AS (
			CASE WHEN dims BETWEEN 1 AND ` + strconv.Itoa(pgvectorMaxDims) + ` AND emb_norm > 0 THEN embedding::` + ext + `.vector END
		) STORED`
}

// ensureVecColumn adds the vec column when recall_docs lacks it. Adding
// it rewrites the table, under an exclusive lock: the first open with
// pgvector of a large index takes a while. A refusal of PostgreSQL's (a
// role that does not own the table) means no pgvector, with the reason;
// other failures are errors.
func (p *Backend) ensureVecColumn(ctx context.Context, ext *extension) (reason string, _ error) {
	var ok bool
	if err := p.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute
		WHERE attrelid = 'recall_docs'::regclass AND attname = 'vec' AND NOT attisdropped)`).Scan(&ok); err != nil {
		return "", err
	}
	if ok {
		return "", nil
	}
	p.log.Info("recall/postgres: adding the pgvector column vec to recall_docs (this rewrites the table)")
	if _, err := p.pool.Exec(ctx, vecColumnSQL(ext.schema)); err != nil {
		return refusal("adding the column vec to recall_docs", err)
	}
	return "", nil
}

// VectorSearch reports how the backend searches embeddings:
// VectorSearchExact, VectorSearchPGVector or VectorSearchHNSW. It is
// chosen at open, and becomes VectorSearchExact when pgvector goes away
// while the backend runs (see the package documentation).
func (p *Backend) VectorSearch() string {
	switch {
	case p.ext.Load() == nil:
		return VectorSearchExact
	case p.hnsw != nil:
		return VectorSearchHNSW
	default:
		return VectorSearchPGVector
	}
}

// pgvectorGone reports whether err says that the pgvector objects a search
// names are gone. That happens when the extension or the column is dropped
// while the backend runs.
func pgvectorGone(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "42703", // undefined_column: vec
		"42704", // undefined_object: the type vector
		"42883", // undefined_function: the operator <=>
		"3F000": // invalid_schema_name: the extension's schema
		return true
	case "XX000": // a plan cached before the drop
		return strings.Contains(pgErr.Message, "cache lookup failed")
	}
	return false
}

// candidates is how many rows pgvector ranks for a search of limit: some
// more than asked. pgvector's float32 arithmetic may order near ties
// differently, and the exact scores computed in Go then pick the same best
// as the exact path.
func candidates(limit int) int { return limit + max(16, limit/4) }

// vectorSQL is the pgvector search. It selects the tenant's documents of
// dimension dims that pass the filter (cond, from filterSQL numbered from
// $4). It ranks them by cosine distance to $2 (a real[]) and keeps the $3
// nearest, with their stored embedding and norm for exact scoring. ext is
// the extension's schema, a quoted identifier. dims is in the SQL rather
// than a parameter so that, with hnsw, the planner can match the partial
// expression index of hnswIndexSQL: same predicate, same expression.
func vectorSQL(ext string, dims int, hnsw bool, cond string) string {
	n := strconv.Itoa(dims)
	var order string
	if hnsw {
		// Only the distance: an index scan provides that order, not a
		// tie-break.
		order = `(d.vec::` + ext + `.vector(` + n + `)) OPERATOR(` + ext + `.<=>) ($2::real[]::` + ext + `.vector(` + n + `))`
	} else {
		order = `d.vec OPERATOR(` + ext + `.<=>) $2::real[]::` + ext + `.vector, d.id COLLATE "C"`
	}
	return `SELECT d.id, d.grp, d.seq, d.embedding, d.emb_norm FROM recall_docs d
		WHERE d.tenant = $1 AND d.dims = ` + n + ` AND d.emb_norm > 0 AND d.vec IS NOT NULL` + cond + `
		ORDER BY ` + order + ` LIMIT $3`
}

// nearest is the backend's sqlindex.Config.Nearest. It is the search with
// pgvector when the backend uses it and the dimension is pgvector's. Else
// ok is false, and the exact search runs.
func (p *Backend) nearest(ctx context.Context, x *sqlindex.Queries, q recall.VectorQuery) (ms []recall.Match, ok bool, err error) {
	ext := p.ext.Load()
	if ext == nil || len(q.Vector) > pgvectorMaxDims {
		return nil, false, nil
	}
	ms, err = p.vectorPG(ctx, x, ext, q)
	switch {
	case err == nil:
		return ms, true, nil
	case !pgvectorGone(err):
		return nil, false, err
	}
	// The extension or the column was dropped: search exactly from now
	// on (Open adds the column again when it has pgvector).
	if p.ext.CompareAndSwap(ext, nil) {
		p.log.Warn("recall/postgres: pgvector is gone (was the extension dropped?); vector search is exact, in Go, from now on", "err", err)
	}
	return nil, false, nil
}

// vectorPG is Vector with pgvector. The candidates pgvector ranks nearest
// are scored in Go exactly as the exact path scores them, from the real[]
// embedding and its stored norm. So the scores are the same to the bit and
// ties go by ID.
func (p *Backend) vectorPG(ctx context.Context, x *sqlindex.Queries, ext *extension, q recall.VectorQuery) ([]recall.Match, error) {
	dims := len(q.Vector)
	cond, fargs := x.Filter(q.Filter, 4)
	n := candidates(q.Limit)
	args := append([]any{q.Tenant, q.Vector, n}, fargs...)
	if p.hnsw != nil && dims <= hnswMaxDims && p.hnsw.ready(p, ext, dims) {
		var (
			top *recall.TopK
			got int
		)
		err := p.db.Read(ctx, func(tx sqldb.Tx) error {
			if _, err := tx.Exec(ctx, hnswSettingsSQL, strconv.Itoa(efSearch(n))); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, vectorSQL(ext.schema, dims, true, cond), args...)
			if err != nil {
				return err
			}
			top, got, err = x.ScoreRows(ctx, q.Tenant, rows, q.Vector, q.Limit)
			return err
		})
		if err != nil {
			return nil, err
		}
		if got >= q.Limit {
			return top.Sorted(), nil
		}
		// Fewer than asked: the index scan gave up (hnsw.max_scan_tuples)
		// or the tenant has fewer; the exact scan below settles it.
	}
	rows, err := x.Reader().Query(ctx, vectorSQL(ext.schema, dims, false, cond), args...)
	if err != nil {
		return nil, err
	}
	top, _, err := x.ScoreRows(ctx, q.Tenant, rows, q.Vector, q.Limit)
	if err != nil {
		return nil, err
	}
	return top.Sorted(), nil
}

// --- HNSW ------------------------------------------------------------------

// hnswSettingsSQL sets, for the transaction, the HNSW scan's candidate
// list ($1) and iterative scans in strict distance order (pgvector 0.8.0).
// So a scan whose rows the tenant and the filter reject goes on until it
// has enough.
const hnswSettingsSQL = `SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'strict_order', true)`

// efSearch is hnsw.ef_search for a search of n candidates: pgvector's
// default 40 at least, its maximum 1000 at most.
func efSearch(n int) int { return min(max(n, 40), 1000) }

// hnswIndexName is the name of the HNSW index of a dimension.
func hnswIndexName(dims int) string { return "recall_docs_vec_hnsw_" + strconv.Itoa(dims) }

// hnswIndexSQL creates the HNSW index of a dimension, without blocking
// writes. HNSW needs a fixed dimension, so the index is a partial index on
// the expression vec::vector(N). Its WHERE dims = N makes every indexed
// row cast to vector(N). The index goes in recall_docs' schema.
func hnswIndexSQL(ext string, dims int) string {
	n := strconv.Itoa(dims)
	return `CREATE INDEX CONCURRENTLY IF NOT EXISTS ` + hnswIndexName(dims) + ` ON recall_docs USING hnsw ((vec::` + ext + `.vector(` + n + `)) ` +
		ext + `.vector_cosine_ops) WHERE dims = ` + n
}

type hnswState int

const (
	hnswBuilding hnswState = iota
	hnswReady
	hnswFailed
)

// hnswIndexes tracks the HNSW indexes of a backend. The first search of
// a dimension starts building its index in the background; searches go
// without it (an exact scan) until it is ready. Close cancels a build.
type hnswIndexes struct {
	ctx    context.Context // of the builds; cancelled by close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the builds running

	mu    sync.Mutex // guards state, and ctx's cancellation against wg.Add
	state map[int]hnswState
}

func newHNSWIndexes() *hnswIndexes {
	ctx, cancel := context.WithCancel(context.Background())
	return &hnswIndexes{ctx: ctx, cancel: cancel, state: map[int]hnswState{}}
}

// ready reports whether the index of dims is built, and starts building
// it if no build was started yet. A build that fails is not tried again
// by this backend (reopen it to try again): its searches go without the
// index.
func (h *hnswIndexes) ready(p *Backend, ext *extension, dims int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, ok := h.state[dims]
	if ok || h.ctx.Err() != nil {
		return st == hnswReady
	}
	h.state[dims] = hnswBuilding
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		st := hnswFailed
		switch err := p.buildHNSW(h.ctx, ext, dims); {
		case err == nil:
			st = hnswReady
			p.log.Info("recall/postgres: HNSW index ready", "index", hnswIndexName(dims))
		case h.ctx.Err() == nil: // not closed
			p.log.Warn("recall/postgres: building an HNSW index failed; searching without it until the backend is reopened",
				"index", hnswIndexName(dims), "err", err)
		}
		h.mu.Lock()
		h.state[dims] = st
		h.mu.Unlock()
	}()
	return false
}

// close cancels the builds and waits for them to end.
func (h *hnswIndexes) close() {
	h.mu.Lock()
	h.cancel()
	h.mu.Unlock()
	h.wg.Wait()
}

// buildHNSW builds the HNSW index of dims with CREATE INDEX CONCURRENTLY,
// so that writes go on meanwhile. That cannot run in a transaction. So the
// builds of a schema are serialized by a session advisory lock on a
// connection of their own; closing it releases the lock. A second server
// waits for the first and then finds the index there. An invalid index of
// that name is what a build cancelled or failed half-way leaves, since no
// other build runs while the lock is held. It is dropped and built again.
func (p *Backend) buildHNSW(ctx context.Context, ext *extension, dims int) error {
	conn, err := pgx.ConnectConfig(ctx, p.pool.Config().ConnConfig)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey("hnsw", p.schema)); err != nil {
		return err
	}
	name := hnswIndexName(dims)
	var valid bool
	err = conn.QueryRow(ctx, `SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass($1)`, name).Scan(&valid)
	switch {
	case err == nil && valid:
		return nil
	case err == nil:
		p.log.Warn("recall/postgres: dropping an invalid HNSW index left by an interrupted build", "index", name)
		if _, err := conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+name); err != nil {
			return err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	p.log.Info("recall/postgres: building an HNSW index in the background", "index", name)
	if _, err := conn.Exec(ctx, hnswIndexSQL(ext.schema, dims)); err != nil {
		return err
	}
	// Statistics, so that the planner picks the index. For a table filled
	// just before (autovacuum analyzes it only later), it estimates one row
	// and sorts the tenant's rows instead.
	_, err = conn.Exec(ctx, `ANALYZE recall_docs`)
	return err
}
