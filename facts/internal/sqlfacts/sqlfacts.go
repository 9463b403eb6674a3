// Package sqlfacts is the facts.Store of the SQL backends, written once
// over internal/sqldb: the queries, the per-user read-modify-write of
// Update with its checks, the scanning of rows and the mapping of errors.
// facts/sqlite and facts/postgres open their database, run their own
// migrations and wrap a Store.
//
// What differs between the databases is small and kept in dialect: how
// Update serializes the updates of a user (SQLite's single writer needs
// nothing more; PostgreSQL locks the user's row of facts_users), and that
// PostgreSQL sends an Update's writes in one round trip (sqldb.ExecAll).
package sqlfacts

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/internal/rowcodec"
	"github.com/agentmem/agentmem/internal/sqldb"
)

// Store is a facts.Store over a sqldb.DB whose facts tables are migrated.
// It is safe for concurrent use.
type Store struct {
	g    *sqldb.Guard
	d    *sqldb.Dialect
	name string
	sql  *dialect
}

var (
	_ facts.Store       = (*Store)(nil)
	_ facts.Lister      = (*Store)(nil)
	_ facts.Importer    = (*Store)(nil)
	_ facts.Extractions = (*Store)(nil)
)

// dialect is the SQL that differs between the databases.
type dialect struct {
	// lockUser are the statements, with the tenant and the user ID as $1
	// and $2, that an Update runs first in its transaction so that the
	// updates of one user run one after the other across every
	// connection and process.
	lockUser []string
}

