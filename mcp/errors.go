package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmem/agentmem"
)

// A tool's error is what the calling model reads, so it says what was
// wrong and what to do. Errors of the library keep their message, which
// names the field and the reason. Failures of the machinery behind a tool
// are logged in full and reported without internals. They are classified
// as the HTTP API classifies them. A transient failure is one to retry
// later: agentmem.ErrUnavailable, which the backends wrap around a busy,
// unreachable or closed store, or a deadline. Any other (a corrupt record,
// a bug) is an internal error that retrying will not cure.

// toolError returns the error a tool call reports for err, which op (a
// short verb phrase: "append to session x") ran into.
func (t *tools) toolError(ctx context.Context, op string, err error) error {
	var be *agentmem.BudgetError
	var ie *agentmem.InvalidError
	switch {
	case errors.As(err, &be):
		return fmt.Errorf("budget %d is too small: the session's system prompt and task, which are always kept, need %d tokens; call again with a budget of at least %d, or 0 for no limit", be.Budget, be.Required, be.Required)
	case errors.As(err, &ie):
		if ie.Field == "" {
			return fmt.Errorf("%s: invalid input: %s", op, ie.Reason)
		}
		return fmt.Errorf("%s: invalid %s: %s", op, ie.Field, ie.Reason)
	case errors.Is(err, agentmem.ErrInvalid), errors.Is(err, agentmem.ErrNotFound), errors.Is(err, agentmem.ErrConflict):
		return fmt.Errorf("%s: %s", op, strings.TrimPrefix(err.Error(), "agentmem: "))
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: the call was cancelled before it finished; try again", op)
	case errors.Is(err, agentmem.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		t.cfg.Logger.WarnContext(ctx, "mcp tool failed: unavailable", "tenant", t.tenant, "op", op, "err", err)
		return fmt.Errorf("%s failed: the memory store is unavailable right now (busy, unreachable or shutting down); try again later", op)
	}
	t.cfg.Logger.ErrorContext(ctx, "mcp tool failed: internal error", "tenant", t.tenant, "op", op, "err", err)
	return fmt.Errorf("%s failed: internal error in the memory server (its log has the details); trying again will not help, so go on without it", op)
}

// invalid returns the error of a bad argument.
func invalid(field, format string, args ...any) error {
	return &agentmem.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// sessionNotFound is the error for a session that does not exist, or
// belongs to another tenant: the two look the same from outside.
func sessionNotFound(id string) error {
	return fmt.Errorf("%w: session %q does not exist (list_sessions shows the sessions there are; create_session makes one)", agentmem.ErrNotFound, id)
}
