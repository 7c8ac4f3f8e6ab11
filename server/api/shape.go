package api

import (
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api/wire"
)

// Lifecycle is what the lease says about an instance, beside the status its
// registrant reports. Heartbeats are not changes, so it is derived when read
// from the live lease, never indexed:
//
//   - "up": renewed within two renewal intervals;
//   - "suspect": more than two renewal intervals since the last heartbeat,
//     the lease not yet expired;
//   - "held": the lease has expired but the instance is still registered
//     (self-preservation, or lease expiration switched off, keeps it).
type Lifecycle = registry.Lifecycle

// The lifecycles the API filters by.
const (
	LifecycleUp      = registry.LifecycleUp
	LifecycleSuspect = registry.LifecycleSuspect
	LifecycleHeld    = registry.LifecycleHeld
)

// parseLifecycle accepts the states a registered instance can be in.
func parseLifecycle(s string) (Lifecycle, bool) {
	l, ok := registry.ParseLifecycle(s)
	return l, ok && l != registry.LifecycleGone
}

// LastHeartbeat is when the lease was last renewed (its registration if it
// never was).
func LastHeartbeat(v registry.LeaseView) time.Time { return v.LastHeartbeat }

// LifecycleOf derives the lifecycle of a live lease at now.
func LifecycleOf(v registry.LeaseView, now time.Time) Lifecycle { return v.Lifecycle(now) }

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// InstanceOf is the plain shape of a lease view. lc is "" where a lifecycle
// does not apply (removals in the change stream).
func InstanceOf(v registry.LeaseView, lc Lifecycle) wire.Instance {
	in := v.Instance
	md := in.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return wire.Instance{
		App: in.App, ID: in.ID(), HostName: in.HostName, IPAddr: in.IPAddr,
		Status: in.Status, OverriddenStatus: in.OverriddenStatus, Lifecycle: lc, Static: v.Static, Source: v.Source,
		Port: in.Port.Number, PortEnabled: in.Port.Enabled,
		SecurePort: in.SecurePort.Number, SecurePortOn: in.SecurePort.Enabled,
		VIPAddress: in.VIPAddress, SecureVIPAddress: in.SecureVIPAddress,
		HomePageURL: in.HomePageURL, StatusPageURL: in.StatusPageURL,
		HealthCheckURL: in.HealthCheckURL, SecureHealthURL: in.SecureHealthCheckURL,
		AppGroupName: in.AppGroupName, ASGName: in.ASGName, CountryID: in.CountryID,
		DataCenter: wire.DataCenter{Name: in.DataCenterInfo.Name, Metadata: in.DataCenterInfo.Metadata},
		Metadata:   md,
		Lease: wire.Lease{
			RenewalIntervalSeconds: int64(v.RenewalInterval / time.Second),
			DurationSeconds:        int64(v.Duration / time.Second),
			Registered:             stamp(v.RegistrationTimestamp),
			LastHeartbeat:          stamp(LastHeartbeat(v)),
			ServiceUp:              stamp(v.ServiceUpTimestamp),
			Evicted:                stamp(v.EvictionTimestamp),
		},
		LastUpdated: stamp(in.LastUpdatedTimestamp),
		LastDirty:   stamp(in.LastDirtyTimestamp),
		Revision:    v.Revision,
	}
}

// Kinds of Change, one per registry.EventKind.
var kindNames = map[registry.EventKind]string{
	registry.EventRegister:             wire.KindRegister,
	registry.EventCancel:               wire.KindCancel,
	registry.EventEvict:                wire.KindEvict,
	registry.EventStatusUpdate:         wire.KindStatusUpdate,
	registry.EventDeleteStatusOverride: wire.KindDeleteStatusOverride,
	registry.EventStatusCorrected:      wire.KindStatusCorrected,
	registry.EventOverrideStored:       wire.KindOverrideStored,
	registry.EventProbeStatus:          wire.KindProbeStatus,
	registry.EventHeldStatus:           wire.KindHeldStatus,
}

// ChangeOf is the plain shape of an event.
func ChangeOf(e registry.Event) wire.Change {
	kind, ok := kindNames[e.Kind]
	if !ok {
		kind = e.Kind.String()
	}
	return wire.Change{Revision: e.Revision, Kind: kind, App: e.App, ID: e.ID, PrevStatus: e.Prev,
		Instance: InstanceOf(e.Lease, ""), FromPeer: e.FromPeer}
}
