package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/internal/rowcodec"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/pgdb"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the facts tables' schema migrations, component "facts"
// of the agentmem_migrations table. On Citus the tables are distributed
// by tenant, co-located with the session store's (the audit trail's key
// gains the tenant, which Citus needs in every key).
var migrations = migrate.MustLoad("facts", migrationFiles, "migrations").WithCitus(migrate.Citus{
	Distributed: []string{"facts_users", "facts", "facts_audit"},
	Prepare: `ALTER TABLE facts_users ALTER COLUMN tenant TYPE text COLLATE "C";
		ALTER TABLE facts ALTER COLUMN tenant TYPE text COLLATE "C";
		ALTER TABLE facts_audit ALTER COLUMN tenant TYPE text COLLATE "C";
		ALTER TABLE facts_audit DROP CONSTRAINT facts_audit_pkey;
		ALTER TABLE facts_audit ADD PRIMARY KEY (tenant, seq);`,
})

// SchemaVersion is the newest schema version this package knows.
func SchemaVersion() int { return migrations.Version() }

func init() {
	open := func(ctx context.Context, u *url.URL) (facts.Store, error) {
		conn, schema := pgdb.SplitSchema(u)
		return Open(ctx, conn, Options{Schema: schema})
	}
	facts.Register("postgres", open)
	facts.Register("postgresql", open)
}

// Options configures a Store. The zero value is a good default.
type Options struct {
	// Schema is the PostgreSQL schema of the facts tables, created when
	// missing and set as every connection's search_path; empty means the
	// database's default search_path.
	Schema string
	// MaxConns caps the connection pool; zero means pgxpool's default.
	MaxConns int32
}

// maxAttempts bounds the runs of an Update that PostgreSQL aborts as a
// deadlock or serialization failure.
const maxAttempts = 3

// Store is a facts.Store over a PostgreSQL database, which any number of
// servers can share. It is safe for concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	closed atomic.Bool
}

var _ facts.Store = (*Store)(nil)

// Open connects to the database connString names and brings the facts
// tables up to date.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	pool, err := pgdb.Open(ctx, connString, opts.Schema, opts.MaxConns)
	if err != nil {
		return nil, err
	}
	if err := migrate.Postgres(ctx, pool, opts.Schema, migrations); err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{pool: pool}, nil
}

// Close closes the pool; later calls fail with facts.ErrClosed.
func (s *Store) Close() error {
	if !s.closed.Swap(true) {
		s.pool.Close()
	}
	return nil
}

func (s *Store) err(op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("facts/postgres: %s: %w", op, facts.ErrClosed)
	}
	return fmt.Errorf("facts/postgres: %s: %w", op, pgdb.Classify(err))
}

// columns are the facts columns, in the order scanFact reads them.
const columns = `tenant, id, user_id, text, confidence, created_at, reinforced_at, reinforcements,
	source_session, source_step, source_agent, superseded_by, superseded_at, metadata, embedding`

// scanFact reads a row of columns.
func scanFact(r pgx.Row) (facts.Fact, error) {
	var (
		f          facts.Fact
		superseded *time.Time
		md, vec    []byte
	)
	if err := r.Scan(&f.Tenant, &f.ID, &f.UserID, &f.Text, &f.Confidence, &f.CreatedAt, &f.ReinforcedAt, &f.Reinforcements,
		&f.Source.SessionID, &f.Source.StepSeq, &f.Source.Agent, &f.SupersededBy, &superseded, &md, &vec); err != nil {
		return f, err
	}
	f.CreatedAt, f.ReinforcedAt = f.CreatedAt.UTC(), f.ReinforcedAt.UTC()
	if superseded != nil {
		f.SupersededAt = superseded.UTC()
	}
	var err error
	if f.Metadata, err = rowcodec.DecodeMetadata(md); err != nil {
		return f, err
	}
	f.Embedding, err = rowcodec.DecodeVector(vec)
	return f, err
}

