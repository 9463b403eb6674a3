// Package migrate applies the embedded SQL migrations of agentmem's
// database backends (sessions, recall, facts, keys), for SQLite and for
// PostgreSQL, by one set of rules.
//
// SQLite's runner is here (SQLite), over database/sql; PostgreSQL's is
// pgdb.Migrate, beside the pgx driver it needs, so that this package
// imports no database driver and a SQLite backend does not link pgx.
//
// Each component has its own numbered migrations (NNNN_name.sql, from 1,
// without gaps) and its own row set in one table, agentmem_migrations
// (component, version, name, applied_at), so that several components can
// share one database file or schema. A component's pending migrations are
// applied in one transaction: all or none. A database migrated by a newer
// agentmem than this one is refused with ErrSchemaTooNew rather than
// written to.
//
// # Citus
//
// On PostgreSQL with the citus extension (a Citus coordinator), a
// component that describes its layout (Set.Citus) gets distributed
// tables. When its migrations start from nothing, the runner applies them
// as on PostgreSQL and runs the layout's Prepare SQL. Then, in the same
// transaction, it distributes the tenant-keyed tables by their tenant
// column (create_distributed_table) and replicates the reference tables
// (create_reference_table). The distributed tables are co-located with
// the other components' tenant tables in the schema, so that the rows of
// one tenant in every component of a schema live on one worker. The
// other tables stay plain tables of the coordinator. The runner records
// the layout in the migrations table (component "NAME.citus"). On every
// later run it distributes the layout's tables a newer migration added. A schema that already held the
// component's tables without that record (a PostgreSQL database that was
// given the extension later) is left as it is.
package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// ErrSchemaTooNew is returned when a component's schema in the database
// was migrated by a newer version of agentmem than this one: this binary
// does not know the newer tables and must not write to them.
var ErrSchemaTooNew = errors.New("database schema is newer than this agentmem")

// Table is the name of the table that records applied migrations.
const Table = "agentmem_migrations"

// Migration is one migration file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Set is a component's migrations, in version order.
type Set struct {
	// Component names the migrations' owner in the migrations table
	// ("sessions", "recall", ...).
	Component string
	// Migrations are in version order, versions 1 to len.
	Migrations []Migration
	// Citus is the component's layout on a Citus cluster; nil keeps
	// every table a plain table of the coordinator.
	Citus *Citus
}

// Citus is how a component's tables are laid out on a Citus cluster.
type Citus struct {
	// Distributed are the tables sharded by their column "tenant", in
	// the order to distribute them: a table that a foreign key references
	// first. The column must be of type text COLLATE "C", and part of
	// every primary key and unique constraint.
	Distributed []string
	// Reference are the tables copied to every node.
	Reference []string
	// Prepare is SQL run once, after the component's first migrations on
	// a new Citus database and before its tables are distributed: what
	// Citus needs that plain PostgreSQL does not.
	Prepare string
}

// WithCitus returns the set with the layout c.
func (s *Set) WithCitus(c Citus) *Set {
	s.Citus = &c
	return s
}

// Version is the newest schema version the set knows.
func (s *Set) Version() int { return len(s.Migrations) }

// Load reads the *.sql files of dir in fsys (typically an embed.FS) as a
// component's migrations. Every name must start with a positive version
// number (0001_init.sql) and the versions must run from 1 without gaps.
func Load(component string, fsys fs.FS, dir string) (*Set, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	set := &Set{Component: component}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".sql")
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migrate: %s migration %s: name must start with a positive version number", component, n)
		}
		body, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		set.Migrations = append(set.Migrations, Migration{Version: v, Name: base, SQL: string(body)})
	}
	sort.Slice(set.Migrations, func(i, j int) bool { return set.Migrations[i].Version < set.Migrations[j].Version })
	for i, m := range set.Migrations {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrate: %s migration %s: want version %d", component, m.Name, i+1)
		}
	}
	if len(set.Migrations) == 0 {
		return nil, fmt.Errorf("migrate: %s: no migrations in %s", component, dir)
	}
	return set, nil
}

// MustLoad is Load for embedded migrations, which a test checks: it
// panics on an error.
func MustLoad(component string, fsys fs.FS, dir string) *Set {
	s, err := Load(component, fsys, dir)
	if err != nil {
		panic(err)
	}
	return s
}

// LegacyComponent is the component whose migrations an older agentmem
// recorded in a schema_migrations table of its own: the session store's.
// A runner that finds that table adopts its rows as this component's.
const LegacyComponent = "sessions"

// SQLite brings the set's schema up to date in one write transaction. The
// database should be opened so that transactions take the write lock
// first (BEGIN IMMEDIATE: the _txlock=immediate DSN parameter of
// modernc.org/sqlite). Processes that open one file at once then migrate
// one after the other, and the later ones find nothing to do.
func SQLite(ctx context.Context, db *sql.DB, set *Set) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", set.Component, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit

	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+Table+` (
		component  TEXT    NOT NULL,
		version    INTEGER NOT NULL,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL DEFAULT (unixepoch()),
		PRIMARY KEY (component, version)
	) STRICT`); err != nil {
		return fmt.Errorf("migrate %s: %w", set.Component, err)
	}
	var legacy int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").Scan(&legacy); err != nil {
		return fmt.Errorf("migrate %s: %w", set.Component, err)
	}
	if legacy > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO `+Table+` (component, version, name, applied_at)
			SELECT ?, version, name, applied_at FROM schema_migrations`, LegacyComponent); err != nil {
			return fmt.Errorf("migrate %s: adopting schema_migrations: %w", set.Component, err)
		}
		if _, err := tx.ExecContext(ctx, "DROP TABLE schema_migrations"); err != nil {
			return fmt.Errorf("migrate %s: adopting schema_migrations: %w", set.Component, err)
		}
	}
	var current int
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM "+Table+" WHERE component = ?", set.Component).Scan(&current); err != nil {
		return fmt.Errorf("migrate %s: %w", set.Component, err)
	}
	if err := set.CheckVersion(current, "the database"); err != nil {
		return err
	}
	if current == set.Version() && legacy == 0 {
		return nil // up to date: the deferred Rollback ends the transaction
	}
	for _, m := range set.Migrations[current:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate %s: %s: %w", set.Component, m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+Table+" (component, version, name) VALUES (?, ?, ?)", set.Component, m.Version, m.Name); err != nil {
			return fmt.Errorf("migrate %s: %s: %w", set.Component, m.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate %s: commit: %w", set.Component, err)
	}
	return nil
}

// CheckVersion returns ErrSchemaTooNew, naming where ("the database",
// "schema \"a\""), when current, the component's version recorded there,
// is newer than the set: a runner checks it before it migrates.
func (set *Set) CheckVersion(current int, where string) error {
	if current > set.Version() {
		return fmt.Errorf("%w: %s has %s at schema version %d, this binary knows versions up to %d; upgrade agentmem",
			ErrSchemaTooNew, where, set.Component, current, set.Version())
	}
	return nil
}
