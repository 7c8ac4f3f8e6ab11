package api

import (
	"time"

	"github.com/goreka/goreka/registry"
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

// Instance is the plain JSON shape of one instance (documented in
// README.md, "Tools"). Timestamps are RFC 3339 in UTC; empty ones are left
// out.
type Instance struct {
	App              string            `json:"app"`
	ID               string            `json:"id"`
	HostName         string            `json:"hostName"`
	IPAddr           string            `json:"ipAddr"`
	Status           registry.Status   `json:"status"`
	OverriddenStatus registry.Status   `json:"overriddenStatus"`
	Lifecycle        Lifecycle         `json:"lifecycle,omitempty"`
	Static           bool              `json:"static,omitempty"`
	Port             int               `json:"port"`
	PortEnabled      bool              `json:"portEnabled"`
	SecurePort       int               `json:"securePort"`
	SecurePortOn     bool              `json:"securePortEnabled"`
	VIPAddress       string            `json:"vipAddress,omitempty"`
	SecureVIPAddress string            `json:"secureVipAddress,omitempty"`
	HomePageURL      string            `json:"homePageUrl,omitempty"`
	StatusPageURL    string            `json:"statusPageUrl,omitempty"`
	HealthCheckURL   string            `json:"healthCheckUrl,omitempty"`
	SecureHealthURL  string            `json:"secureHealthCheckUrl,omitempty"`
	AppGroupName     string            `json:"appGroupName,omitempty"`
	ASGName          string            `json:"asgName,omitempty"`
	CountryID        int               `json:"countryId"`
	DataCenter       DataCenter        `json:"dataCenter"`
	Metadata         map[string]string `json:"metadata"`
	Lease            Lease             `json:"lease"`
	LastUpdated      string            `json:"lastUpdated,omitempty"`
	LastDirty        string            `json:"lastDirty,omitempty"`
	// Revision is the registry revision of the instance's last change.
	Revision int64 `json:"revision"`
}

// DataCenter is the instance's dataCenterInfo.
type DataCenter struct {
	Name     string            `json:"name"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Lease is the instance's lease. LastHeartbeat is the real time of the last
// renewal (not Eureka's lastRenewalTimestamp quirk, see LastHeartbeat).
type Lease struct {
	RenewalIntervalSeconds int64  `json:"renewalIntervalSeconds"`
	DurationSeconds        int64  `json:"durationSeconds"`
	Registered             string `json:"registered,omitempty"`
	LastHeartbeat          string `json:"lastHeartbeat,omitempty"`
	ServiceUp              string `json:"serviceUp,omitempty"`
	Evicted                string `json:"evicted,omitempty"`
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// InstanceOf is the plain shape of a lease view. lc is "" where a lifecycle
// does not apply (removals in the change stream).
func InstanceOf(v registry.LeaseView, lc Lifecycle) Instance {
	in := v.Instance
	md := in.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return Instance{
		App: in.App, ID: in.ID(), HostName: in.HostName, IPAddr: in.IPAddr,
		Status: in.Status, OverriddenStatus: in.OverriddenStatus, Lifecycle: lc, Static: v.Static,
		Port: in.Port.Number, PortEnabled: in.Port.Enabled,
		SecurePort: in.SecurePort.Number, SecurePortOn: in.SecurePort.Enabled,
		VIPAddress: in.VIPAddress, SecureVIPAddress: in.SecureVIPAddress,
		HomePageURL: in.HomePageURL, StatusPageURL: in.StatusPageURL,
		HealthCheckURL: in.HealthCheckURL, SecureHealthURL: in.SecureHealthCheckURL,
		AppGroupName: in.AppGroupName, ASGName: in.ASGName, CountryID: in.CountryID,
		DataCenter: DataCenter{Name: in.DataCenterInfo.Name, Metadata: in.DataCenterInfo.Metadata},
		Metadata:   md,
		Lease: Lease{
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

// InstancesPage is the answer of GET /goreka/api/v1/instances.
type InstancesPage struct {
	// Revision is the registry revision the page was read at.
	Revision  int64      `json:"revision"`
	Instances []Instance `json:"instances"`
	// Continue, when not empty, is passed as ?continue= for the next page.
	Continue string `json:"continue,omitempty"`
}

// AppsAnswer is the answer of GET /goreka/api/v1/apps.
type AppsAnswer struct {
	Revision int64 `json:"revision"`
	Apps     []App `json:"apps"`
}

// App is one application with its instance counts by status.
type App struct {
	Name      string                  `json:"name"`
	Instances int                     `json:"instances"`
	Statuses  map[registry.Status]int `json:"statuses"`
}

// Change is one event of the watch and of the long poll.
type Change struct {
	Revision int64  `json:"revision"`
	Kind     string `json:"kind"`
	App      string `json:"app"`
	ID       string `json:"id"`
	// PrevStatus is the status before the change ("" if it was not
	// registered).
	PrevStatus registry.Status `json:"prevStatus,omitempty"`
	// Instance is the instance after the change; for cancel and evict
	// the last stored copy.
	Instance Instance `json:"instance"`
	FromPeer bool     `json:"fromPeer,omitempty"`
}

// Kinds of Change, one per registry.EventKind.
var kindNames = map[registry.EventKind]string{
	registry.EventRegister:             "register",
	registry.EventCancel:               "cancel",
	registry.EventEvict:                "evict",
	registry.EventStatusUpdate:         "status-update",
	registry.EventDeleteStatusOverride: "delete-status-override",
	registry.EventStatusCorrected:      "status-corrected",
	registry.EventOverrideStored:       "override-stored",
	registry.EventProbeStatus:          "probe-status",
	registry.EventHeldStatus:           "held-status",
}

// ChangeOf is the plain shape of an event.
func ChangeOf(e registry.Event) Change {
	kind, ok := kindNames[e.Kind]
	if !ok {
		kind = e.Kind.String()
	}
	return Change{Revision: e.Revision, Kind: kind, App: e.App, ID: e.ID, PrevStatus: e.Prev,
		Instance: InstanceOf(e.Lease, ""), FromPeer: e.FromPeer}
}
