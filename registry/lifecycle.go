package registry

import "time"

// Lifecycle is an instance's place between heartbeating and gone, as the
// dashboard, the metrics, the health monitor and the goreka API show it.
// It is derived from the lease at a moment, never stored: heartbeats are
// not changes.
type Lifecycle string

// The lifecycle states.
const (
	// LifecycleUp: heartbeating.
	LifecycleUp Lifecycle = "up"
	// LifecycleSuspect: missed heartbeats (more than two renewal intervals
	// since the last one), lease not expired.
	LifecycleSuspect Lifecycle = "suspect"
	// LifecycleHeld: lease expired, still registered (self-preservation,
	// lease expiration switched off, or the eviction limit until the next
	// run keeps it).
	LifecycleHeld Lifecycle = "held"
	// LifecycleGone: cancelled or evicted recently (only views that keep
	// removed instances, such as the health monitor's, show it).
	LifecycleGone Lifecycle = "gone"
)

// Lifecycles lists the states in display order.
var Lifecycles = []Lifecycle{LifecycleUp, LifecycleSuspect, LifecycleHeld, LifecycleGone}

// ParseLifecycle returns the lifecycle named s and whether it is one.
func ParseLifecycle(s string) (Lifecycle, bool) {
	switch l := Lifecycle(s); l {
	case LifecycleUp, LifecycleSuspect, LifecycleHeld, LifecycleGone:
		return l, true
	}
	return "", false
}

// Lifecycle is the state of a registered lease at now.
func (v *LeaseView) Lifecycle(now time.Time) Lifecycle {
	switch {
	case v.Static && v.EvictionTimestamp.IsZero():
		return LifecycleUp // nobody heartbeats for it, and nobody needs to
	case v.IsExpired(now, 0):
		return LifecycleHeld
	case now.Sub(v.LastHeartbeat) > 2*v.RenewalInterval:
		return LifecycleSuspect
	}
	return LifecycleUp
}
