// Package sqlitedb opens SQLite databases (modernc.org/sqlite, pure Go)
// the way every agentmem component that keeps data in SQLite needs them.
// That is one writer connection and a pool of readers, WAL, durable
// commits, and the sqlite:// URL forms. The session store, the recall
// index, the facts store and the API keys can share one file this way.
//
// It is also where SQLite meets internal/sqldb: SQLDB is the sqldb.DB the
// backends are written against, Dialect its dialect. This package and the
// driver are what a SQLite backend links, and no PostgreSQL backend does.
package sqlitedb

import (
	"context"

	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/agentmem/agentmem/internal/migrate"

	_ "modernc.org/sqlite" // the pure-Go driver, registered as "sqlite"
)

// Scheme is the URL scheme of SQLite databases.
const Scheme = "sqlite"

// MemoryPath is the path that opens a private in-memory database, which
// lives as long as the DB: for tests and throwaway runs.
const MemoryPath = ":memory:"

// DefaultBusyTimeout is the BusyTimeout of a zero Options.
const DefaultBusyTimeout = 5 * time.Second

// Options configures Open. The zero value is a good default.
type Options struct {
	// BusyTimeout is how long a write waits for another connection or
	// process that holds the database's write lock before it fails. Zero
	// means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// ReadConns is the number of connections that serve reads. Zero means
	// 4. Writes always go through one connection.
	ReadConns int
}

// DB is an open SQLite database.
type DB struct {
	// W has exactly one connection, and every write transaction goes through
	// it. So the writers of this process queue in Go (honouring their
	// contexts) rather than spinning on SQLite's busy handler. Its
	// transactions begin with BEGIN IMMEDIATE.
	W *sql.DB
	// R is the pool that serves reads (query_only connections); WAL lets
	// them run beside a write. For an in-memory database it is W.
	R *sql.DB

	// group commits the writes of every DB of the file (Group).
	group *Group
	// shared is the entry of the file's pools in the process's open
	// files; nil for an in-memory database.
	shared *sharedFile
	closed sync.Once
	// stopCheckpoints stops the file's checkpointer (see checkpoint.go),
	// which closes checkpointsDone once it has. It is nil for an in-memory
	// database and for a DB that shares another's pools.
	stopCheckpoints chan struct{}
	checkpointsDone chan struct{}
}

// The open files of the process. The components that keep data in one file
// (the session store, the recall index, the facts, the blocks, the API
// keys) each open it, and all get the same two pools and the same Group.
// With a write connection each, their writes would contend for the file's
// lock through SQLite's busy handler, which sleeps up to 100 ms at a time.
// With one connection and a committer each, they would queue in Go for
// the connection and commit one after the other, an fsync each. With one
// Group, the writes of all of them that arrive together commit in one
// transaction. The files are keyed by their cleaned absolute path; an
// in-memory database is never shared, each Open being a database of its
// own.
var files struct {
	sync.Mutex
	m map[string]*sharedFile
}

// sharedFile is an open file's pools and how many DBs use them.
type sharedFile struct {
	key        string
	w, r       *sql.DB
	group      *Group
	refs       int
	stop, done chan struct{} // the checkpointer's
}

