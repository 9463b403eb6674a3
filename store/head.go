package store

import (
	"context"
	"time"
)

// Head is what a session's record says of its log: enough for a cache of
// the log to tell whether it is current (HeadReader).
type Head struct {
	// CreatedAt is the session's creation time: a session deleted and
	// created again under its ID has another one.
	CreatedAt time.Time
	// LastSeq is the sequence number of the log's last entry (0: none).
	LastSeq int64
}

// HeadReader is a Driver that reads a session's Head without the rest of
// its record. A cache of sessions' logs checks the head before every use:
// the context cache of package sessions does, before every context. On
// SQLite, decoding the whole record (its metadata and settings) was a
// third of that read. Every backend of this module implements it.
type HeadReader interface {
	// Head returns the head of a tenant's session. It fails as Get does
	// (ErrNotFound for a missing or expired session), but for a damaged
	// record. The head of a session whose metadata or settings do not
	// decode is read, as is everything that needs only its keys and log.
	Head(ctx context.Context, tenant, id string) (Head, error)
}