// querier is what both a pool and a transaction offer.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// userFacts reads every fact of a user.
func userFacts(ctx context.Context, q querier, tenant, userID string) ([]facts.Fact, error) {
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM facts WHERE tenant = $1 AND user_id = $2 ORDER BY created_at, id`, tenant, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []facts.Fact
	for rows.Next() {
		f, err := scanFact(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// Update implements facts.Store. The user's row in facts_users is locked
// (SELECT ... FOR UPDATE, after creating it if needed) before the user's
// facts are read, so the updates of one user are serialized across every
// connection and server, while different users proceed in parallel.
func (s *Store) Update(ctx context.Context, tenant, userID string, fn func([]facts.Fact) (facts.Changes, error)) error {
	if err := facts.ValidateUser(tenant, userID); err != nil {
		return err
	}
	if s.closed.Load() {
		return s.err("update", facts.ErrClosed)
	}
	for attempt := 1; ; attempt++ {
		err := s.update(ctx, tenant, userID, fn)
		if err == nil || !pgdb.Retryable(err) || attempt == maxAttempts {
			return err
		}
	}
}

// errFn marks an error returned by the caller's fn or by CheckChanges,
// which is returned unwrapped.
type errFn struct{ err error }

func (e errFn) Error() string { return e.err.Error() }

func (s *Store) update(ctx context.Context, tenant, userID string, fn func([]facts.Fact) (facts.Changes, error)) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO facts_users (tenant, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, tenant, userID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM facts_users WHERE tenant = $1 AND user_id = $2 FOR UPDATE`, tenant, userID); err != nil {
			return err
		}
		current, err := userFacts(ctx, tx, tenant, userID)
		if err != nil {
			return err
		}
		c, err := fn(current)
		if err != nil {
			return errFn{err}
		}
		taken := func(id string) (bool, error) {
			var ok bool
			err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM facts WHERE tenant = $1 AND id = $2)`, tenant, id).Scan(&ok)
			return ok, err
		}
		if err := facts.CheckChanges(tenant, userID, current, c, taken); err != nil {
			var ie *agentmem.InvalidError
			if errors.As(err, &ie) {
				return errFn{err}
			}
			return err
		}
		return apply(ctx, tx, tenant, c)
	})
	var fe errFn
	if errors.As(err, &fe) {
		return fe.err
	}
	if err != nil {
		return s.err("update", err)
	}
	return nil
}

// apply writes checked changes in tx, in one round trip.
func apply(ctx context.Context, tx pgx.Tx, tenant string, c facts.Changes) error {
	var b pgx.Batch
	for _, f := range c.Put {
		md, err := rowcodec.Metadata(f.Metadata)
		if err != nil {
			return err
		}
		var superseded *time.Time
		if !f.SupersededAt.IsZero() {
			superseded = &f.SupersededAt
		}
		var mdText *string
		if md != nil {
			s := string(md)
			mdText = &s
		}
		b.Queue(`INSERT INTO facts (`+columns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb, $15)
			ON CONFLICT (tenant, id) DO UPDATE SET user_id = excluded.user_id, text = excluded.text,
				confidence = excluded.confidence, created_at = excluded.created_at, reinforced_at = excluded.reinforced_at,
				reinforcements = excluded.reinforcements, source_session = excluded.source_session,
				source_step = excluded.source_step, source_agent = excluded.source_agent,
				superseded_by = excluded.superseded_by, superseded_at = excluded.superseded_at,
				metadata = excluded.metadata, embedding = excluded.embedding`,
			f.Tenant, f.ID, f.UserID, f.Text, f.Confidence, f.CreatedAt, f.ReinforcedAt, f.Reinforcements,
			f.Source.SessionID, f.Source.StepSeq, f.Source.Agent, f.SupersededBy, superseded, mdText, rowcodec.Vector(f.Embedding))
	}
	for _, id := range c.Delete {
		b.Queue(`DELETE FROM facts WHERE tenant = $1 AND id = $2`, tenant, id)
	}
	for _, e := range c.Audit {
		b.Queue(`INSERT INTO facts_audit (tenant, user_id, fact_id, action, by_whom, reason, successor, digest, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			e.Tenant, e.UserID, e.FactID, string(e.Action), e.By, e.Reason, e.Successor, e.Digest, e.At)
	}
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, &b).Close()
}

// Facts implements facts.Store.
func (s *Store) Facts(ctx context.Context, tenant, userID string) ([]facts.Fact, error) {
	if s.closed.Load() {
		return nil, s.err("facts", facts.ErrClosed)
	}
	fs, err := userFacts(ctx, s.pool, tenant, userID)
	if err != nil {
		return nil, s.err("facts", err)
	}
	return fs, nil
}

// Get implements facts.Store.
func (s *Store) Get(ctx context.Context, tenant, id string) (facts.Fact, error) {
	if s.closed.Load() {
		return facts.Fact{}, s.err("get", facts.ErrClosed)
	}
	f, err := scanFact(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM facts WHERE tenant = $1 AND id = $2`, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return facts.Fact{}, fmt.Errorf("facts/postgres: fact %.80q: %w", id, agentmem.ErrNotFound)
	}
	if err != nil {
		return facts.Fact{}, s.err("get", err)
	}
	return f, nil
}

// Audit implements facts.Store.
func (s *Store) Audit(ctx context.Context, tenant, userID string) ([]facts.AuditEntry, error) {
	if s.closed.Load() {
		return nil, s.err("audit", facts.ErrClosed)
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, fact_id, action, by_whom, reason, successor, digest, at
		FROM facts_audit WHERE tenant = $1 AND user_id = $2 ORDER BY seq`, tenant, userID)
	if err != nil {
		return nil, s.err("audit", err)
	}
	defer rows.Close()
	var out []facts.AuditEntry
	for rows.Next() {
		e := facts.AuditEntry{Tenant: tenant, UserID: userID}
		var action string
		if err := rows.Scan(&e.Seq, &e.FactID, &action, &e.By, &e.Reason, &e.Successor, &e.Digest, &e.At); err != nil {
			return nil, s.err("audit", err)
		}
		e.Action, e.At = facts.Action(action), e.At.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.err("audit", err)
	}
	return out, nil
}