// Open opens (creating it if needed) the SQLite database at path: a file
// name, or MemoryPath. Every DB open on one file in a process shares its
// connections, made with the Options of the first Open. Each DB is closed
// on its own, and the connections close with the last.
func Open(path string, opts Options) (*DB, error) {
	if path == "" {
		return nil, errors.New("sqlite: open: empty path")
	}
	if path == MemoryPath {
		return openFile(path, opts)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	files.Lock()
	defer files.Unlock()
	if f, ok := files.m[abs]; ok {
		f.refs++
		return &DB{W: f.w, R: f.r, group: f.group, shared: f, stopCheckpoints: f.stop, checkpointsDone: f.done}, nil
	}
	db, err := openFile(abs, opts)
	if err != nil {
		return nil, err
	}
	if files.m == nil {
		files.m = map[string]*sharedFile{}
	}
	db.shared = &sharedFile{key: abs, w: db.W, r: db.R, group: db.group, refs: 1, stop: db.stopCheckpoints, done: db.checkpointsDone}
	files.m[abs] = db.shared
	return db, nil
}

// OpenMigrated opens the database at path as Open does and brings the
// schema of one component (its migration set) up to date. It closes the DB
// again if that fails.
func OpenMigrated(ctx context.Context, path string, opts Options, set *migrate.Set) (*DB, error) {
	db, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	if err := migrate.SQLite(ctx, db.W, set); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// openFile opens new pools on the database at path.
func openFile(path string, opts Options) (*DB, error) {
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	db := &DB{}
	var err error
	if path == MemoryPath {
		// One connection for everything: each connection to ":memory:"
		// would be a database of its own.
		if db.W, err = sql.Open("sqlite", "file::memory:?"+dsnParams(opts, true, false)); err != nil {
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
		single(db.W)
		db.R = db.W
		db.group = NewGroup(db.W)
		return db, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	name := "file:" + (&url.URL{Path: abs}).EscapedPath()
	if db.W, err = sql.Open("sqlite", name+"?"+dsnParams(opts, false, false)); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	single(db.W)
	if db.R, err = sql.Open("sqlite", name+"?"+dsnParams(opts, false, true)); err != nil {
		db.W.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db.R.SetMaxOpenConns(opts.ReadConns)
	db.R.SetMaxIdleConns(opts.ReadConns)
	ck, err := sql.Open("sqlite", name+"?"+dsnParams(opts, false, false))
	if err != nil {
		db.W.Close()
		db.R.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	single(ck)
	db.group = NewGroup(db.W)
	db.stopCheckpoints, db.checkpointsDone = make(chan struct{}), make(chan struct{})
	go checkpointer(ck, db.stopCheckpoints, db.checkpointsDone)
	return db, nil
}

// single makes db a pool of one connection that is never recycled.
func single(db *sql.DB) {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
}

// Close closes the DB: the Group and the pools, unless other DBs of the
// process use the same file. Calls after the first do nothing.
func (db *DB) Close() error {
	err := error(nil)
	db.closed.Do(func() {
		if f := db.shared; f != nil {
			files.Lock()
			f.refs--
			last := f.refs == 0
			if last {
				delete(files.m, f.key)
			}
			files.Unlock()
			if !last {
				return
			}
		}
		err = db.closePools()
	})
	return err
}

// Group returns the Group that commits the writes to the DB's file, shared
// by every DB of the process open on the file. It stops when the last of
// them closes; a component stops using it before it closes its DB.
func (db *DB) Group() *Group { return db.group }

// closePools stops the Group and the checkpointer and closes both pools.
func (db *DB) closePools() error {
	if db.group != nil {
		db.group.Close()
	}
	if db.stopCheckpoints != nil {
		close(db.stopCheckpoints)
		<-db.checkpointsDone
	}
	var errR error
	if db.R != nil && db.R != db.W {
		errR = db.R.Close()
	}
	var errW error
	if db.W != nil {
		errW = db.W.Close()
	}
	if err := errors.Join(errW, errR); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// dsnParams returns the driver parameters of a connection. Every
// connection gets:
//
//   - busy_timeout: a write that finds another process's write lock waits
//     (up to BusyTimeout) instead of failing at once with SQLITE_BUSY;
//   - journal_mode=WAL: readers never block the writer nor the writer the
//     readers, and a commit is one sequential append to the WAL;
//   - synchronous=FULL: the WAL is fsynced at every commit, so an
//     acknowledged write survives a power loss, not only a process crash
//     (NORMAL would risk the last commits on power loss);
//   - foreign_keys=ON.
//
// The write connection also maps the file (mmap_size=256MiB). A page it
// does not hold in its cache is read from the map, without a system call
// and a copy, and its cache outlives its own commits. Read connections do
// not map it. A read transaction that begins after another connection's
// commit empties the connection's cache and unmaps the file: SQLite does
// so on every change of the WAL, and under a steady stream of writes that
// is nearly every read. Its first page then maps the file again. A short
// read (a session's row) cost about four times what reading its few pages
// with pread does, and unmapping interrupts every thread of the process.
//
// The write connection also gets wal_autocheckpoint=16384 pages. The
// file's checkpointer (checkpoint.go) copies the WAL into the database in
// the background, and the automatic checkpoint in a commit is only the
// bound should it fall behind. It also gets cache_size=32MiB, where
// SQLite's default is 2 MiB. A batch of the recall index's writes, or a
// group of appends, dirties more pages than that. A transaction whose
// dirty pages overflow the cache writes them to the WAL before it commits,
// some of them twice.
//
// Write connections begin every transaction with BEGIN IMMEDIATE
// (_txlock). A transaction that will write takes the write lock when it
// starts, so two writers never both read and then deadlock upgrading their
// locks; the loser waits on busy_timeout. Read connections are query_only.
func dsnParams(opts Options, memory, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)+")")
	if !memory {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	if readOnly {
		q.Add("_pragma", "query_only(ON)")
	} else {
		q.Add("_pragma", "mmap_size(268435456)")
		q.Set("_txlock", "immediate")
		q.Add("_pragma", "cache_size(-32768)")
		if !memory {
			q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(autoCheckpointPages)+")")
		}
	}
	return q.Encode()
}

// ParseURL returns the path and options a sqlite URL names. The forms are:
//
//	sqlite:///abs/path/agentmem.db   an absolute path
//	sqlite://data/agentmem.db        a path relative to the working directory
//	sqlite:agentmem.db               the same, without slashes
//	sqlite://?mode=memory            a private in-memory database (also sqlite::memory:)
//
// Query parameters: busy_timeout (a Go duration such as 5s, see
// Options.BusyTimeout), read_conns (Options.ReadConns) and mode=memory.
// Unknown parameters are an error, so a misspelt one is not ignored.
func ParseURL(u *url.URL) (string, Options, error) {
	var opts Options
	if u.Scheme != Scheme {
		return "", opts, fmt.Errorf("sqlite: URL %q: scheme is not %q", u.Redacted(), Scheme)
	}
	if u.User != nil {
		return "", opts, fmt.Errorf("sqlite: URL %q: a sqlite URL has no user", u.Redacted())
	}
	path := u.Opaque
	if path == "" {
		path = u.Host + u.Path
	} else if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	memory := path == MemoryPath
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "mode":
			if v != "memory" {
				return "", opts, fmt.Errorf("sqlite: URL %q: mode=%q: the only mode is memory", u.Redacted(), v)
			}
			memory = true
		case "busy_timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return "", opts, fmt.Errorf("sqlite: URL %q: busy_timeout=%q is not a duration such as 5s", u.Redacted(), v)
			}
			opts.BusyTimeout = d
		case "read_conns":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return "", opts, fmt.Errorf("sqlite: URL %q: read_conns=%q is not a number of connections", u.Redacted(), v)
			}
			opts.ReadConns = n
		default:
			return "", opts, fmt.Errorf("sqlite: URL %q: unknown parameter %q (known: busy_timeout, read_conns, mode)", u.Redacted(), k)
		}
	}
	if memory {
		if path != "" && path != MemoryPath {
			return "", opts, fmt.Errorf("sqlite: URL %q: mode=memory with a path", u.Redacted())
		}
		return MemoryPath, opts, nil
	}
	if path == "" {
		return "", opts, fmt.Errorf("sqlite: URL %q: no path (sqlite:///abs/path.db, sqlite://rel/path.db or sqlite://?mode=memory)", u.Redacted())
	}
	return path, opts, nil
}
