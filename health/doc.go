// Package health probes instances for evidence that heartbeats alone cannot
// give: whether an instance that stopped heartbeating is dead or merely cut
// off from this server, and whether one that heartbeats still serves. It is
// off by default (goreka.health.probe.enabled); without it goreka behaves
// exactly like Eureka, and only the lifecycle view and report counting work.
//
// # What is probed
//
// A probe is an HTTP GET of the instance's healthCheckUrl
// (secureHealthCheckUrl when only the secure port is enabled, or when it is
// the only one given; an instance with neither is never probed), within
// goreka.health.probe.timeout (2 s), without keep-alive and without
// following redirects. A 2xx answer is healthy unless its body is a Spring
// actuator document whose top-level "status" is DOWN or OUT_OF_SERVICE; a
// 503, any other status, or such a body is unhealthy; no answer (refused,
// timeout, reset, DNS) is unreachable. Unhealthy and unreachable are
// failures. One exception: Spring Cloud Netflix's "eureka" indicator
// (inside "discoveryComposite") echoes the status this server serves for
// the instance, so a DOWN or OUT_OF_SERVICE document that lists its
// components is judged without it (as Spring's EurekaHealthCheckHandler
// does); without the components the echo cannot be seen (README).
//
// # Where probes go
//
// Health URLs are the registrants' word: with probes on, whoever can
// register can make this server send GETs to any address it can reach.
// goreka.health.probe.allowed-networks (CIDRs; empty: any) limits the
// addresses probes connect to, checked on the address dialled after name
// resolution; redirects are never followed. An instance outside it is
// never contacted (outcome not-allowed) and judged as if never probed: no
// failure, no guard sample, no verdict.
//
// In on-suspicion mode (the default) the candidates are the instances that
// missed heartbeats (more than two of their renewal intervals since the
// last one, from the instance or a peer), the expired leases (those
// self-preservation holds), and reported instances. In periodic mode every
// instance whose heartbeats come to this server itself (not replicated from
// a peer) is a candidate too. A candidate is probed every
// goreka.health.probe.interval (30 s) plus a random jitter of up to
// goreka.health.probe.jitter (5 s); a periodic fleet's first probes are
// spread over one interval. The registry is scanned for candidates every
// 10 s.
//
// # The budget: why goreka never becomes a load generator
//
// Probes are started from a token bucket of goreka.health.probe.budget
// probes per second (50; burst the larger of the budget and the
// concurrency) and run goreka.health.probe.concurrency (16) at a time, each
// bounded by the timeout. So, whatever the fleet's size:
//
//   - the probe rate is at most 50/s, i.e. 3,000 GETs a minute in total,
//     and at most one probe per instance per interval (one every 30 s);
//   - with every probe timing out, 16 in flight / 2 s = 8 probes/s: slow
//     instances slow the probing down, they never pile up sockets;
//   - 100k instances with 1 % suspect (1,000 candidates) need 1,000 probes
//     per 30 s = 33/s: within the budget. At 5 % suspect (5,000) the
//     budget stretches each candidate's interval to 5,000 / 50 = 100 s:
//     evidence comes later, load does not grow;
//   - periodic mode over 100k home instances would need 3,333/s: the
//     budget makes the effective interval 100k / 50 = 2,000 s (33 min).
//     Periodic mode is meant for fleets of a few thousand instances per
//     server (1,500 at the default 30 s); raise the budget knowingly.
//
// Candidates due at once are served most urgent first: reported, held,
// suspect, periodic, then the controls. The cost on goreka's side is the
// scan (about 1 ms of CPU per 100k leases every 10 s) plus the probes
// themselves; BenchmarkOnSuspicion100k measures it.
//
// # Self-preservation with evidence
//
// While self-preservation holds back evictions (lease expiration
// disabled), a held lease whose probe fails goreka.health.probe.failures-
// to-evict (3) times in a row is evicted anyway through
// registry.EvictExpired: it is an ordinary eviction (EventEvict, delta
// DELETED, the recently-cancelled list, not replicated: every server
// evicts on its own evidence, as on its own clock). A held lease that
// answers stays held, and the log says so once per episode ("heartbeats
// lost, instance alive"). When self-preservation is not holding, expired
// leases are left to the eviction job.
//
// # The guard
//
// A registry that cannot reach its instances (its own network at fault)
// must not evict them. The guard judges the probes of the last
// goreka.health.probe.window (1 min): when more than
// goreka.health.probe.max-failing-percent (50) of at least 5 probes failed,
// the monitor stops acting on probe results, lifts its DOWN verdicts, logs
// an error, raises goreka_health_probe_guard_active and the dashboard
// banner, and goreka behaves like Eureka. It acts again once no more than
// half that share fails. In on-suspicion mode the window would otherwise
// hold only suspects, which are mostly dead by nature, so each scan that
// finds suspects also probes up to as many (at most 8) randomly chosen
// heartbeating instances as controls: they are never acted on, but if they
// fail as well the fault is goreka's.
//
// # DOWN by probe, and how it reaches peers
//
// In periodic mode a heartbeating instance that fails
// goreka.health.probe.failures-to-down (3) probes in a row is served as
// DOWN (registry.MarkDown with DownByProbe: responses, deltas and
// apps__hashcode agree), with the reason on the dashboard ("DOWN by
// probe: 3 failures, connection refused"); it is UP again after
// goreka.health.probe.successes-to-up (2) successes. The verdict never
// overrides an operator's override (OUT_OF_SERVICE or any other) nor a
// status the instance set itself (STARTING, DOWN).
//
// Only the instance's home server judges it: the server that receives its
// heartbeats from the instance itself (Spring clients heartbeat to one
// server, the first of their service URLs that answers). The verdict
// travels to peers as an ordinary replicated registration carrying DOWN,
// and then UP: exactly what a peer sees when a client's own health check
// (eureka.client.healthcheck.enabled) flips it, so Java peers need nothing
// new. A peer applies it as a plain status and holds no verdict of its
// own; since it does not receive the instance's own heartbeats it does not
// judge it, so two servers never hold opposite opinions in turn and a pair
// never flaps. A server keeps probing the instances it marked DOWN until
// it lifts the verdict, even if their heartbeats moved to another server;
// if that server is gone for good, the DOWN stays on the peers until the
// instance registers again (a restart, or its own status change).
//
// # Caller reports
//
// Report (POST /goreka/api/v1/reports) is a caller's word that it failed to
// reach an instance. It never changes the registry by itself. With probes
// on, the instance is probed at once, and a failure of that probe counts as
// the repeated failures the schedule would otherwise need: a held lease is
// evicted, a live one served DOWN (in either mode; the reported server
// becomes its judge). Reports are rate-limited per reporter (60 a minute,
// bursts of 10: beyond it, 429) and per instance (one probe per 10 s; later
// reports are counted, coalesced). Without probes, reports are counted and
// shown on the dashboard only.
//
// # Lifecycle
//
// Every instance is up, suspect (missed heartbeats, lease not expired),
// held (expired, still registered: kept by self-preservation, or by the
// eviction limit until the next run) or gone (cancelled or evicted in the
// last 15 minutes). Lifecycle returns the counts and the instances, for
// the dashboard and goreka_instances_lifecycle{state}.
package health
