package wire

import "github.com/goreka/goreka/registry"

// Prefix is where the API is mounted.
const Prefix = "/goreka/api/v1"

// EpochHeader, on the watch's answer and with a registry document's
// X-Goreka-Revision, names the server registry's sequence of revisions
// (registry.Epoch): revisions compare only within one. It is
// compat.EpochHeader's name (wire imports no compat); TestEpochHeaderIsOne
// in server holds the two together.
const EpochHeader = "X-Goreka-Epoch"

// Paging limits of GET /instances.
const (
	DefaultLimit = 1000
	MaxLimit     = 10000
)

// ErrorAnswer is the body of a 400: the offending parameter and why.
type ErrorAnswer struct {
	Error     string `json:"error"`
	Parameter string `json:"parameter,omitempty"`
}

// Instance is the plain JSON shape of one instance (documented in
// README.md, "Tools"). Timestamps are RFC 3339 in UTC; empty ones are left
// out.
type Instance struct {
	App              string             `json:"app"`
	ID               string             `json:"id"`
	HostName         string             `json:"hostName"`
	IPAddr           string             `json:"ipAddr"`
	Status           registry.Status    `json:"status"`
	OverriddenStatus registry.Status    `json:"overriddenStatus"`
	Lifecycle        registry.Lifecycle `json:"lifecycle,omitempty"`
	Static           bool               `json:"static,omitempty"` // lease-less: static or imported
	Source           string             `json:"source,omitempty"` // where an imported one comes from ("kubernetes")
	Port             int                `json:"port"`
	PortEnabled      bool               `json:"portEnabled"`
	SecurePort       int                `json:"securePort"`
	SecurePortOn     bool               `json:"securePortEnabled"`
	VIPAddress       string             `json:"vipAddress,omitempty"`
	SecureVIPAddress string             `json:"secureVipAddress,omitempty"`
	HomePageURL      string             `json:"homePageUrl,omitempty"`
	StatusPageURL    string             `json:"statusPageUrl,omitempty"`
	HealthCheckURL   string             `json:"healthCheckUrl,omitempty"`
	SecureHealthURL  string             `json:"secureHealthCheckUrl,omitempty"`
	AppGroupName     string             `json:"appGroupName,omitempty"`
	ASGName          string             `json:"asgName,omitempty"`
	CountryID        int                `json:"countryId"`
	DataCenter       DataCenter         `json:"dataCenter"`
	Metadata         map[string]string  `json:"metadata"`
	Lease            Lease              `json:"lease"`
	LastUpdated      string             `json:"lastUpdated,omitempty"`
	LastDirty        string             `json:"lastDirty,omitempty"`
	// Revision is the registry revision of the instance's last change.
	Revision int64 `json:"revision"`
}

// DataCenter is the instance's dataCenterInfo.
type DataCenter struct {
	Name     string            `json:"name"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Lease is the instance's lease. LastHeartbeat is the real time of the last
// renewal, not Eureka's lastRenewalTimestamp quirk.
type Lease struct {
	RenewalIntervalSeconds int64  `json:"renewalIntervalSeconds"`
	DurationSeconds        int64  `json:"durationSeconds"`
	Registered             string `json:"registered,omitempty"`
	LastHeartbeat          string `json:"lastHeartbeat,omitempty"`
	ServiceUp              string `json:"serviceUp,omitempty"`
	Evicted                string `json:"evicted,omitempty"`
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
	Revision int64 `json:"revision"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	App  string `json:"app"`
	ID   string `json:"id"`
	// PrevStatus is the status before the change ("" if it was not
	// registered).
	PrevStatus registry.Status `json:"prevStatus,omitempty"`
	// Instance is the instance after the change; for cancel and evict
	// the last stored copy.
	Instance Instance `json:"instance"`
	FromPeer bool     `json:"fromPeer,omitempty"`
}

// The kinds of Change, one per registry.EventKind (README.md, "Tools").
const (
	KindRegister             = "register" // also metadata updates
	KindCancel               = "cancel"
	KindEvict                = "evict"
	KindStatusUpdate         = "status-update"
	KindDeleteStatusOverride = "delete-status-override"
	KindStatusCorrected      = "status-corrected"
	KindOverrideStored       = "override-stored"
	KindProbeStatus          = "probe-status" // a health probe's DOWN verdict set or lifted
	KindHeldStatus           = "held-status"  // a held lease served as DOWN, or back
)

