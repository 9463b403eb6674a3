package remote

import (
	"errors"
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/store"
)

// UnsupportedError is returned, before anything is sent, for a store.Store
// call the HTTP API cannot express (Prune, a branch with its own user or
// agent, ...). It wraps errors.ErrUnsupported.
type UnsupportedError struct {
	// Op is the method ("Prune", "Append", ...).
	Op string
	// Reason says what the API lacks.
	Reason string
}

// Error implements error.
func (e *UnsupportedError) Error() string {
	return "agentmem remote: " + e.Op + " is not supported over HTTP: " + e.Reason
}

// Unwrap makes errors.Is(err, errors.ErrUnsupported) true.
func (e *UnsupportedError) Unwrap() error { return errors.ErrUnsupported }

// MapError returns err, an error of a client.Client, as an error that
// also wraps the sentinel a local store returns for the same failure.
// Code written against a store then handles it as it handles a store's:
//
//	client.ErrInvalid          agentmem.ErrInvalid (errors.As finds an *agentmem.InvalidError with the field)
//	client.ErrNotFound         agentmem.ErrNotFound
//	client.ErrConflict         agentmem.ErrConflict
//	client.ErrIDReused         store.ErrIDReused
//	client.ErrNothingToPop     store.ErrNothingToPop
//	client.ErrBudgetTooSmall   agentmem.ErrBudgetTooSmall (errors.As finds an *agentmem.BudgetError)
//	client.ErrUnavailable      agentmem.ErrUnavailable
//	client.ErrClosed           store.ErrClosed
//
// errors.As still finds the *client.Error. Other errors (nil included)
// are returned as they are. The store.Store of New maps the errors of
// its driver alike (Store.ClassifyError).
func MapError(err error) error {
	if err == nil {
		return nil
	}
	if c := classOf(err); c != nil {
		return &mappedError{err: err, sentinel: c}
	}
	return err
}

// ClassifyError implements store.ErrorClassifier: the class of an error
// of the client is the sentinel MapError wraps, or nil.
func (s *Store) ClassifyError(err error) error { return classOf(err) }

// classOf returns the sentinel of an error of the client (see MapError),
// or nil when it has none.
func classOf(err error) error {
	var e *client.Error
	isAPI := errors.As(err, &e)
	switch {
	case errors.Is(err, client.ErrClosed):
		return store.ErrClosed
	case errors.Is(err, client.ErrInvalid):
		inv := &agentmem.InvalidError{Reason: err.Error()}
		if isAPI {
			inv.Field, inv.Reason = e.Field, e.Message
		}
		return inv
	case errors.Is(err, client.ErrNotFound):
		return agentmem.ErrNotFound
	case errors.Is(err, client.ErrIDReused):
		return store.ErrIDReused
	case errors.Is(err, client.ErrNothingToPop):
		return store.ErrNothingToPop
	case errors.Is(err, client.ErrConflict):
		return agentmem.ErrConflict
	case errors.Is(err, client.ErrBudgetTooSmall):
		be := &agentmem.BudgetError{}
		if isAPI {
			be.Budget, be.Required = e.Budget, e.Required
		}
		return be
	case errors.Is(err, client.ErrUnavailable):
		return agentmem.ErrUnavailable
	}
	return nil
}

// mappedError is an error of the client that also wraps the domain's
// sentinel for it.
type mappedError struct {
	err      error
	sentinel error
}

func (e *mappedError) Error() string   { return e.err.Error() }
func (e *mappedError) Unwrap() []error { return []error{e.err, e.sentinel} }

// existsError turns the server's answer that a create's ID is in use (409
// conflict on the field id) into the *store.ExistsError every store
// returns, so that callers tell it from other conflicts alike. Other
// errors are returned as they are, for ClassifyError.
func existsError(err error, req store.CreateRequest) error {
	var e *client.Error
	if req.ID != "" && errors.As(err, &e) && e.Code == api.CodeConflict && e.Field == "id" {
		return &store.ExistsError{Tenant: req.Tenant, ID: req.ID}
	}
	return err
}

// malformed is the error of an answer of the server that does not make
// sense.
func malformed(format string, args ...any) error {
	return fmt.Errorf("agentmem remote: the server returned "+format, args...)
}
