// Package eviction removes the leases of instances that stopped renewing,
// and holds back when too many stop at once (Eureka's self-preservation).
//
// # Eviction
//
// Every eviction interval (eureka.server.eviction-interval-timer-in-ms,
// 60 s) a run removes the expired leases. A lease expires by its own
// duration (the registrant's lease-expiration-duration-in-seconds, 90 s by
// default); because of a quirk Eureka keeps on purpose (see registry's
// lease), a renewed lease expires two durations after its last heartbeat,
// so a silently dead client with default settings disappears 180 to 240 s
// after its last heartbeat. If a run comes late (GC pause, suspended VM),
// the lateness is added to every lease's expiry for that run, so the
// server's own pause is not mistaken for missed heartbeats.
//
// One run removes at most size - int(size*renewal-percent-threshold)
// leases, 15 % of the registry with the default 0.85 (10 leases: 2; 100
// leases: 15), picked at random across applications. Evictions are
// recorded like cancels (delta DELETED, the recently-cancelled list, cache
// invalidation through registry.EventEvict) but are not replicated: every
// server evicts on its own clock.
//
// # Self-preservation, for operators
//
// A server that suddenly stops hearing from many clients cannot tell dead
// clients from a network partition between itself and live ones. Eureka
// bets on the partition: when the heartbeats of the last minute fall to or
// below a threshold, it stops evicting altogether ("lease expiration
// disabled") and keeps serving the instances it has, dead or alive, until
// the heartbeats recover. Clients are expected to cope with a few dead
// entries (retries, load-balancer health); they cannot cope with an empty
// registry.
//
// The threshold is
//
//	int(expected clients × 60 / expected-client-renewal-interval-seconds × renewal-percent-threshold)
//
// i.e. 85 % of the heartbeats per minute the expected clients would send at
// one heartbeat every 30 s, truncated. Lease expiration is enabled only
// while renews-last-minute is strictly greater than a positive threshold
// (or when eureka.server.enable-self-preservation=false, which turns the
// whole mechanism off and lets every run evict up to its limit).
//
// "Renews last minute" counts every successful heartbeat of the previous
// whole minute, sent by a client or replicated by a peer; in a peer group
// each server therefore sees the heartbeats of the whole group.
//
// "Expected clients" starts at openForTraffic with the number of instances
// the start-up sync copied from peers (Spring substitutes 1 for 0), goes up
// by one on each new registration and down by one on each cancel or
// eviction (both only while it is above 0), and is reset every 15 minutes
// (renewal-threshold-update-interval-ms) to the registry size, but, while
// self-preservation is on, only if that size is above 85 % of the current
// expectation. So the expectation follows growth at once but follows a
// sudden loss of more than 15 % of the registry never: exactly the case
// self-preservation is meant to catch.
//
// Worked examples (defaults: 30 s, 0.85):
//
//   - A standalone Spring server with one client. Expected starts at 1
//     (openForTraffic(1)), the client's registration makes it 2, the
//     threshold is int(2 × 2 × 0.85) = 3. The one client sends 2 heartbeats
//     a minute, and 2 > 3 is false: self-preservation is active from the
//     first minute and nothing is ever evicted. Five minutes
//     (wait-time-in-ms-when-sync-empty) after start the dashboard shows the
//     familiar "EMERGENCY! EUREKA MAY BE INCORRECTLY CLAIMING INSTANCES ARE
//     UP..." banner. The 15-minute job does not help: the registry holds 1
//     instance, and 1 > 0.85 × 2 is false. This is Spring's behaviour, kept;
//     on a development server, turn self-preservation off.
//   - A standalone server with no clients: expected 1, threshold 1, 0
//     renewals: the same banner after five minutes, harmlessly.
//   - 100 instances registered after start: expected 101, threshold 171.
//     All renewing gives 200 a minute, so expiration is enabled and up to
//     15 expired leases go per run. If 50 stop at once, the next minute
//     counts 100 ≤ 171: expiration is disabled and all 50 stay listed
//     (Status().HeldBack says 50) until renewals recover or an operator
//     cancels them. With self-preservation off they go 15, 13, 11, ... per
//     run (the limit is recomputed from the shrinking registry).
//
// # Tuning lease-renewal intervals
//
// The threshold assumes every client heartbeats every
// expected-client-renewal-interval-seconds. If clients renew every 10 s
// (lease-renewal-interval-in-seconds: 10) while the server still assumes
// 30 s, they send three times the expected heartbeats and
// self-preservation will practically never trigger; if they renew every
// 60 s, they send half of it and self-preservation is permanently active
// (renews 1/min per client against a threshold of 1.7 per client). Set
// expected-client-renewal-interval-seconds to the clients' real interval.
// With n instances, self-preservation starts when the per-minute
// heartbeats drop below about renewal-percent-threshold of n × 60/interval,
// i.e. when more than 15 % stop at once; small registries (a handful of
// instances) sit on the edge because of the truncation and the +1 of the
// start-up expectation, which is why dev servers so often show the banner.
//
// # Opening for traffic, and the read gate
//
// The Evictor also answers the two questions the HTTP layer asks about
// this state (it satisfies server.Gate and server.Expiry without importing
// server). OpenAfterSync is Spring's openForTraffic after the start-up
// sync: the copied instances, or default-open-for-traffic-count (1) when
// there were none, become the expected clients; OpenAfterStartup, which
// goreka's start-up calls, first counts a restored snapshot's renewing
// leases when no peer copied anything. AllowAccess is Eureka's
// shouldAllowAccess: with an expectation of 0 (Netflix's
// peerInstancesTransferEmptyOnStartup) reads answer 403 for
// wait-time-in-ms-when-sync-empty, so that a server that found no peers
// does not hand out an empty registry while clients re-register. Reads
// arriving during the sync wait for it a little (SyncReadWait) and are
// then refused, for the same reason. LeaseExpirationEnabled lets
// single-instance reads hide expired leases exactly when eviction would
// remove them. They live here because they read the same start-up time,
// expectation and renewals as the eviction job, and must agree with it.
//
// # Which count the 15-minute job uses
//
// Eureka counts the instances in its embedded client's cached copy of the
// registry, which that client fetches from a peer (or from itself) every
// 30 s. goreka has no embedded client and counts its own registry
// (registry.Size). In a healthy peer group this is the same number:
// replication gives every node the whole registry, so a peer's /apps and
// the local registry hold the same instances. What differs: Java counts a
// copy up to 30 s old (plus the response cache's 30 s) and, with
// eureka.client.fetch-registry=false, counts an empty registry and never
// raises the expectation; goreka counts the live registry, so its
// expectation may differ from a Java peer's by the registrations of the
// last minute until the next run. Like Java, the read-then-set is not
// atomic with concurrent registrations; an off-by-one is corrected by the
// +1/-1 rules and the next run.
//
// # Timing differences from Java
//
// Eureka's renews-per-minute meter ticks every 60 s from openForTraffic
// and reads 0 during the first minute after it. goreka's counts wall-clock
// minutes until OpenForTraffic, then whole minutes from that instant
// (registry.StartRenewsMeter), so it also reads 0 in the first minute and
// a full minute from 60 s after opening; counted in wall-clock minutes, a
// node opened mid-minute read a partial minute and stayed in
// self-preservation up to a minute longer after each restart. Heartbeats
// received before opening (replicated ones during start-up) count in the
// first minute, as Java's increments before its timer starts do. The
// eviction and renewal-threshold jobs start at
// OpenForTraffic (Eureka's postInit; Java starts the 15-minute timer
// slightly earlier, in init, which with Spring's defaults is the same
// moment). The cron schedule works in whole seconds.
//
// # Observability
//
// Evictor.Status returns, in one call, what the dashboard and the metrics
// show: renews last minute, threshold, expected clients, whether lease
// expiration is enabled, whether renewals are below the threshold (and the
// exact Spring banner text), since when self-preservation has been
// holding, how many expired leases the last run held back, and the
// renewals per minute of the last hour. Logs use component=eviction: each
// eviction at Info, entering and leaving self-preservation at Warn once
// per transition, and held-back leases at Warn when their number changes.
package eviction
