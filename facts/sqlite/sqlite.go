package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/internal/rowcodec"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the facts tables' schema migrations, component "facts"
// of the agentmem_migrations table.
var migrations = migrate.MustLoad("facts", migrationFiles, "migrations")

// SchemaVersion is the newest schema version this package knows.
func SchemaVersion() int { return migrations.Version() }

func init() {
	facts.Register(sqlitedb.Scheme, func(ctx context.Context, u *url.URL) (facts.Store, error) {
		path, opts, err := sqlitedb.ParseURL(u)
		if err != nil {
			return nil, err
		}
		return Open(ctx, path, opts)
	})
}

// Options configures a Store, as for every component in a SQLite file:
// BusyTimeout is how long a write waits for another process that holds
// the database's write lock (zero means 5s), ReadConns the number of
// connections that serve reads (zero means 4). The zero value is a good
// default.
type Options = sqlitedb.Options

// Store is a facts.Store in a SQLite database file, which it can share
// with the session store and the recall index (each keeps its own
// tables). It is safe for concurrent use, and by several processes that
// open one file: every Update is one write transaction begun with BEGIN
// IMMEDIATE, so the database's single writer serializes the updates of a
// user (and of every user) across processes.
type Store struct {
	db     *sqlitedb.DB
	closed atomic.Bool
}

var _ facts.Store = (*Store)(nil)

// Open opens (creating it if needed) the SQLite database at path, or
// sqlitedb.MemoryPath, and brings the facts tables up to date.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	db, err := sqlitedb.OpenMigrated(ctx, path, opts, migrations)
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close closes the database; later calls fail with facts.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.db.Close()
}

// err wraps a database error for op, as facts.ErrClosed after Close.
func (s *Store) err(op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("facts/sqlite: %s: %w", op, facts.ErrClosed)
	}
	return fmt.Errorf("facts/sqlite: %s: %w", op, sqlitedb.Classify(err))
}

// columns are the facts columns, in the order scanFact reads them.
const columns = `tenant, id, user_id, text, confidence, created_at, reinforced_at, reinforcements,
	source_session, source_step, source_agent, superseded_by, superseded_at, metadata, embedding`

// micros encodes a time; the zero time is NULL.
func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// fromMicros decodes a time.
func fromMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMicro(v.Int64).UTC()
}

type scanner interface{ Scan(dest ...any) error }

// scanFact reads a row of columns.
func scanFact(r scanner) (facts.Fact, error) {
	var (
		f                   facts.Fact
		created, reinforced sql.NullInt64
		superseded          sql.NullInt64
		md, vec             []byte
	)
	if err := r.Scan(&f.Tenant, &f.ID, &f.UserID, &f.Text, &f.Confidence, &created, &reinforced, &f.Reinforcements,
		&f.Source.SessionID, &f.Source.StepSeq, &f.Source.Agent, &f.SupersededBy, &superseded, &md, &vec); err != nil {
		return f, err
	}
	f.CreatedAt, f.ReinforcedAt, f.SupersededAt = fromMicros(created), fromMicros(reinforced), fromMicros(superseded)
	var err error
	if f.Metadata, err = rowcodec.DecodeMetadata(md); err != nil {
		return f, err
	}
	f.Embedding, err = rowcodec.DecodeVector(vec)
	return f, err
}

// querier is what both *sql.DB and *sql.Tx offer.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// userFacts reads every fact of a user.
func userFacts(ctx context.Context, q querier, tenant, userID string) ([]facts.Fact, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+columns+` FROM facts WHERE tenant = ? AND user_id = ? ORDER BY created_at, id`, tenant, userID)
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

