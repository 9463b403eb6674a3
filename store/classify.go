package store

import (
	"context"
	"errors"

	"github.com/agentmem/agentmem"
)

// ErrorClassifier is implemented by drivers whose errors do not all say
// their class themselves, such as a database's or an HTTP client's. The
// portable Store asks it about every error of the driver that matches
// none of the classes, so the driver returns its own errors as they come
// and maps them to classes in one place.
//
// The classes are agentmem.ErrInvalid, ErrNotFound, ErrConflict and
// ErrUnavailable (agentmem.ErrExhausted and ErrClosed are kinds of it),
// errors.ErrUnsupported and agentmem.ErrDamaged. A context's
// cancellation is a class of its own, and a deadline that passed is
// ErrUnavailable (retry with more time), whatever the driver.
type ErrorClassifier interface {
	// ClassifyError returns the class of err: one of the sentinels above,
	// or an error that wraps one (such as an *agentmem.InvalidError
	// naming the field). It returns nil for an error it does not know,
	// which the Store returns as it is: a failure nobody expected.
	// The Store wraps err with the class, so errors.Is(err, class) holds
	// and errors.As still finds the driver's error.
	ClassifyError(err error) error
}

// classify is the error of a driver's call as the Store returns it: nil,
// an error that has a class already, err with the class its driver's
// ErrorClassifier gives it, or err as it is. It is on the path of every
// call, so the nil check is all a success costs.
func (s *Store) classify(err error) error {
	if err == nil {
		return nil
	}
	return s.classifyErr(err)
}

func (s *Store) classifyErr(err error) error {
	if hasClass(err) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &classError{err: err, class: agentmem.ErrUnavailable}
	}
	if s.classifier == nil {
		return err
	}
	if c := s.classifier.ClassifyError(err); c != nil {
		return &classError{err: err, class: c}
	}
	return err
}

// hasClass reports whether err matches a class already (see
// ErrorClassifier), which no driver may change.
func hasClass(err error) bool {
	return errors.Is(err, agentmem.ErrNotFound) || errors.Is(err, agentmem.ErrConflict) ||
		errors.Is(err, agentmem.ErrInvalid) || errors.Is(err, agentmem.ErrUnavailable) ||
		errors.Is(err, context.Canceled) || errors.Is(err, errors.ErrUnsupported) ||
		errors.Is(err, agentmem.ErrDamaged)
}

// classError is a driver's error with its class. Its message is the
// driver's, which says what happened; the class is for errors.Is.
type classError struct {
	err, class error
}

func (e *classError) Error() string { return e.err.Error() }

// Unwrap makes errors.Is(e, class) hold, and errors.As find the driver's
// error first.
func (e *classError) Unwrap() []error { return []error{e.err, e.class} }
