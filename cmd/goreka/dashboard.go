package main

import (
	"github.com/goreka/goreka/server"
)

// DashboardData feeds the dashboard (server.DashboardSource): configuration,
// the eviction job's self-preservation state, replication health and the
// same general info as GET /eureka/status.
func (a *app) DashboardData() server.DashboardData {
	now := a.now()
	ev := a.evictor.Status()
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
	peers := a.repl.Peers()
	d.RegisteredReplicas, d.AvailableReplicas, d.UnavailableReplicas = a.repl.Replicas()
	host := make(map[string]string, len(peers))
	for _, p := range peers {
		host[p.URL] = p.Host
	}
	for _, ps := range a.repl.Status() {
		d.Peers = append(d.Peers, server.DashboardPeer{
			URL: ps.URL, Host: host[ps.URL], State: ps.State, QueueDepth: ps.QueueDepth, Lag: ps.Lag,
			LastSuccess: ps.LastSuccess, LastError: ps.LastError, LastErrorAt: ps.LastErrorAt,
		})
	}
	return d
}
