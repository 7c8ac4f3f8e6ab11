// Package relay makes a goreka a site-level registry in front of the group
// above it (goreka.relay.upstream): the relay keeps its own clients'
// leases (the normal registry, evicted on its own schedule), forwards every
// local change upstream as the instance's own client would, sends the
// heartbeats of its clients upstream aggregated, and serves reads as the
// union of its clients and a copy of the upstream registry.
//
// Forwarding (forward.go). Local changes (registry events that did not come
// from a peer) put their instance's key in an ordered queue, once (one of
// eight, by the key's hash, each with its worker: different instances are
// sent at once, one instance's changes by one worker): a key already
// queued is not queued again, and the worker reads the instance's
// current state from the local registry when it gets to the key (register
// it, or cancel it when it is gone), so an instance's changes reach the
// upstream in order and a burst of changes to one instance is one call.
// Status overrides made at the relay (PUT/DELETE .../status) are sent as
// such after the registration. A failed call keeps the key at the head of
// the queue and retries after a back-off (at most a heartbeat interval);
// the queue is bounded (Config.MaxQueue): past it the relay drops nothing
// but marks itself for a resync, which walks the local registry and the
// instances it registered upstream and queues what differs. Writes are
// plain client calls (no x-netflix-discovery-replication), so that the
// upstream replicates them to its own peers.
//
// Heartbeats (heartbeat.go). Clients' heartbeats that found their lease are
// collected; once per Config.HeartbeatInterval the relay sends them: to a
// goreka upstream (found by posting an empty list to compat.RenewalsPath,
// which a stock server answers 404) in one POST whose items the upstream
// applies as client renewals; to a stock upstream one PUT per instance,
// paced over the interval. An item answered 404 (the upstream lost or never
// had the instance, or holds an older copy) queues the instance for
// registration, which is how the upstream converges after a partition.
//
// Reads (union.go). The upstream registry is copied as a remote region is
// (package region: full, then deltas checked by the reconcile hash, the
// last good copy kept; a full fetch bounded by its progress, not by the
// fetch interval), optionally only the applications of Config.FetchApps;
// a goreka upstream's watch (watch.go) puts each of its changes into the
// copy at once (region.Remote.Apply), the fetches every FetchInterval
// staying the copy's check, so that a registration at another relay of
// the same core reaches this relay's clients in milliseconds plus this
// relay's document rebuild; an upstream whose documents name no revision
// (a relay) has its watch wake a delta fetch instead. Documents (package
// document's Upstream) are the union of the local registry and the copy,
// a local instance replacing the copy's instance of the same id (its own
// echo), and instances removed locally hidden in the copy until the copy
// drops them too. Every document's
// apps__hashcode covers what it serves, the delta's that of the union's
// full registry, so clients applying deltas stay consistent.
//
// Loops (chain.go). Every call the relay makes carries ChainHeader, the ids
// of the relays an instance's writes went through, this relay's last; a
// relay refuses (508) a request whose chain holds its own id, and stops
// forwarding an instance whose write was refused so. A configuration whose
// upstream is the relay itself is refused by New.
//
// Read replica (Config.ReadOnly): the relay keeps no leases; every write
// is proxied to the upstream and answered with its status.
package relay
