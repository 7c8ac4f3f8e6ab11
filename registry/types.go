package registry

import (
	"maps"
	"strings"
	"time"
)

// Status is an instance status, spelled exactly as Eureka's InstanceStatus enum.
type Status string

// The statuses Eureka knows. Anything else is invalid on the REST API and
// decodes as StatusUnknown from a lenient wire decoder, as the Java codec does.
const (
	StatusUp           Status = "UP"
	StatusDown         Status = "DOWN"
	StatusStarting     Status = "STARTING"
	StatusOutOfService Status = "OUT_OF_SERVICE"
	StatusUnknown      Status = "UNKNOWN"
)

// ActionType says how an instance changed, as written in a delta.
type ActionType string

// Eureka's action types.
const (
	ActionAdded    ActionType = "ADDED"
	ActionModified ActionType = "MODIFIED"
	ActionDeleted  ActionType = "DELETED"
)

// Port is a port number with its enabled flag (Eureka's PortWrapper).
type Port struct {
	Number  int
	Enabled bool
}

// Data-center names and the Java class names a wire codec writes for them.
const (
	DataCenterMyOwn   = "MyOwn"
	DataCenterAmazon  = "Amazon"
	DataCenterNetflix = "Netflix"
)

// DataCenterInfo is where an instance runs. Metadata is only used by the
// Amazon kind (instance-id, availability-zone, ...).
type DataCenterInfo struct {
	Name     string
	Metadata map[string]string
}

// LeaseInfo holds the lease timings a registrant asks for. The timestamps a
// server publishes come from the lease, not from here.
type LeaseInfo struct {
	RenewalInterval time.Duration // renewalIntervalInSecs, 0 = DefaultRenewalInterval
	Duration        time.Duration // durationInSecs, 0 = DefaultLeaseDuration
}

// WithDefaults fills a zero or negative timing with Eureka's default. The
// registry stores instances with their timings defaulted, so the lease and
// every view read them from one place.
func (li LeaseInfo) WithDefaults() LeaseInfo {
	if li.RenewalInterval <= 0 {
		li.RenewalInterval = DefaultRenewalInterval
	}
	if li.Duration <= 0 {
		li.Duration = DefaultLeaseDuration
	}
	return li
}

// Instance is one registered application instance (Eureka's InstanceInfo),
// as registrants describe it. Values reachable from the registry are never
// mutated after they are stored: every change stores a modified copy, so a
// reader holding an *Instance may use it without locks.
type Instance struct {
	InstanceID       string // may be empty; ID() then falls back
	HostName         string
	App              string // upper case
	AppGroupName     string
	IPAddr           string
	SID              string
	Status           Status
	OverriddenStatus Status
	Port             Port
	SecurePort       Port
	CountryID        int
	DataCenterInfo   DataCenterInfo
	LeaseInfo        LeaseInfo
	Metadata         map[string]string

	HomePageURL          string
	StatusPageURL        string
	HealthCheckURL       string
	SecureHealthCheckURL string
	VIPAddress           string
	SecureVIPAddress     string
	ASGName              string

	IsCoordinatingDiscoveryServer bool
	LastUpdatedTimestamp          time.Time
	LastDirtyTimestamp            time.Time
	ActionType                    ActionType
}

// ID is the registry key of the instance: InstanceID, else the Amazon
// instance-id, else HostName (InstanceInfo.getId).
func (in *Instance) ID() string {
	if in.InstanceID != "" {
		return in.InstanceID
	}
	if in.DataCenterInfo.Name == DataCenterAmazon {
		if id := in.DataCenterInfo.Metadata["instance-id"]; id != "" {
			return id
		}
	}
	return in.HostName
}

// Clone returns a copy that shares nothing mutable with in.
func (in *Instance) Clone() *Instance {
	c := *in
	c.Metadata = maps.Clone(in.Metadata)
	c.DataCenterInfo.Metadata = maps.Clone(in.DataCenterInfo.Metadata)
	return &c
}

// Normalize upper-cases the application and group names, as Eureka's
// InstanceInfo.Builder does, and fills the defaults of a missing status.
func (in *Instance) Normalize() {
	in.App = strings.ToUpper(in.App)
	in.AppGroupName = strings.ToUpper(in.AppGroupName)
	if in.Status == "" {
		in.Status = StatusUp
	}
	if in.OverriddenStatus == "" {
		in.OverriddenStatus = StatusUnknown
	}
}

// LeaseView is an instance together with its lease times, as a server
// publishes it (Eureka's decorateInstanceInfo).
type LeaseView struct {
	Instance *Instance
	// RegistrationTimestamp is when the current lease was created.
	RegistrationTimestamp time.Time
	// LastRenewalTimestamp is the lease's lastUpdateTimestamp (see Lease).
	LastRenewalTimestamp time.Time
	EvictionTimestamp    time.Time
	ServiceUpTimestamp   time.Time
	// RenewalInterval and Duration are the registrant's, defaulted.
	RenewalInterval time.Duration
	Duration        time.Duration
	// Revision is the registry revision of the lease's last change (0 in
	// views that did not come from a registry, e.g. decoded from a peer).
	Revision int64
	// LastHeartbeat is when the lease was last renewed (or registered, or
	// restored), by the instance or a peer: plain time, without the expiry
	// quirk of LastRenewalTimestamp.
	LastHeartbeat time.Time
	// LastClientRenewal is the last heartbeat or registration this server
	// received from the instance itself rather than from a peer; zero if
	// none. The health prober uses it to know which instances heartbeat to
	// this node.
	LastClientRenewal time.Time
	// DownBy says why goreka itself serves the instance as DOWN (MarkDown);
	// 0 if it does not.
	DownBy DownCause
	// Static marks a lease-less registration: it never expires, is never
	// evicted, is not expected to renew and is not replicated. Source is
	// empty for a static one (goreka.static-instances) and names where an
	// imported one comes from (Import: "kubernetes").
	Static bool
	Source string
}

// Application is one application's instances, sorted by instance id.
type Application struct {
	Name      string
	Instances []LeaseView
}

// Applications is a consistent view of a set of applications, sorted by name.
type Applications struct {
	// VersionDelta is versions__delta (1 for a full registry).
	VersionDelta int64
	// HashCode is apps__hashcode for the whole registry at the time of the view.
	HashCode string
	// Revision is the registry's revision when the view was taken: the view
	// holds every change up to it and none after.
	Revision int64
	// Epoch is the Registry.Epoch Revision counts in, when known (a goreka
	// server's X-Goreka-Epoch); empty otherwise.
	Epoch string
	Apps  []Application
}