// Update implements facts.Store.
func (s *Store) Update(ctx context.Context, tenant, userID string, fn func([]facts.Fact) (facts.Changes, error)) error {
	if err := facts.ValidateUser(tenant, userID); err != nil {
		return err
	}
	if s.closed.Load() {
		return s.err("update", facts.ErrClosed)
	}
	// BEGIN IMMEDIATE (the write connection's _txlock): the write lock is
	// taken before the user's facts are read, so no other writer, in this
	// process or another, can change them until Commit.
	tx, err := s.db.W.BeginTx(ctx, nil)
	if err != nil {
		return s.err("update", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	current, err := userFacts(ctx, tx, tenant, userID)
	if err != nil {
		return s.err("update", err)
	}
	c, err := fn(current)
	if err != nil {
		return err
	}
	taken := func(id string) (bool, error) {
		var n int
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM facts WHERE tenant = ? AND id = ?`, tenant, id).Scan(&n)
		return n > 0, err
	}
	if err := facts.CheckChanges(tenant, userID, current, c, taken); err != nil {
		var ie *agentmem.InvalidError
		if errors.As(err, &ie) {
			return err
		}
		return s.err("update", err)
	}
	if c.IsZero() {
		return nil
	}
	if err := apply(ctx, tx, tenant, c); err != nil {
		return s.err("update", err)
	}
	if err := tx.Commit(); err != nil {
		return s.err("update: commit", err)
	}
	return nil
}

// apply writes checked changes in tx.
func apply(ctx context.Context, tx *sql.Tx, tenant string, c facts.Changes) error {
	for _, f := range c.Put {
		md, err := rowcodec.Metadata(f.Metadata)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO facts (`+columns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, id) DO UPDATE SET user_id = excluded.user_id, text = excluded.text,
				confidence = excluded.confidence, created_at = excluded.created_at, reinforced_at = excluded.reinforced_at,
				reinforcements = excluded.reinforcements, source_session = excluded.source_session,
				source_step = excluded.source_step, source_agent = excluded.source_agent,
				superseded_by = excluded.superseded_by, superseded_at = excluded.superseded_at,
				metadata = excluded.metadata, embedding = excluded.embedding`,
			f.Tenant, f.ID, f.UserID, f.Text, f.Confidence, micros(f.CreatedAt), micros(f.ReinforcedAt), f.Reinforcements,
			f.Source.SessionID, f.Source.StepSeq, f.Source.Agent, f.SupersededBy, micros(f.SupersededAt),
			nullText(md), rowcodec.Vector(f.Embedding)); err != nil {
			return err
		}
	}
	for _, id := range c.Delete {
		if _, err := tx.ExecContext(ctx, `DELETE FROM facts WHERE tenant = ? AND id = ?`, tenant, id); err != nil {
			return err
		}
	}
	for _, e := range c.Audit {
		if _, err := tx.ExecContext(ctx, `INSERT INTO facts_audit (tenant, user_id, fact_id, action, by_whom, reason, successor, digest, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.Tenant, e.UserID, e.FactID, string(e.Action), e.By, e.Reason, e.Successor, e.Digest, micros(e.At)); err != nil {
			return err
		}
	}
	return nil
}

// nullText stores encoded JSON as TEXT, or NULL for none.
func nullText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// Facts implements facts.Store.
func (s *Store) Facts(ctx context.Context, tenant, userID string) ([]facts.Fact, error) {
	if s.closed.Load() {
		return nil, s.err("facts", facts.ErrClosed)
	}
	fs, err := userFacts(ctx, s.db.R, tenant, userID)
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
	f, err := scanFact(s.db.R.QueryRowContext(ctx, `SELECT `+columns+` FROM facts WHERE tenant = ? AND id = ?`, tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		return facts.Fact{}, fmt.Errorf("facts/sqlite: fact %.80q: %w", id, agentmem.ErrNotFound)
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
	rows, err := s.db.R.QueryContext(ctx, `SELECT seq, fact_id, action, by_whom, reason, successor, digest, at
		FROM facts_audit WHERE tenant = ? AND user_id = ? ORDER BY seq`, tenant, userID)
	if err != nil {
		return nil, s.err("audit", err)
	}
	defer rows.Close()
	var out []facts.AuditEntry
	for rows.Next() {
		e := facts.AuditEntry{Tenant: tenant, UserID: userID}
		var at sql.NullInt64
		if err := rows.Scan(&e.Seq, &e.FactID, &e.Action, &e.By, &e.Reason, &e.Successor, &e.Digest, &at); err != nil {
			return nil, s.err("audit", err)
		}
		e.At = fromMicros(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.err("audit", err)
	}
	return out, nil
}