var (
	// SQLite's writes run one at a time (a write transaction holds the
	// database's write lock from its BEGIN IMMEDIATE): nothing to add.
	sqliteSQL = &dialect{}
	// PostgreSQL locks the user's row of facts_users, creating it if
	// needed; other users' updates proceed in parallel.
	postgresSQL = &dialect{lockUser: []string{
		`INSERT INTO facts_users (tenant, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		`SELECT 1 FROM facts_users WHERE tenant = $1 AND user_id = $2 FOR UPDATE`,
	}}
)

// New returns a Store over db, which it closes on Close. Its errors name
// it "facts/" and the dialect ("facts/sqlite").
func New(db sqldb.DB) *Store {
	d := db.Dialect()
	name := "facts/" + d.Name
	s := &Store{g: sqldb.NewGuard(db, name, facts.ErrClosed), d: d, name: name, sql: postgresSQL}
	if d.IsSQLite() {
		s.sql = sqliteSQL
	}
	return s
}

// Close closes the database; later calls fail with facts.ErrClosed.
func (s *Store) Close() error { return s.g.Close() }

// columns are the facts columns, in the order scanFact reads them.
const columns = `tenant, id, user_id, text, confidence, created_at, reinforced_at, reinforcements,
	source_session, source_step, source_agent, superseded_by, superseded_at, metadata, embedding, valid_from, valid_to`

// scanFact reads a row of columns. A row whose metadata or embedding does
// not decode is damaged: its error is a *agentmem.DamagedError.
func (s *Store) scanFact(r sqldb.Row) (facts.Fact, error) {
	var (
		f       facts.Fact
		md, vec []byte
	)
	if err := r.Scan(&f.Tenant, &f.ID, &f.UserID, &f.Text, &f.Confidence, s.d.ScanTime(&f.CreatedAt), s.d.ScanTime(&f.ReinforcedAt),
		&f.Reinforcements, &f.Source.SessionID, &f.Source.StepSeq, &f.Source.Agent, &f.SupersededBy, s.d.ScanTime(&f.SupersededAt),
		&md, &vec, s.d.ScanTime(&f.ValidFrom), s.d.ScanTime(&f.ValidTo)); err != nil {
		return f, err
	}
	var err error
	if f.Metadata, err = rowcodec.DecodeMetadata(md); err == nil {
		f.Embedding, err = rowcodec.DecodeVector(vec)
	}
	if err != nil {
		return f, &agentmem.DamagedError{Kind: "fact", Tenant: f.Tenant, ID: f.ID, Err: err}
	}
	return f, nil
}

// userFacts reads every fact of a user. A fact that does not decode is
// left out and reported to ctx (agentmem.ReportDamaged): one damaged fact
// must not take the user's others with it, in reads or in Update.
func (s *Store) userFacts(ctx context.Context, q sqldb.Querier, tenant, userID string) ([]facts.Fact, error) {
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM facts WHERE tenant = $1 AND user_id = $2 ORDER BY created_at, id`, tenant, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []facts.Fact
	for rows.Next() {
		f, err := s.scanFact(rows)
		var d *agentmem.DamagedError
		if errors.As(err, &d) {
			agentmem.ReportDamaged(ctx, d)
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// fnErr carries out of the write transaction what is the caller's to
// see as it is: an error of fn or of the check of its changes. (A panic
// of fn reaches the caller through sqldb's Write.)
type fnErr struct{ err error }

func (e *fnErr) Error() string { return e.err.Error() }

// lockUser takes the user's write lock in tx, which holds it until it
// ends.
func (s *Store) lockUser(ctx context.Context, tx sqldb.Tx, tenant, userID string) error {
	for _, q := range s.sql.lockUser {
		if _, err := tx.Exec(ctx, q, tenant, userID); err != nil {
			return err
		}
	}
	return nil
}

// Update implements facts.Store: in one write transaction (on SQLite
// possibly shared with other Updates of the process, each in a savepoint
// of its own; on PostgreSQL run again if the server aborts it for a
// deadlock), it takes the user's write lock, reads the user's facts,
// runs fn, checks its changes and writes them.
func (s *Store) Update(ctx context.Context, tenant, userID string, fn func([]facts.Fact) (facts.Changes, error)) error {
	if err := facts.ValidateUser(tenant, userID); err != nil {
		return err
	}
	if err := s.g.Closed("update"); err != nil {
		return err
	}
	err := s.g.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		if err := s.lockUser(ctx, tx, tenant, userID); err != nil {
			return err
		}
		current, err := s.userFacts(ctx, tx, tenant, userID)
		if err != nil {
			return err
		}
		c, err := fn(current)
		if err != nil {
			return &fnErr{err: err}
		}
		taken := func(id string) (bool, error) {
			var ok bool
			err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM facts WHERE tenant = $1 AND id = $2)`, tenant, id).Scan(&ok)
			return ok, err
		}
		if err := facts.CheckChanges(tenant, userID, current, c, taken); err != nil {
			var ie *agentmem.InvalidError
			if errors.As(err, &ie) {
				return &fnErr{err: err}
			}
			return err
		}
		// A turn is extracted once: the user's lock makes the lookup
		// and the write one step.
		for _, e := range c.Audit {
			if e.Action != facts.ActionExtracted {
				continue
			}
			done, err := s.extracted(ctx, tx, tenant, userID, e.SessionID, e.StepSeq)
			if err != nil {
				return err
			}
			if done {
				return &fnErr{err: facts.ExtractedError(tenant, userID, e.SessionID, e.StepSeq)}
			}
		}
		return s.apply(ctx, tx, tenant, c)
	})
	var fe *fnErr
	if errors.As(err, &fe) {
		return fe.err
	}
	if err != nil {
		return s.g.Err("update", err)
	}
	return nil
}

// extracted reports whether the user has the ActionExtracted entry of
// the turn (the lookup of the index facts_audit_extracted, whose
// condition the query repeats as it is written there).
func (s *Store) extracted(ctx context.Context, q sqldb.Querier, tenant, userID, sessionID string, stepSeq int64) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM facts_audit WHERE tenant = $1 AND user_id = $2
		AND source_session = $3 AND source_step = $4 AND action = 'extracted')`, tenant, userID, sessionID, stepSeq).Scan(&ok)
	return ok, err
}

// Extracted implements facts.Extractions.
func (s *Store) Extracted(ctx context.Context, tenant, userID, sessionID string, stepSeq int64) (bool, error) {
	if err := s.g.Closed("extracted"); err != nil {
		return false, err
	}
	ok, err := s.extracted(ctx, s.g.Reader(), tenant, userID, sessionID, stepSeq)
	if err != nil {
		return false, s.g.Err("extracted", err)
	}
	return ok, nil
}

// ImportUser implements facts.Importer: in one write transaction holding
// the user's write lock, as Update's, it makes sure that the user has no
// facts nor audit entries and that no other user has one of the facts'
// IDs, then writes them.
func (s *Store) ImportUser(ctx context.Context, tenant, userID string, fs []facts.Fact, audit []facts.AuditEntry) error {
	if err := facts.CheckImport(tenant, userID, fs, audit); err != nil {
		return err
	}
	if err := s.g.Closed("import"); err != nil {
		return err
	}
	err := s.g.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		if err := s.lockUser(ctx, tx, tenant, userID); err != nil {
			return err
		}
		var has bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM facts WHERE tenant = $1 AND user_id = $2)
			OR EXISTS (SELECT 1 FROM facts_audit WHERE tenant = $1 AND user_id = $2)`, tenant, userID).Scan(&has); err != nil {
			return err
		}
		if has {
			return &fnErr{err: facts.ConflictError(tenant, userID, "")}
		}
		for _, f := range fs {
			var taken bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM facts WHERE tenant = $1 AND id = $2)`, tenant, f.ID).Scan(&taken); err != nil {
				return err
			}
			if taken {
				return &fnErr{err: facts.ConflictError(tenant, userID, f.ID)}
			}
		}
		return s.apply(ctx, tx, tenant, facts.Changes{Put: fs, Audit: audit})
	})
	var fe *fnErr
	if errors.As(err, &fe) {
		return fe.err
	}
	if err != nil {
		return s.g.Err("import", err)
	}
	return nil
}

