package replication

import (
	"strings"

	"github.com/goreka/goreka/registry"
)

// Replicas computes the registered, available and unavailable replicas of
// the status page as Eureka's StatusUtil does: every peer is registered; a
// peer is available iff the local registry holds an instance of this
// server's application (appName, e.g. EUREKA-SERVER) whose hostName is the
// host of the peer's URL. Hosts compare case-insensitively (DNS names do);
// Eureka compares exactly. The URLs are the peers' scrubbed URLs.
func Replicas(reg *registry.Registry, appName string, peers []Peer) (registered, available, unavailable []string) {
	app, _ := reg.Application(appName)
	for _, p := range peers {
		registered = append(registered, p.URL)
		up := false
		for _, v := range app.Instances {
			if v.Instance != nil && strings.EqualFold(v.Instance.HostName, p.Host) {
				up = true
				break
			}
		}
		if up {
			available = append(available, p.URL)
		} else {
			unavailable = append(unavailable, p.URL)
		}
	}
	return registered, available, unavailable
}
