// Package tokenbucket is the token bucket of goreka's own limits: the
// per-client fetch limits of goreka.fetch-limit (server) and the probe
// budget and per-reporter report limit of goreka.health (health).
//
// A Bucket holds at most a burst of tokens and gains one every interval. It
// is kept as the time at which it would be full again (the generic cell
// rate algorithm), so refills are exact in nanoseconds on an injected
// clock, a bucket costs one time.Time, and a bucket never used is full.
//
// Eureka's own rate limiter (eureka.server.rate-limiter-*) is not built on
// it: Netflix's com.netflix.discovery.util.RateLimiter refills in whole
// tokens counted in milliseconds and advances its refill time only by the
// time those tokens took, which a client can observe at its boundaries; the
// server package keeps an exact copy of it.
package tokenbucket