// Tenants implements facts.Lister.
func (s *Store) Tenants(ctx context.Context) ([]string, error) {
	return s.strings(ctx, "tenants", `SELECT tenant FROM facts UNION SELECT tenant FROM facts_audit`)
}

// Users implements facts.Lister.
func (s *Store) Users(ctx context.Context, tenant string) ([]string, error) {
	return s.strings(ctx, "users", `SELECT user_id FROM facts WHERE tenant = $1 UNION SELECT user_id FROM facts_audit WHERE tenant = $1`, tenant)
}

// strings runs a query of distinct strings and returns them sorted
// bytewise (here rather than by the database, whose collation may order
// them otherwise).
func (s *Store) strings(ctx context.Context, op, query string, args ...any) ([]string, error) {
	if err := s.g.Closed(op); err != nil {
		return nil, err
	}
	rows, err := s.g.Reader().Query(ctx, query, args...)
	if err != nil {
		return nil, s.g.Err(op, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, s.g.Err(op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.g.Err(op, err)
	}
	slices.Sort(out)
	return out, nil
}

// apply writes checked changes in tx.
func (s *Store) apply(ctx context.Context, tx sqldb.Tx, tenant string, c facts.Changes) error {
	var stmts []sqldb.Stmt
	for _, f := range c.Put {
		md, err := rowcodec.Metadata(f.Metadata)
		if err != nil {
			return err
		}
		var mdText any
		if md != nil {
			mdText = string(md)
		}
		stmts = append(stmts, sqldb.Stmt{SQL: `INSERT INTO facts (` + columns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
			ON CONFLICT (tenant, id) DO UPDATE SET user_id = excluded.user_id, text = excluded.text,
				confidence = excluded.confidence, created_at = excluded.created_at, reinforced_at = excluded.reinforced_at,
				reinforcements = excluded.reinforcements, source_session = excluded.source_session,
				source_step = excluded.source_step, source_agent = excluded.source_agent,
				superseded_by = excluded.superseded_by, superseded_at = excluded.superseded_at,
				metadata = excluded.metadata, embedding = excluded.embedding,
				valid_from = excluded.valid_from, valid_to = excluded.valid_to`,
			Args: []any{f.Tenant, f.ID, f.UserID, f.Text, f.Confidence, s.d.Time(f.CreatedAt), s.d.Time(f.ReinforcedAt), f.Reinforcements,
				f.Source.SessionID, f.Source.StepSeq, f.Source.Agent, f.SupersededBy, s.d.Time(f.SupersededAt),
				mdText, rowcodec.Vector(f.Embedding), s.d.Time(f.ValidFrom), s.d.Time(f.ValidTo)}})
	}
	for _, id := range c.Delete {
		stmts = append(stmts, sqldb.Stmt{SQL: `DELETE FROM facts WHERE tenant = $1 AND id = $2`, Args: []any{tenant, id}},
			// Forgetting erases what the fact said from its audit entries.
			sqldb.Stmt{SQL: `UPDATE facts_audit SET before_state = NULL, after_state = NULL
				WHERE tenant = $1 AND fact_id = $2 AND (before_state IS NOT NULL OR after_state IS NOT NULL)`, Args: []any{tenant, id}})
	}
	for _, e := range c.Audit {
		before, err := rowcodec.State(e.Before)
		if err != nil {
			return err
		}
		after, err := rowcodec.State(e.After)
		if err != nil {
			return err
		}
		stmts = append(stmts, sqldb.Stmt{SQL: `INSERT INTO facts_audit (tenant, user_id, fact_id, action, by_whom, reason, successor, digest, at,
				before_state, after_state, source_session, source_step)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			Args: []any{e.Tenant, e.UserID, e.FactID, string(e.Action), e.By, e.Reason, e.Successor, e.Digest, s.d.Time(e.At),
				before, after, e.SessionID, e.StepSeq}})
	}
	return sqldb.ExecAll(ctx, tx, stmts)
}

// Facts implements facts.Store.
func (s *Store) Facts(ctx context.Context, tenant, userID string) ([]facts.Fact, error) {
	if err := s.g.Closed("facts"); err != nil {
		return nil, err
	}
	fs, err := s.userFacts(ctx, s.g.Reader(), tenant, userID)
	if err != nil {
		return nil, s.g.Err("facts", err)
	}
	return fs, nil
}

// Get implements facts.Store.
func (s *Store) Get(ctx context.Context, tenant, id string) (facts.Fact, error) {
	if err := s.g.Closed("get"); err != nil {
		return facts.Fact{}, err
	}
	f, err := s.scanFact(s.g.Reader().QueryRow(ctx, `SELECT `+columns+` FROM facts WHERE tenant = $1 AND id = $2`, tenant, id))
	if errors.Is(err, sqldb.ErrNoRows) {
		return facts.Fact{}, fmt.Errorf("facts: fact %.80q: %w", id, agentmem.ErrNotFound) // as the memory store says it: no backend's name
	}
	if err != nil {
		return facts.Fact{}, s.g.Err("get", err)
	}
	return f, nil
}

// Audit implements facts.Store.
func (s *Store) Audit(ctx context.Context, tenant, userID string) ([]facts.AuditEntry, error) {
	if err := s.g.Closed("audit"); err != nil {
		return nil, err
	}
	rows, err := s.g.Reader().Query(ctx, `SELECT seq, fact_id, action, by_whom, reason, successor, digest, at, before_state, after_state,
		source_session, source_step FROM facts_audit WHERE tenant = $1 AND user_id = $2 ORDER BY seq`, tenant, userID)
	if err != nil {
		return nil, s.g.Err("audit", err)
	}
	defer rows.Close()
	var out []facts.AuditEntry
	for rows.Next() {
		e := facts.AuditEntry{Tenant: tenant, UserID: userID}
		var (
			action        string
			before, after []byte
		)
		if err := rows.Scan(&e.Seq, &e.FactID, &action, &e.By, &e.Reason, &e.Successor, &e.Digest, s.d.ScanTime(&e.At), &before, &after,
			&e.SessionID, &e.StepSeq); err != nil {
			return nil, s.g.Err("audit", err)
		}
		var err error
		if e.Before, err = rowcodec.DecodeState(before); err == nil {
			e.After, err = rowcodec.DecodeState(after)
		}
		if err != nil {
			return nil, &agentmem.DamagedError{Kind: "fact audit entry", Tenant: tenant, ID: fmt.Sprint(e.Seq), Err: err}
		}
		e.Action = facts.Action(action)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.g.Err("audit", err)
	}
	return out, nil
}
