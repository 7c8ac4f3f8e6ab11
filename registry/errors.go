package registry

import (
	"errors"
	"fmt"
)

// ErrNotFound is returned when the addressed lease does not exist. Eureka
// answers it with 404, which makes a renewing client register again.
var ErrNotFound = errors.New("instance not registered")

// ErrNewerCopy is returned by Renew when the sender's copy of the instance
// is newer than the stored one (its lastDirtyTimestamp is later): the
// sender should register it again. It is an ErrNotFound, as Eureka answers
// both with 404.
var ErrNewerCopy = fmt.Errorf("%w: the sender's copy is newer", ErrNotFound)

// ErrNotExpired is returned by EvictExpired and MarkHeldExpired when the lease was renewed or
// replaced since the eviction job found it expired.
var ErrNotExpired = errors.New("lease no longer expired")

// ConflictError is returned by Renew for a peer's heartbeat whose copy is
// older than the stored one: the peer should adopt Stored (Eureka's 409 with
// the instance as the body).
type ConflictError struct {
	Stored LeaseView
}

func (e *ConflictError) Error() string {
	return "the stored copy of " + e.Stored.Instance.ID() + " is newer than the sender's"
}

// LimitError is a registration of a new instance refused because the
// registry holds Options.MaxInstances leases already; the registry is
// unchanged.
type LimitError struct{ Max int }

func (e *LimitError) Error() string {
	return fmt.Sprintf("registry full: it holds the maximum of %d instances (goreka.namespaces.max-instances); this instance is not registered", e.Max)
}

// ValidationError is a request the registry refuses, with a message naming
// what is wrong. Registrations use Eureka's own messages
// (ApplicationResource.addInstance); Eureka answers them with 400.
type ValidationError struct{ Msg string }

func (e *ValidationError) Error() string { return e.Msg }

func invalid(format string, args ...any) error {
	return &ValidationError{fmt.Sprintf(format, args...)}
}
