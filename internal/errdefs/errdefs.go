// Package errdefs holds podrun's error classes, as containerd's errdefs does:
// an error is wrapped with its class and keeps its message; cmd/podrun maps the
// classes to exit codes once.
package errdefs

import "errors"

// The classes.
var (
	// ErrInvalidArgument: what the user asked for is wrong (exit code 2); nothing was changed.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound: the object does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: an object of that name exists and cannot be created again.
	ErrAlreadyExists = errors.New("already exists")
	// ErrFailedPrecondition: the object is not in a state that allows the operation.
	ErrFailedPrecondition = errors.New("failed precondition")
)

// classed is err marked with a class; its message is err's alone.
type classed struct{ err, class error }

func (c *classed) Error() string   { return c.err.Error() }
func (c *classed) Unwrap() []error { return []error{c.err, c.class} }

// Class marks err with class (nil stays nil).
func Class(class, err error) error {
	if err == nil {
		return nil
	}
	return &classed{err: err, class: class}
}

// Invalid marks err as bad input.
func Invalid(err error) error { return Class(ErrInvalidArgument, err) }

// IsInvalid reports whether err is bad input.
func IsInvalid(err error) bool { return errors.Is(err, ErrInvalidArgument) }

// IsNotFound reports whether err says an object does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsAlreadyExists reports whether err says an object exists already.
func IsAlreadyExists(err error) bool { return errors.Is(err, ErrAlreadyExists) }
