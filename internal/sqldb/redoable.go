package sqldb

import "context"

// redoableKey marks a context whose writes are redoable (Redoable).
type redoableKey struct{}

// Redoable returns a context whose Writes need not be durable when they
// commit. What they write is derived from durable data, and recorded in
// the same transaction with the position it was derived up to. So a commit
// lost to a power failure is lost whole, position included, and derived
// again; a crash of the process loses nothing. Such a commit skips the
// wait for the disk. On SQLite it uses synchronous=NORMAL for its
// transaction, whose WAL frames a later durable commit or checkpoint
// syncs. On PostgreSQL it uses synchronous_commit off for its transaction.
// The recall index's batches with a checkpoint are such writes.
func Redoable(ctx context.Context) context.Context {
	return context.WithValue(ctx, redoableKey{}, true)
}

// IsRedoable reports whether ctx is a Redoable context.
func IsRedoable(ctx context.Context) bool {
	v, _ := ctx.Value(redoableKey{}).(bool)
	return v
}
