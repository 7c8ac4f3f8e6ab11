package replication

// Replicas computes the registered, available and unavailable replicas of
// the status page and the dashboard from replication health: every peer is
// registered; a peer is available when the last batch (or idle probe) sent
// to it succeeded, unavailable when it failed or nothing was answered yet.
// Eureka's StatusUtil instead calls a peer available when the local
// registry holds an instance of this server's application whose hostName is
// the host of the peer's URL, which lists a StatefulSet's pods (registered
// under their pod names, addressed by a Service name or an IP) as
// unavailable while they replicate fine. The URLs are the peers' scrubbed
// URLs, in peer order.
func (r *Replicator) Replicas() (registered, available, unavailable []string) {
	for _, s := range r.Status() {
		registered = append(registered, s.URL)
		if s.Available {
			available = append(available, s.URL)
		} else {
			unavailable = append(unavailable, s.URL)
		}
	}
	return registered, available, unavailable
}
