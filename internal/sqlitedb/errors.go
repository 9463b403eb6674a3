package sqlitedb

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/agentmem"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Classify returns err marked as transient (wrapping
// agentmem.ErrUnavailable, and still err for errors.As) when Transient
// says it is, and err unchanged otherwise. Resource exhaustion (see
// Exhausted) wraps agentmem.ErrExhausted, which is ErrUnavailable too.
// Every SQLite backend passes its errors through it. So callers tell a
// busy or full database (retry later) from a failure nobody expected (a
// corrupt row, a bug).
func Classify(err error) error {
	if err == nil || errors.Is(err, agentmem.ErrUnavailable) || !Transient(err) {
		return err
	}
	if Exhausted(err) {
		return fmt.Errorf("%w: %w", agentmem.ErrExhausted, err)
	}
	return fmt.Errorf("%w: %w", agentmem.ErrUnavailable, err)
}

// Transient reports whether err is a failure of SQLite that may pass if
// the same work is tried again later. That is so when:
//
//   - the database is locked by another connection or process beyond the
//     busy timeout (SQLITE_BUSY and SQLITE_LOCKED, with their extended
//     codes);
//   - SQLite is out of room (see Exhausted);
//   - a context deadline passed before the work was done.
//
// A context cancelled by the caller is not transient: it is the caller's
// own doing.
func Transient(err error) bool {
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, context.DeadlineExceeded):
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // the primary code of an extended one
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return Exhausted(err)
}

// Exhausted reports whether err is SQLite out of room. That is
// SQLITE_FULL: the database has reached its max_page_count, or its file
// system is full (SQLite's VFS reports a write that finds no space,
// ENOSPC, as SQLITE_FULL). It is also out of memory (SQLITE_NOMEM,
// SQLITE_IOERR_NOMEM). Such a failure passes once room is made. Other I/O
// errors do not count: the driver does not give their errno, and a failing
// disk is no passing condition.
func Exhausted(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_NOMEM:
		return true
	}
	return se.Code() == sqlite3.SQLITE_IOERR_NOMEM
}

// uniqueViolation is Dialect's UniqueViolation: a UNIQUE or PRIMARY KEY
// constraint failed.
func uniqueViolation(err error) (string, bool) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return se.Error(), true
		}
	}
	return "", false
}
