// Package eurekahttp is the HTTP client goreka speaks to another Eureka
// server with: a peer's replication batches, its start-up sync and
// self-registration (replication), a remote region's full and delta
// fetches (region), and whatever reads a Eureka server later (relays,
// bridges).
//
// It is one package because these callers must agree on what a Eureka
// server expects of a server-to-server call, and used to disagree:
//
//   - Credentials: a service URL's user:password@ is sent as preemptive
//     basic auth (as Spring's transports do; a password may hold ':'); a
//     user without a password sends none (region sets the header itself
//     to send such a user with an empty password, as it always did). The
//     URL is kept without them, so Endpoint.URL, errors and logs never show
//     a password.
//   - Identity: every call carries DiscoveryIdentity-Name: DefaultServer
//     (EurekaServerIdentity), which a peer's rate limiter never throttles,
//     and the configured User-Agent.
//   - Encoding: JSON is asked for; gzip is asked for when the Config says so
//     and a gzip answer is inflated (klauspost's reader, about twice as fast
//     as compress/gzip on a whole registry); batch bodies are gzipped when
//     the Config says so (eureka.server.enable-replicated-request-compression).
//   - Timeouts, the reason this package exists. Java's clients set a
//     connect timeout and a socket read timeout: the read timeout bounds
//     every single wait for bytes, for the status line and headers and for
//     each read of the body, and nothing bounds the whole call. Go has no
//     such socket option on http.Transport, and the two callers answered
//     differently: region bounded every wait for bytes, replication bounded
//     the wait for headers and then capped the whole call (connect + 2 x
//     read for a batch, 10 min for the sync), so an answer that streamed
//     steadily failed at a batch's cap while a sync body that stalled held
//     start-up for up to 10 min. Here the read timeout is Java's: a
//     watchdog is armed when the request is written and before each read
//     of the body, disarmed when bytes arrive, and cancels the call with
//     ErrReadTimeout when it fires. A large body that keeps streaming is
//     read to its end, a stalled one fails after one read timeout. It
//     bounds the write of the request the same way: armed when a
//     connection is got and re-armed before each 32 KiB of the request
//     body, so a request to a peer that stops reading (a multi-MB batch
//     the socket buffers cannot hold) fails after one read timeout
//     without progress, while one the peer reads slowly but steadily
//     goes through. A bound
//     on the whole call is the caller's policy, through the context
//     (region: one fetch interval, as Eureka's TimedSupervisorTask;
//     replication's sync: 10 min; a batch: none, as in Java).
//
// ErrReadTimeout is a net.Error whose Timeout is true and is not
// context.DeadlineExceeded: replication counts it as congestion, like any
// timeout, while region's back-off doubles only for a fetch abandoned at
// its interval, as Eureka's does.
//
// The package holds no state between calls besides the http.Client's
// connection pool; what a caller does with an answer (retries, back-off,
// the copy of a remote registry) stays with the caller.
package eurekahttp
