package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/goreka/goreka/health"
	"github.com/goreka/goreka/server"
)

// lifecycleRows is how many instances the dashboard lists in its lifecycle
// section (counts are always complete).
const lifecycleRows = 500

// DashboardData feeds the dashboard (server.DashboardSource): configuration,
// the eviction job's self-preservation state, replication health and the
// same general info as GET /eureka/status.
func (a *app) DashboardData() server.DashboardData { return a.dashboardData(a.stack) }

// dashboardData is the dashboard of one namespace's stack s.
func (a *app) dashboardData(s *stack) server.DashboardData {
	now := a.now()
	ev := s.evictor.Status()
	info := a.StatusInfo()
	d := server.DashboardData{
		Environment:             a.cfg.Environment,
		Datacenter:              a.cfg.Datacenter,
		Now:                     now,
		Uptime:                  now.Sub(a.started),
		SelfPreservationEnabled: ev.SelfPreservationEnabled,
		LeaseExpirationEnabled:  ev.LeaseExpirationEnabled,
		RenewsThreshold:         ev.Threshold,
		RenewsLastMinute:        ev.RenewsLastMinute,
		ExpectedClients:         ev.ExpectedClients,
		Banner:                  ev.Banner,
		RenewsHistory:           ev.RenewsHistory,
	}
	// Spring's page has no environment row in General Info (archaius is
	// excluded), unlike /eureka/status.
	for _, kv := range info.General {
		if kv[0] != "environment" {
			d.GeneralInfo = append(d.GeneralInfo, kv)
		}
	}
	if a.selfIn != nil {
		d.InstanceInfo = [][2]string{{"ipAddr", a.selfIn.IPAddr}, {"status", string(a.selfIn.Status)}}
	}
	peers := s.repl.Peers()
	d.RegisteredReplicas, d.AvailableReplicas, d.UnavailableReplicas = s.repl.Replicas()
	host := make(map[string]string, len(peers))
	for _, p := range peers {
		host[p.URL] = p.Host
	}
	for _, ps := range s.repl.Status() {
		d.Peers = append(d.Peers, server.DashboardPeer{
			URL: ps.URL, Host: host[ps.URL], State: ps.State, QueueDepth: ps.QueueDepth, Lag: ps.Lag,
			LastSuccess: ps.LastSuccess, LastError: ps.LastError, LastErrorAt: ps.LastErrorAt,
		})
	}
	dashboardHealth(s, &d)
	a.dashboardNamespaces(s, &d)
	return d
}

// dashboardNamespaces fills the namespace selector: the default
// namespace's dashboard (eureka.dashboard.path) and /ns/{name}/ for each
// other one.
func (a *app) dashboardNamespaces(s *stack, d *server.DashboardData) {
	d.Namespace = s.name
	if s.name != defaultNamespace {
		d.PathPrefix = strings.TrimSuffix(server.NamespacePrefix, "/") + "/" + s.name
	}
	if a.ns == nil {
		return
	}
	for _, name := range a.ns.names() {
		href := "/" + strings.Trim(a.cfg.Dashboard.Path, "/")
		if name != defaultNamespace {
			href = server.NamespacePrefix + name + "/"
		}
		d.Namespaces = append(d.Namespaces, server.DashboardNamespace{Name: name, Href: href, Current: name == s.name})
	}
}

// dashboardHealth adds the lifecycle and the probe guard's banner.
func dashboardHealth(s *stack, d *server.DashboardData) {
	d.HealthAlert = s.health.Status().Alert
	lc := s.health.Lifecycle(lifecycleRows)
	for _, st := range health.States {
		d.Lifecycle = append(d.Lifecycle, server.DashboardCount{State: string(st), Count: lc.Counts[st]})
	}
	d.LifecycleMore = lc.Truncated
	const f = "2006-01-02 15:04:05 MST"
	for _, e := range lc.Entries {
		row := server.DashboardLifecycle{App: e.App, ID: e.ID, State: string(e.State), Status: string(e.Status),
			LastHeartbeat: e.LastHeartbeat.Format(f)}
		if p := e.Probe; p != nil {
			if !p.LastAt.IsZero() {
				row.LastProbe = fmt.Sprintf("%s: %s", p.LastAt.Format(f), p.Last.Detail)
				if p.Failures > 1 {
					row.LastProbe += fmt.Sprintf(" (%d failures)", p.Failures)
				}
			}
			row.Note = p.DownReason
			if p.Reports > 0 {
				if row.Note != "" {
					row.Note += "; "
				}
				row.Note += fmt.Sprintf("%d report(s), last %s ago from %s: %s", p.Reports,
					d.Now.Sub(p.LastReport).Round(time.Second), p.Reporter, p.Reason)
			}
		}
		d.LifecycleInstances = append(d.LifecycleInstances, row)
	}
}
