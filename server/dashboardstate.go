package server

import (
	"strings"
	"time"

	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/health"
	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/server/api/wire"
)

// lifecycleRows is how many instances the dashboard lists in its lifecycle
// section (counts are always complete).
const lifecycleRows = 500

// DashboardState is the DashboardSource of one namespace's dashboard: it
// reads the state of the packages the dashboard shows, each in that
// package's own type, at every page view and refresh.
type DashboardState struct {
	Environment string // eureka.environment
	Datacenter  string // eureka.datacenter
	// Status supplies General Info: the general rows of /eureka/status
	// without the environment (Spring's page has no such row, archaius is
	// excluded there).
	Status *ProcessStatus
	// Eviction, Replication and Health are the namespace's (an
	// *eviction.Evictor, *replication.Replicator and *health.Monitor); the
	// replica rows come from Status.StatusInfo, which reads them once.
	Eviction    interface{ Status() eviction.Status }
	Replication interface {
		Status() []replication.PeerStatus
	}
	Health interface {
		Status() health.Status
		Lifecycle(limit int) health.Lifecycle
	}
	// Namespace is the namespace shown (namespace.Default, or "", for
	// /eureka/).
	// Namespaces lists every namespace for the selector, the default one
	// first (nil: no selector); DefaultPath is the default namespace's
	// dashboard path (eureka.dashboard.path), the others' are /ns/{name}/.
	Namespace   string
	Namespaces  func() []string
	DefaultPath string
	// Extra add rows to General Info, in order (a relay's upstream and the
	// staleness of its copy, package relay; the Kubernetes bridge's
	// directions, package kube); nil functions and nil rows: none.
	Extra []func() [][2]string
	// XDS, when set, lists the namespace's connected xDS clients (nil: xDS
	// is off and the section is hidden); api.XDS satisfies it.
	XDS interface{ Clients() []wire.XDSClient }
}

// DashboardData reads the current state.
func (d *DashboardState) DashboardData() DashboardData {
	ns := d.Namespace
	if ns == "" {
		ns = namespace.Default
	}
	info := d.Status.StatusInfo()
	now := time.Now()
	if d.Status.Now != nil {
		now = d.Status.Now()
	}
	data := DashboardData{
		Environment:      d.Environment,
		Datacenter:       d.Datacenter,
		Now:              now,
		Uptime:           now.Sub(d.Status.Started),
		SelfPreservation: d.Eviction.Status(),
		Peers:            d.Replication.Status(),
		Health:           d.Health.Status(),
		Namespace:        ns,
	}
	for _, kv := range info.General {
		if kv[0] != "environment" {
			data.GeneralInfo = append(data.GeneralInfo, kv)
		}
	}
	for _, rows := range d.Extra {
		if rows != nil {
			data.GeneralInfo = append(data.GeneralInfo, rows()...)
		}
	}
	if self := d.Status.Self; self != nil {
		data.InstanceInfo = [][2]string{{"ipAddr", self.IPAddr}, {"status", string(self.Status)}}
	}
	data.ReplicaInfo = info.Application // the one read of the replicas
	lc := d.Health.Lifecycle(lifecycleRows)
	data.Lifecycle = &lc
	if d.XDS != nil {
		data.XDS, data.XDSClients = true, d.XDS.Clients()
	}
	if ns != namespace.Default {
		data.PathPrefix = strings.TrimSuffix(NamespacePrefix, "/") + "/" + ns
	}
	if d.Namespaces != nil {
		for _, name := range d.Namespaces() {
			href := "/" + strings.Trim(d.DefaultPath, "/")
			if name != namespace.Default {
				href = NamespacePrefix + name + "/"
			}
			data.Namespaces = append(data.Namespaces, DashboardNamespace{Name: name, Href: href, Current: name == ns})
		}
	}
	return data
}