// Snapshot is the whole registry at a revision: the start of a watch or a
// long poll that has nothing to resume from.
type Snapshot struct {
	Revision  int64      `json:"revision"`
	Instances []Instance `json:"instances"`
}

// Lagged is the last event of a watch that fell behind: resume with
// ?since=Revision.
type Lagged struct {
	Revision int64  `json:"revision"`
	Reason   string `json:"reason"`
}

// The event types of the watch stream (the SSE "event:" field); the data of
// each is one line of JSON: a Change, a Snapshot, a Lagged.
const (
	EventChange   = "change"
	EventSnapshot = "snapshot"
	EventLagged   = "lagged"
)

// ChangesAnswer is the answer of the long poll GET /changes. Revision is
// what to pass as ?since= next. Snapshot is set instead of Changes when the
// poll had nothing to resume from (since=0, or since no longer retained).
type ChangesAnswer struct {
	Revision int64     `json:"revision"`
	Changes  []Change  `json:"changes"`
	Snapshot *Snapshot `json:"snapshot,omitempty"`
}

// XDSClient is one connected xDS client (an Envoy or a proxyless gRPC
// client) as GET /goreka/api/v1/xds/clients lists it: its node, the
// group it is served from, and the last version it ACKed of each resource
// type.
type XDSClient struct {
	Node      string `json:"node"`      // node.id
	Kind      string `json:"kind"`      // envoy or grpc
	Namespace string `json:"namespace"` // the namespace it sees
	Zone      string `json:"zone,omitempty"`
	// Acked is the last version ACKed per type: cds, eds, lds, rds (a
	// type it never ACKed is absent).
	Acked map[string]string `json:"acked"`
	// UserAgent is the node's user_agent_name and version ("envoy 1.40.0",
	// "gRPC Java 1.85.1"); Delta tells an incremental stream.
	UserAgent string `json:"userAgent,omitempty"`
	Delta     bool   `json:"delta,omitempty"`
	// Since is when the stream's first request arrived (RFC 3339, UTC).
	Since string `json:"since,omitempty"`
	// LastNACK is the last response the client rejected, nil if none.
	LastNACK *XDSNACK `json:"lastNack,omitempty"`
}

// XDSNACK is a response an xDS client rejected.
type XDSNACK struct {
	Type     string `json:"type"`               // cds, eds, lds, rds
	Rejected string `json:"rejected,omitempty"` // the version it rejected
	Detail   string `json:"detail"`             // the client's error message
	At       string `json:"at"`                 // RFC 3339, UTC
}

// XDSClientsAnswer is the answer of GET /goreka/api/v1/xds/clients.
type XDSClientsAnswer struct {
	// Enabled is false when the server serves no xDS
	// (goreka.xds.enabled=false); Clients is empty then.
	Enabled bool        `json:"enabled"`
	Clients []XDSClient `json:"clients"`
}

// XDSResolution is the answer of GET /goreka/api/v1/xds/resolve: what a
// client of one kind (envoy or grpc) is served for a name, an application's
// lower-cased name or a VIP address.
type XDSResolution struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Zone string `json:"zone,omitempty"` // the node zone the priorities are for
	// Cluster is the CDS cluster's name ("" when the name has none: no
	// instance, or not a name of this namespace).
	Cluster string `json:"cluster"`
	// HTTP2 is set when the cluster speaks HTTP/2 to its endpoints (the
	// instances declare a gRPC port).
	HTTP2 bool `json:"http2,omitempty"`
	// Listener is the api_listener a gRPC client resolves xds:///Name
	// with ("" for Envoy).
	Listener string `json:"listener,omitempty"`
	// Revision is the registry revision the namespace's resources are
	// at.
	Revision  int64         `json:"revision"`
	Endpoints []XDSEndpoint `json:"endpoints"`
}

// XDSEndpoint is one endpoint of a ClusterLoadAssignment with its
// locality.
type XDSEndpoint struct {
	HostName       string `json:"hostName,omitempty"` // the instance's Eureka hostName
	Address        string `json:"address"`
	Port           int    `json:"port"`
	Health         string `json:"health"` // HEALTHY, UNHEALTHY, DRAINING, UNKNOWN
	Weight         int    `json:"weight"`
	Zone           string `json:"zone,omitempty"`
	SubZone        string `json:"subZone,omitempty"` // gRPC clients: the instance id (one locality each)
	Priority       int    `json:"priority"`
	LocalityWeight int    `json:"localityWeight"`
}
