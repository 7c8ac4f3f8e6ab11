package eviction

import "time"

// The start-up gate and the lease-expiration switch are decisions about the
// same state the eviction job keeps (the start-up time, the expected
// clients, the renewals of the last minute), so the Evictor answers them
// itself: it satisfies server.Gate and server.Expiry structurally, and
// neither package imports the other.

// OpenAfterSync is Spring's InstanceRegistry.openForTraffic after the
// start-up sync: the instances the sync copied become the expected clients,
// with DefaultOpenForTrafficCount standing in when it copied none, and the
// server opens for traffic (OpenForTraffic).
func (e *Evictor) OpenAfterSync(synced int) {
	count := synced
	if count == 0 {
		count = e.cfg.DefaultOpenForTrafficCount
	}
	e.OpenForTraffic(count)
}

// OpenAfterStartup is OpenAfterSync at the end of goreka's start-up, which
// may have restored restored instances from its warm-restart snapshot
// before the sync copied synced. When no peer answered (or there are none)
// and the snapshot restored instances, its renewing leases are the best
// estimate of the clients that will renew. When peers answered, their
// count wins, as in Eureka: restored instances that died while this node
// was down are not counted, so they cannot hold self-preservation on and
// keep themselves from being evicted.
func (e *Evictor) OpenAfterStartup(synced, restored int) {
	if restored > 0 && synced == 0 {
		synced = e.reg.Renewing()
	}
	e.OpenAfterSync(synced)
}

// AllowAccess is Eureka's shouldAllowAccess, the gate in front of registry
// reads (they answer 403 while it is false). After a start-up that expected
// no clients (the sync copied nothing and DefaultOpenForTrafficCount is 0,
// Netflix's peerInstancesTransferEmptyOnStartup), reads are refused until
// WaitTimeWhenSyncEmpty has passed since OpenForTraffic.
//
// A read that arrives before OpenForTraffic, during the start-up sync,
// waits for it up to SyncReadWait and is refused after that: answering from
// a half-copied registry would tell clients that instances are gone.
func (e *Evictor) AllowAccess() bool {
	if !e.isOpen() && !e.waitOpen() {
		return false
	}
	if !e.emptyOnStartup.Load() {
		return true
	}
	e.mu.Lock()
	startup := e.startup
	e.mu.Unlock()
	return e.cfg.Now().After(startup.Add(e.cfg.WaitTimeWhenSyncEmpty))
}

// waitOpen waits up to SyncReadWait for OpenForTraffic and reports whether
// it came.
func (e *Evictor) waitOpen() bool {
	if e.cfg.SyncReadWait <= 0 {
		return false
	}
	t := time.NewTimer(e.cfg.SyncReadWait)
	defer t.Stop()
	select {
	case <-e.opened:
		return true
	case <-t.C:
		return false
	}
}

// LeaseExpirationEnabled is Eureka's isLeaseExpirationEnabled, for reads
// that hide expired leases (server.Expiry). It reads two registry counters
// and takes no lock of the Evictor's: single-instance reads call it.
func (e *Evictor) LeaseExpirationEnabled() bool {
	th := Threshold(e.reg.ExpectedClients(), e.cfg.ExpectedClientRenewalInterval, e.cfg.RenewalPercentThreshold)
	return LeaseExpirationEnabled(e.cfg.EnableSelfPreservation, th, e.reg.RenewsLastMinute())
}
