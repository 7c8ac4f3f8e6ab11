package peerbatch

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// Status maps a registry operation's outcome to the HTTP status Eureka
// answers it with. It is the only place that does: goreka's REST handlers
// (server/errors.go), its replication batch and the test peer use it.
//
//   - nil: 200
//   - registry.ErrNotFound (and ErrNewerCopy, which is one): 404, which makes
//     a renewing client or peer register again
//   - *registry.ConflictError: 409, the sender adopts the stored copy
//   - *registry.ValidationError: 400 (Eureka answers some of these with 500,
//     a caller's mistake is a 400 here so the sender's logs say what is wrong)
//   - *registry.LimitError: 403 with the reason (goreka.namespaces.max-instances)
//   - anything else: 500
func Status(err error) int {
	if err == nil {
		return http.StatusOK
	}
	return ErrorStatus(err)
}

// ErrorStatus is Status for an error. It is a function of its own because
// the targets of errors.As escape to the heap: the success path of a
// heartbeat must not pay for them.
func ErrorStatus(err error) int {
	var (
		conflict *registry.ConflictError
		invalid  *registry.ValidationError
		limit    *registry.LimitError
	)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return http.StatusNotFound
	case errors.As(err, &conflict):
		return http.StatusConflict
	case errors.As(err, &invalid):
		return http.StatusBadRequest
	case errors.As(err, &limit):
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

// Expiry tells whether lease expiration is enabled (Eureka's
// isLeaseExpirationEnabled; *eviction.Evictor has it).
type Expiry interface{ LeaseExpirationEnabled() bool }

// Visible is the rule of Eureka's single-instance lookups
// (AbstractInstanceRegistry.getInstanceByAppAndId): a lease that has
// expired but is not evicted yet is hidden while lease expiration is
// enabled. While self-preservation disables expiration it is shown. A nil
// expiry hides nothing.
func Visible(v registry.LeaseView, now time.Time, expiry Expiry) bool {
	return expiry == nil || !expiry.LeaseExpirationEnabled() || !v.IsExpired(now, 0)
}

// Applier applies replicated items to a registry as a Eureka server does.
type Applier struct {
	Registry *registry.Registry
	// Expiry decides, with Visible, which leases a StatusUpdate or a
	// DeleteStatusOverride cannot see; nil: every registered lease.
	Expiry Expiry
	// Now is the clock of Visible; nil: time.Now.
	Now func() time.Time
}

// Batch answers a batch's items in order, one response each. Every item is
// applied as a replicated operation (never re-replicated). mayWrite, when
// not nil, is asked for each item's application first: an item it refuses
// is answered 403 and changes nothing (a peer user restricted to some
// apps, goreka.security.users).
func (a *Applier) Batch(items []compat.ReplicationItem, mayWrite func(app string) bool) []compat.ReplicationResponse {
	out := make([]compat.ReplicationResponse, len(items))
	for i := range items {
		if mayWrite != nil && !mayWrite(items[i].AppName) {
			out[i] = compat.ReplicationResponse{StatusCode: http.StatusForbidden}
			continue
		}
		out[i] = a.Apply(&items[i])
	}
	return out
}

// Apply runs one replicated item through the registry operation the REST
// call of its action reaches, and answers it through Status, with the
// stored copy for a 409. Only the item's own shape is checked here; what
// an operation accepts is the registry's to decide.
func (a *Applier) Apply(it *compat.ReplicationItem) compat.ReplicationResponse {
	err := a.apply(it)
	resp := compat.ReplicationResponse{StatusCode: Status(err)}
	var conflict *registry.ConflictError
	if errors.As(err, &conflict) {
		resp.Entity = &conflict.Stored
	}
	return resp
}

func (a *Applier) apply(it *compat.ReplicationItem) error {
	switch it.Action {
	case compat.ActionRegister:
		if it.Instance == nil || it.Instance.Instance == nil {
			return &registry.ValidationError{Msg: "register item without an instance"}
		}
		in := it.Instance.Instance.Clone()
		if in.LeaseInfo.Duration <= 0 {
			in.LeaseInfo.Duration = it.Instance.Duration
		}
		if in.LeaseInfo.RenewalInterval <= 0 {
			in.LeaseInfo.RenewalInterval = it.Instance.RenewalInterval
		}
		_, err := a.Registry.RegisterFor(it.AppName, in, true)
		return err
	case compat.ActionHeartbeat:
		override, err := registry.ParseStatusParam("overriddenStatus", it.OverriddenStatus, false)
		if err != nil {
			return err
		}
		return a.Registry.Renew(registry.RenewRequest{App: it.AppName, ID: it.ID, FromPeer: true,
			LastDirtyTimestamp: millis(it), OverriddenStatus: override})
	case compat.ActionCancel:
		return a.Registry.Cancel(it.AppName, it.ID, true)
	case compat.ActionStatusUpdate:
		if err := a.lookUp(it); err != nil {
			return err
		}
		st, err := registry.ParseStatusParam("status", it.Status, true)
		if err != nil {
			return err
		}
		return a.Registry.StatusUpdate(it.AppName, it.ID, st, millis(it), true)
	case compat.ActionDeleteStatusOverride:
		if err := a.lookUp(it); err != nil {
			return err
		}
		st, err := registry.ParseStatusParam("status", it.Status, false)
		if err != nil {
			return err
		}
		return a.Registry.DeleteStatusOverride(it.AppName, it.ID, st, millis(it), true)
	}
	return &registry.ValidationError{Msg: fmt.Sprintf("unknown replication action %q", it.Action)}
}

// lookUp is the lookup InstanceResource.statusUpdate and
// deleteStatusUpdate start with, as the REST path makes it: ErrNotFound
// unless the instance is registered and Visible. An item without an
// application or id is left to the operation, which answers what is
// missing (400).
func (a *Applier) lookUp(it *compat.ReplicationItem) error {
	if it.AppName == "" || it.ID == "" {
		return nil
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	return LookUp(a.Registry, it.AppName, it.ID, now(), a.Expiry)
}

// LookUp is the lookup Eureka's InstanceResource status update and
// override removal start with, for the REST path and the batch alike:
// registry.ErrNotFound (404) unless instance id of app is registered and
// Visible at now.
func LookUp(reg *registry.Registry, app, id string, now time.Time, expiry Expiry) error {
	if v, ok := reg.Get(app, id); !ok || !Visible(v, now, expiry) {
		return registry.ErrNotFound
	}
	return nil
}

func millis(it *compat.ReplicationItem) time.Time {
	if !it.HasLastDirty {
		return time.Time{}
	}
	return time.UnixMilli(it.LastDirtyTimestamp)
}
