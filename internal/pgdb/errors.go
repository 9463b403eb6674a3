package pgdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/agentmem/agentmem"
	"github.com/jackc/pgx/v5/pgconn"
)

// Classify returns err marked as transient (wrapping
// agentmem.ErrUnavailable, and still err for errors.As) when Transient
// says it is, and err unchanged otherwise. Every PostgreSQL backend passes
// its errors through it, so that callers tell an outage (retry later) from
// a failure nobody expected (a corrupt row, a bug).
//
// Resource exhaustion (see Exhausted) wraps agentmem.ErrExhausted, which
// is ErrUnavailable too.
func Classify(err error) error {
	if err == nil || errors.Is(err, agentmem.ErrUnavailable) || !Transient(err) {
		return err
	}
	if Exhausted(err) {
		return fmt.Errorf("%w: %w", agentmem.ErrExhausted, err)
	}
	return fmt.Errorf("%w: %w", agentmem.ErrUnavailable, err)
}

// Exhausted reports whether err is the server out of room: SQLSTATE
// 53000 insufficient_resources, 53100 disk_full or 53200 out_of_memory.
// Such a failure passes once room is made.
func Exhausted(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "53000", "53100", "53200":
		return true
	}
	return false
}

// Transient reports whether err is a failure of PostgreSQL, or of the way
// to it, that may pass if the same work is tried again later. Such
// failures are:
//
//   - the server cannot be reached or the connection was lost (a connect
//     error, a network error, an unexpected EOF, a closed connection,
//     SQLSTATE class 08);
//   - the server is shutting down, starting up or out of connections
//     (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
//     cannot_connect_now, 53300 too_many_connections);
//   - the server is out of disk space or memory (see Exhausted);
//   - the transaction lost a race it may win next time (40001
//     serialization_failure, 40P01 deadlock_detected, 55P03
//     lock_not_available);
//   - a statement or a context timed out (57014 query_canceled, which is
//     what statement_timeout raises; context.DeadlineExceeded; pgconn's
//     Timeout), or pgx knows that nothing was sent (pgconn.SafeToRetry).
//
// A context cancelled by the caller is not transient: it is the caller's
// own doing. It wins over the timeout pgx may report with it.
func Transient(err error) bool {
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	case errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", "53300", "40001", "40P01", "55P03", "57014":
			return true
		}
		if Exhausted(err) {
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08")
	}
	return false
}
