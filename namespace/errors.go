package namespace

import (
	"errors"
	"fmt"
)

// The refusals of a namespace. Every error of this package that refuses a
// name wraps one of them (errors.Is), and its text is the reason a client
// gets, naming the namespace; server/namespaces.go maps them to HTTP statuses.
var (
	// ErrInvalidName: the name is not a lower-case DNS label (400).
	ErrInvalidName = errors.New("invalid namespace name")
	// ErrUnknown: no such namespace, and none is created (404).
	ErrUnknown = errors.New("unknown namespace")
	// ErrLimit: creating it would exceed goreka.namespaces.max (403).
	ErrLimit = errors.New("namespace limit reached")
	// ErrClosed: the server is not running, or shutting down, and creates
	// no namespace (503).
	ErrClosed = errors.New("namespaces closed")
	// ErrCreate: building the namespace failed (500). The failure is
	// Error.Cause, which errors.Is does not reach: whatever it wraps (a
	// registry error, say), the answer is a 500.
	ErrCreate = errors.New("namespace not created")
)

// Error is a refusal of namespace Name: Kind is one of ErrInvalidName,
// ErrUnknown, ErrLimit, ErrClosed and ErrCreate, Reason the whole message.
type Error struct {
	Name   string
	Kind   error
	Reason string
	// Cause is why the namespace was not built (Kind ErrCreate), nil
	// otherwise. Unwrap does not return it.
	Cause error
}

func (e *Error) Error() string { return e.Reason }

// Unwrap returns Kind, for errors.Is.
func (e *Error) Unwrap() error { return e.Kind }

func invalid(name, reason string) error {
	return &Error{Name: name, Kind: ErrInvalidName, Reason: reason}
}

// Unknown is the refusal of a name that is not a namespace (ErrUnknown).
func Unknown(name string) error {
	return &Error{Name: name, Kind: ErrUnknown, Reason: "unknown namespace " + quote(name)}
}

func notAllowed(name string) error {
	return &Error{Name: name, Kind: ErrUnknown,
		Reason: "unknown namespace " + quote(name) + ": it is not in goreka.namespaces.allowed and goreka.namespaces.auto-create is off"}
}

func overLimit(name string, max int) error {
	return &Error{Name: name, Kind: ErrLimit,
		Reason: fmt.Sprintf("namespace %s not created: this server has the maximum of %d namespaces (goreka.namespaces.max)", quote(name), max)}
}

func closed(name string) error {
	return &Error{Name: name, Kind: ErrClosed, Reason: "namespace " + quote(name) + " not created: the server is not running"}
}

// createFailed is the failure of Config.New for name (ErrCreate).
func createFailed(name string, err error) error {
	return &Error{Name: name, Kind: ErrCreate, Reason: "namespace " + quote(name) + " not created: " + err.Error(), Cause: err}
}
