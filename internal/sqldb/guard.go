package sqldb

import (
	"fmt"
	"sync/atomic"
)

// Guard is a component's DB with what every backend does around it. It is
// closed once, and then the component's operations fail with the
// component's own error for a closed store, rather than with whatever a
// closed pool says. The other errors are wrapped with the component's name
// and the operation, and classified by the dialect.
type Guard struct {
	DB
	name     string
	closeErr error
	closed   atomic.Bool
}

// NewGuard returns a Guard over db for the component called name in
// errors ("facts/sqlite"), whose operations fail with closeErr after
// Close.
func NewGuard(db DB, name string, closeErr error) *Guard {
	return &Guard{DB: db, name: name, closeErr: closeErr}
}

// Close closes the DB the first time; later calls return nil.
func (g *Guard) Close() error {
	if g.closed.Swap(true) {
		return nil
	}
	return g.DB.Close()
}

// Closed returns the error of op once Close has been called (wrapping
// the component's closed error), and nil before.
func (g *Guard) Closed(op string) error {
	if !g.closed.Load() {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", g.name, op, g.closeErr)
}

// Err wraps err, an error of the database in op: "name: op: err", err
// classified by the dialect (transient errors wrap
// agentmem.ErrUnavailable). After Close it returns Closed(op) instead,
// since an operation that overlapped Close fails for that reason.
func (g *Guard) Err(op string, err error) error {
	if g.closed.Load() {
		return g.Closed(op)
	}
	return fmt.Errorf("%s: %s: %w", g.name, op, g.Dialect().Classify(err))
}
