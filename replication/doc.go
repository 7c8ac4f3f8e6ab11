// Package replication sends this server's registry changes to its peers,
// copies a peer's registry at start-up and registers this server with its
// peers, speaking Eureka's peer protocol so that goreka and stock Netflix or
// Spring Eureka servers can form one cluster.
//
// # Peers and self-exclusion
//
// Peers come from eureka.client.service-url (the own zone's list first, then
// the other zones'), minus this server. Eureka drops every URL whose host is
// this server's host name, ignoring the port, so two servers on one machine
// silently stop replicating to each other. goreka compares host and port:
// with eureka.server.my-url set, only a URL equal to it (normalised:
// scheme and host case, default port, trailing slash, credentials) is this
// server; otherwise a URL is this server when its port is server.port and its
// host is eureka.instance.hostname, the instance IP address, or a loopback
// name (localhost, 127.0.0.0/8, ::1) — a loopback URL on our own port can
// only reach this process. Credentials in a URL (http://user:pass@host/)
// become a preemptive basic-auth header on every call to that peer and are
// scrubbed from every URL shown or logged.
//
// # Peer set changes
//
// Replicator.SetPeers and SelfRegistrar.SetPeers replace the peer set while
// the server runs (cmd calls them when DNS or the configuration file gives
// a new list). A new peer gets an empty queue and a sender, and the changes
// the registry makes from then on; the rest reaches it as Eureka's protocol
// gives it to any new node: its own start-up sync, and heartbeats it
// answers 404 to, which are answered with a register. Its queue counts as
// having seen every revision delivered before it joined, so that rule
// (below) holds from the first heartbeat. A removed peer's sender is
// stopped, its in-flight batch cancelled, its queue freed; nothing is
// queued for it again. Peers in both sets are not touched. Every added and
// removed peer is logged once (msg "peer added" / "peer removed") and
// counted in goreka_replication_peer_changes_total{change}; the peer count
// is goreka_replication_peers.
//
// # Queues and batches
//
// The registry reports each change to OnEvent in revision order, one at a
// time, and each heartbeat to OnRenew; neither blocks: they put one task per
// peer into that peer's bounded queue and return. Changes that came from a
// peer, evictions, status corrections on renew and adopted overrides are not
// replicated. A queue holds at most max-elements-in-peer-replication-pool
// tasks and keeps each instance's tasks in the order the registry made the
// changes. Eureka's batcher keys tasks by "<action>#<APP>/<id>" and lets a
// newer task replace the pending one of the same key, which reorders an
// instance's changes: override OUT_OF_SERVICE then UP reaches the peer as
// UP alone (which leaves no override there), override, remove, remove with
// value=UP loses the first removal's UNKNOWN, and a register can land after
// its own cancel. goreka only lets an instance's last pending task absorb a
// newer one of the same idempotent action (heartbeat, register, cancel), so
// a steady cluster of N instances still needs about N entries per peer.
// Heartbeats come concurrently, not in revision order: a heartbeat that read
// a lease whose last change the queue has not seen yet is not queued (it
// would overtake that change; counted as held back), and a peer's 409 to a
// heartbeat is adopted only while the local lease is still the one the
// heartbeat was sent for (registry.Adopt), so it never undoes a newer local
// cancel or override removal.
// When the queue is full, the oldest task's instance is marked for a resync
// instead of losing the change, as Eureka's queue does (a 100k restart storm
// through Eureka's 10,000-item pool left a peer 16,000 instances short,
// BENCHMARKS.md): all its pending tasks leave the queue, and a resync later
// sends the instance's current state read from the registry when the batch
// is formed: a Register of the local copy, or a Cancel when it is gone, plus
// the current override (StatusUpdate) or its removal (DeleteStatusOverride)
// when an override change was among the replaced tasks. While marked, an
// instance's new tasks fold into the mark; after the resync is taken they
// queue behind it, so the per-instance order holds. Marks go out before
// queued tasks (they are older) and without the batch delay. The marks are
// bounded by the registry's size plus the queue's bound, not by the burst:
// beyond that, tasks are dropped and counted. A dead peer therefore costs at
// most the queue plus one mark per instance, and on its return it is sent
// the current state of everything it missed.
// Series: goreka_replication_resync_pending (marks waiting),
// goreka_replication_resyncs_total (instances marked),
// goreka_replication_resynced_total (resyncs sent), per peer.
//
// One sender per peer sends a batch of up to 250 tasks to
// POST {peer}peerreplication/batch/ once 250 are pending or the oldest has
// waited 500 ms (Eureka's constants), with up to max-batches-in-flight
// batches in flight (see Pipelining below).
// Tasks expire as in Eureka: register and heartbeat after the instance's
// renewal interval (a newer heartbeat is due by then), the others after
// max-time-for-replication; expired tasks are dropped and counted.
//
// Answers are handled as Eureka's ReplicationTaskProcessor and PeerEurekaNode
// do. A 503 or a timeout means congestion, a network error is transient: the
// batch goes back to the front of the queue (minus tasks expired meanwhile) and the sender backs off, 1 s for congestion and 100 ms
// for network errors, doubling per consecutive failure up to 30 s, with
// jitter into [d/2, d] from a seeded source so that servers do not retry in
// step. Any other status, an unreadable body and a response list of the
// wrong length drop the batch and are counted. (Eureka retries an unreadable
// body as a network error; goreka does not, because a peer that answers
// garbage once will answer garbage again.) Per item: 2xx is done; a
// heartbeat answered 404 makes the sender queue a Register of the local copy
// for that peer (read under the queue's lock, and only when the queue has
// already seen the revision of the copy's last change, so that it never
// overtakes a newer change such as a cancel); a heartbeat answered with the peer's newer copy (409) makes
// this server adopt that copy locally (registry.Adopt), unless
// sync-when-timestamp-differs is off.
//
// # Pipelining
//
// Up to goreka.replication.max-batches-in-flight batches (default 4) are in
// flight per peer: each is encoded, posted and answered by its own
// goroutine while the sender forms the next, so a burst reaches the peer at
// about the speed the sender encodes it, not at one round trip per 250
// items. Per-instance order holds because two batches in flight never carry
// the same instance: a batch is formed from the front of the queue (resync
// marks first) leaving out, in place, every task and mark of an instance
// that a batch in flight carries; they go into a later batch once that one
// returned. The peer may answer, and apply, the batches in any order: an
// instance's changes are in one batch at a time, applied item by item in
// order, which is all a stock Java peer (it applies each item as it comes,
// with its lastDirtyTimestamp rules) or goreka needs. No receiver-side
// ordering (by revision or lastDirtyTimestamp) is assumed, so mixed groups
// work unchanged; Eureka's 20 batching workers per peer keep no order at
// all. A failed batch goes back to the front of the queue and its instances
// leave the in-flight set under one lock, so no later batch can take a newer
// task of theirs first; the resync-instead-of-drop rules are unchanged.
// Batches in flight together usually fail together (a peer went away): the
// first failure of such a round backs off and grows the streak, the others
// are put back and counted, and the success of a batch that was in flight
// with that failure does not end the back-off. Nothing new is formed during
// a back-off; batches in flight finish. 1 sends a batch only after the
// previous one was answered. The in-flight count per peer is
// goreka_replication_batches_in_flight.
//
// # Timeouts
//
// peer-node-connect-timeout-ms defaults to 1 s and peer-node-read-timeout-ms
// to 5 s, Netflix's values. Spring lowers both to 200 ms, which is less than
// a busy peer needs to apply 250 items: the sender then counts a timeout,
// sends the same batch again and so adds load to the peer that was already
// slow — the replication storms and "read timeout" logs users report.
// A timeout here is treated as congestion and backs off from 1 s.
//
// Calls go through eurekahttp, whose read timeout is Java's socket read
// timeout: it bounds every wait for bytes, for the headers and for each read
// of the body, and every wait to write (each 32 KiB of a batch), and not the
// whole call. A batch to a peer that stops reading or answering fails after
// one read timeout without progress, whatever its size (a multi-MB batch
// that the socket buffers cannot hold included); the start-up sync reads a
// whole registry that keeps streaming (50 MB of gzip at 1M instances) to its
// end, within a budget of 10 min per peer.
//
// # Start-up sync, self-registration, replicas
//
// SyncUp is Eureka's syncUp: it fetches GET {peer}apps/ from the peers and
// registers every instance as a replication, retrying registry-sync-retries
// times while nothing was copied. StartupSync is the sync goreka runs before
// serving (at least one attempt when there are peers); eviction opens for
// traffic with its count. The GET is streamed (syncstream.go): the
// joiner decodes instance by instance as the bytes arrive and registers
// them in batches (registry.RegisterAll: Register's rules, one write lock
// per 1024 instances), and it sends X-Goreka-Sync: stream, on which a
// goreka peer answers from one registry view with its headers at once
// instead of from its response cache. So the peer's cold build of a
// document nobody read never meets the read timeout (at 1M instances the
// joiner used to open empty), and the copy is exactly one revision of the
// peer's registry: never the older cached copy a reader may be served
// while a rebuild runs, whose cancelled instances would be ghosts here
// until eviction. A stock Eureka peer ignores the header and serves its
// cache, which its timer keeps built. A sync cut short keeps what it
// copied.
// SelfRegistrar registers this server with its peers under its application
// name (spring.application.name, default eureka-server) and heartbeats like a
// client, so stock Spring peers list it under available-replicas — provided
// its hostName (eureka.instance.hostname) is the host the peers use in their
// URL for it. For its own status page goreka does not use that rule:
// Replicator.Replicas lists a peer as available when the last batch sent to
// it succeeded, unavailable when it failed or nothing was answered yet; an
// idle peer is sent an empty batch every ProbeInterval (30 s) so that its
// state is known without traffic. Host names are never compared.
//
// # Observability
//
// Status reports per peer the queue depth, the lag (age of the oldest
// pending task), batches and items sent, failures by kind, dropped, expired
// and coalesced tasks, the last success and the last error. Logs carry
// component=replication and peer=<url>; a peer's failures are logged when
// its state changes, not once per failure.
package replication
