package replication

// peerKey identifies a peer across peer-set changes: its normalised URL and
// its credentials, so that a peer whose password changed is a new peer (its
// sender must not keep the old header).
func peerKey(p Peer) string { return normalised(p) + "\x00" + p.auth }

// SetPeers replaces the peer set while the Replicator runs (or before).
// Peers are compared by normalised URL and credentials; duplicates in peers
// are dropped and the set takes peers' order.
//
// A new peer gets an empty queue and, under a running Run, its own sender;
// it receives the changes the registry makes from then on (the registry's
// revisions delivered to OnEvent after this call; what happened before
// reaches it the way Eureka's protocol gives it to any new node: its own
// start-up sync, and heartbeats it answers 404 to, which this server answers
// with a register). A removed peer's sender is stopped (an in-flight batch
// is cancelled), its queue is freed and nothing is queued for it again;
// SetPeers returns after its sender exited. Peers in both sets keep their
// queue, sender and counters untouched. Each added and removed peer is
// logged once and counted (goreka_replication_peer_changes_total).
//
// SetPeers is safe to call concurrently with OnEvent, OnRenew, Status and
// Run; calls of SetPeers itself are serialised.
func (r *Replicator) SetPeers(peers []Peer) (added, removed []Peer) {
	r.setMu.Lock()
	defer r.setMu.Unlock()

	r.mu.Lock()
	old := r.list()
	byKey := make(map[string]*peerState, len(old))
	for _, p := range old {
		byKey[peerKey(p.peer)] = p
	}
	keep := make(map[string]bool, len(peers))
	next := make([]*peerState, 0, len(peers))
	var fresh []*peerState
	for _, p := range peers {
		k := peerKey(p)
		if keep[k] {
			continue
		}
		keep[k] = true
		if ps := byKey[k]; ps != nil {
			next = append(next, ps)
			continue
		}
		ps := r.newPeerState(p)
		// Every event after r.seen is delivered after the new set is
		// published (OnEvent reads both under r.mu), so the queue has seen
		// exactly the revisions up to r.seen: reregister's rule holds.
		ps.seen = r.seen
		next = append(next, ps)
		fresh = append(fresh, ps)
	}
	var gone []*peerState
	for _, p := range old {
		if !keep[peerKey(p.peer)] {
			gone = append(gone, p)
		}
	}
	r.set.Store(&next)
	for _, ps := range fresh {
		if r.run != nil {
			r.startLocked(ps)
		}
		added = append(added, ps.peer)
	}
	r.added += uint64(len(fresh))
	r.removed += uint64(len(gone))
	r.mu.Unlock()

	for _, ps := range fresh {
		ps.log.Info("peer added", "peers", len(next))
	}
	for _, ps := range gone {
		r.mu.Lock()
		stop, done := ps.stop, ps.done
		r.mu.Unlock()
		if stop != nil {
			stop()
			<-done
		}
		ps.mu.Lock()
		ps.gone = true
		pending := ps.q.len()
		ps.q = newQueue(1)
		ps.mu.Unlock()
		ps.log.Info("peer removed", "peers", len(next), "dropped", pending)
		removed = append(removed, ps.peer)
	}
	return added, removed
}

// PeerChanges returns how many peers SetPeers added and removed so far.
func (r *Replicator) PeerChanges() (added, removed uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.added, r.removed
}
