package agentmem

import (
	"context"
	"errors"
	"fmt"
)

// Errors of what a backend holds, rather than of the call.
var (
	// ErrDamaged reports a stored record that does not decode. Examples are
	// a session whose metadata is not JSON, or a document or a fact whose
	// stored fields are not what was written. It is not transient: reading
	// the record again fails again. A read of one record by its ID fails
	// with a *DamagedError. A read of a collection (a list of sessions, a
	// search, a user's facts) leaves the record out and reports it
	// (ReportDamaged). So one record cannot take down every collection it is
	// part of.
	ErrDamaged = errors.New("agentmem: damaged record")
	// ErrExhausted reports a backend out of a resource it needs: a full
	// disk or database (SQLite's SQLITE_FULL, PostgreSQL's disk_full), or
	// memory. It wraps ErrUnavailable: the condition passes when room is
	// made, and the same call then succeeds.
	ErrExhausted = fmt.Errorf("agentmem: out of disk space or memory (%w)", ErrUnavailable)
)

// DamagedError describes a stored record that does not decode. It wraps
// ErrDamaged and the decoding error.
type DamagedError struct {
	// Kind says what the record is: "session", "document", "fact".
	Kind string
	// Tenant and ID name the record.
	Tenant string
	ID     string
	// Err is why it does not decode.
	Err error
}

func (e *DamagedError) Error() string {
	if e.Tenant == "" {
		return fmt.Sprintf("agentmem: the stored %s %q is damaged: %v", e.Kind, e.ID, e.Err)
	}
	return fmt.Sprintf("agentmem: the stored %s %q of tenant %q is damaged: %v", e.Kind, e.ID, e.Tenant, e.Err)
}

// Unwrap makes errors.Is(err, ErrDamaged) true and gives the decoding
// error.
func (e *DamagedError) Unwrap() []error { return []error{ErrDamaged, e.Err} }

// damageReporters is the context key of the reporters of damaged records.
type damageReporters struct{}

// reporter is one of a context's reporters of damaged records, and the
// ones it was added to.
type reporter struct {
	fn   func(*DamagedError)
	next *reporter
}

// WithDamageReporter returns a context in which the damaged records that
// reads of collections leave out are reported to fn. They are also
// reported to the reporters ctx has already, the newest first. fn may be
// called from the goroutine of the read, and from several at once when ctx
// is shared.
func WithDamageReporter(ctx context.Context, fn func(*DamagedError)) context.Context {
	next, _ := ctx.Value(damageReporters{}).(*reporter)
	return context.WithValue(ctx, damageReporters{}, &reporter{fn: fn, next: next})
}

// ReportDamaged reports d, a damaged record that a read of a collection
// left out, to ctx's reporters (see WithDamageReporter); without any, it
// does nothing. Backends call it for every record they leave out, so
// that what calls them can log it, count it and tell its own caller.
func ReportDamaged(ctx context.Context, d *DamagedError) {
	for r, _ := ctx.Value(damageReporters{}).(*reporter); r != nil; r = r.next {
		r.fn(d)
	}
}
