package server

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// RateLimitConfig is eureka.server.rate-limiter-*: Netflix's
// RateLimitingFilter (eureka-core), which Spring Cloud Netflix does not
// install (measured: a stock Spring server with rate-limiter-enabled=true
// and a burst of 2 answers every fetch 200).
//
// Two token buckets: one for every registry fetch (GET apps, apps/delta,
// apps/{app}), one for full fetches only (GET apps). A fetch is throttled
// when the client is not privileged and a bucket has no token left. A
// client is privileged when its DiscoveryIdentity-Name header is
// DefaultClient (Netflix's Java client), DefaultServer (a Eureka peer) or
// one of PrivilegedClients, unless ThrottleStandardClients. Throttled
// fetches get 503 only when Enabled; otherwise they are only counted, as
// candidates, so the effect can be measured before switching it on (the
// buckets are drawn from either way, as in Netflix).
type RateLimitConfig struct {
	Enabled                 bool     // rate-limiter-enabled (false)
	ThrottleStandardClients bool     // rate-limiter-throttle-standard-clients (false)
	PrivilegedClients       []string // rate-limiter-privileged-clients
	// BurstSize is the bucket size (rate-limiter-burst-size, 10); 0 or
	// less admits everything.
	BurstSize int
	// RegistryFetchAverageRate and FullFetchAverageRate are tokens per
	// second (500 and 100); 0 or less admits everything through that bucket.
	RegistryFetchAverageRate int
	FullFetchAverageRate     int
}

// DefaultRateLimitConfig is EurekaServerConfigBean's defaults: off, burst
// 10, 500 fetches and 100 full fetches per second.
func DefaultRateLimitConfig() RateLimitConfig {
	return RateLimitConfig{BurstSize: 10, RegistryFetchAverageRate: 500, FullFetchAverageRate: 100}
}

// IdentityNameHeader carries a client's name (AbstractEurekaIdentity).
const IdentityNameHeader = "DiscoveryIdentity-Name"

// identityNameKey is IdentityNameHeader in Go's canonical form, for a
// lookup without allocation.
var identityNameKey = http.CanonicalHeaderKey(IdentityNameHeader)

// fetchTarget is a registry fetch the limiters recognise, from the route
// table (edge.go).
type fetchTarget uint8

const (
	targetOther fetchTarget = iota
	targetFull
	targetDelta
	targetApp
)

var targetNames = [...]string{targetFull: "full", targetDelta: "delta", targetApp: "application"}

// tokenBucket is com.netflix.discovery.util.RateLimiter with a per-second
// rate: consumed tokens drop by rate per elapsed second, in whole tokens,
// and the refill time advances only by the time those tokens took.
type tokenBucket struct {
	mu         sync.Mutex
	consumed   int64
	lastRefill int64 // epoch ms; 0 = never
}

func (b *tokenBucket) acquire(burst, rate int, nowMs int64) bool {
	if burst <= 0 || rate <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := (nowMs - b.lastRefill) * int64(rate) / 1000; n > 0 {
		if b.lastRefill == 0 {
			b.lastRefill = nowMs
		} else {
			b.lastRefill += n * 1000 / int64(rate)
		}
		b.consumed = max(0, min(b.consumed, int64(burst))-n)
	}
	if b.consumed >= int64(burst) {
		return false
	}
	b.consumed++
	return true
}

// rateLimiter is the filter's state: its configuration, the two buckets
// and the counts of throttled requests.
type rateLimiter struct {
	cfg        RateLimitConfig
	privileged map[string]bool
	now        func() time.Time
	fetch      tokenBucket // every registry fetch
	full       tokenBucket // full fetches only
	// limited[target][enforced] counts throttled (enforced=1) and
	// candidate (enforced=0) requests.
	limited [len(targetNames)][2]atomic.Uint64
}

func newRateLimiter(cfg RateLimitConfig, now func() time.Time) *rateLimiter {
	rl := &rateLimiter{cfg: cfg, now: now, privileged: map[string]bool{"DefaultClient": true, "DefaultServer": true}}
	for _, name := range cfg.PrivilegedClients {
		rl.privileged[name] = true
	}
	return rl
}

// limited reports whether a fetch of target by the named client is over
// the limit (RateLimitingFilter.isRateLimited); it draws the tokens.
func (rl *rateLimiter) limit(target fetchTarget, client string) bool {
	if !rl.cfg.ThrottleStandardClients && rl.privileged[client] {
		return false
	}
	ms := rl.now().UnixMilli()
	over := !rl.fetch.acquire(rl.cfg.BurstSize, rl.cfg.RegistryFetchAverageRate, ms)
	if target == targetFull {
		// Both buckets are drawn from, as in Netflix, even when the first
		// is already empty.
		over = !rl.full.acquire(rl.cfg.BurstSize, rl.cfg.FullFetchAverageRate, ms) || over
	}
	return over
}

// admit is the edge's rate-limit step for a request whose route the
// filter targets (the route table's rate; targetOther admits at once): it
// answers 503 to a throttled fetch when the limiter is enabled and counts
// it (as a candidate when not enabled), returning false when it answered.
func (rl *rateLimiter) admit(c *gin.Context, target fetchTarget) bool {
	if target == targetOther {
		return true
	}
	header := c.Request.Header[identityNameKey]
	client := ""
	if len(header) > 0 {
		client = header[0]
	}
	if !rl.limit(target, client) {
		return true
	}
	if !rl.cfg.Enabled {
		rl.limited[target][0].Add(1)
		return true
	}
	rl.limited[target][1].Add(1)
	c.AbortWithStatus(http.StatusServiceUnavailable)
	return false
}

const descHelp = `Registry fetches over the rate limit (eureka.server.rate-limiter-*) by target (full, delta, application); enforced="true" were answered 503, enforced="false" are candidates counted while the limiter is off.`

var descRateLimited = prometheus.NewDesc("goreka_rate_limited_requests_total", descHelp, []string{"target", "enforced"}, nil)

// RateLimitCollector exposes the counts of throttled and candidate
// registry fetches; cmd/goreka registers it with the server's metrics.
func (s *Server) RateLimitCollector() prometheus.Collector { return rateLimitCollector{s.limiter} }

type rateLimitCollector struct{ rl *rateLimiter }

func (rateLimitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descRateLimited }

func (c rateLimitCollector) Collect(ch chan<- prometheus.Metric) {
	for t := targetFull; t <= targetApp; t++ {
		for e, label := range [2]string{"false", "true"} {
			ch <- prometheus.MustNewConstMetric(descRateLimited, prometheus.CounterValue,
				float64(c.rl.limited[t][e].Load()), targetNames[t], label)
		}
	}
}
