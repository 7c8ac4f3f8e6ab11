package server

import (
	"container/list"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/goreka/goreka/tokenbucket"
)

// FetchLimitConfig is goreka.fetch-limit.*: per-client limits on full and
// delta registry fetches, beyond Eureka's global RateLimitingFilter
// (RateLimitConfig). A client that fetches the full registry in a loop gets
// Eureka's throttling answer (503, no body) while every other client keeps
// its own allowance.
//
// Each client has two token buckets (package tokenbucket), one for full
// fetches (GET apps, apps/) and one for delta fetches (GET apps/delta), each
// holding Burst tokens and refilled at its per-minute rate. Application, VIP and instance reads are
// not limited. A client is identified, with IdentifyBy "identity", by its
// DiscoveryIdentity-Name and DiscoveryIdentity-Id headers when it sends a
// DiscoveryIdentity-Id (Netflix's Java client sends DefaultClient and its
// IP address), else by the connection's remote IP; with "address", by the
// remote IP only. The remote IP is the TCP peer's, never X-Forwarded-For.
//
// At most MaxClients clients are tracked, in least-recently-used order; a
// client idle long enough for both buckets to refill completely is
// forgotten (it would start with full buckets anyway), and when the cap is
// reached the least recently seen one is dropped (counted), so memory stays
// below MaxClients entries of about 200 bytes plus the key (header values
// are cut at 128 bytes each).
type FetchLimitConfig struct {
	Enabled        bool   // goreka.fetch-limit.enabled (false)
	FullPerMinute  int    // goreka.fetch-limit.full-per-minute (6); 0 = unlimited
	DeltaPerMinute int    // goreka.fetch-limit.delta-per-minute (120); 0 = unlimited
	Burst          int    // goreka.fetch-limit.burst (10): bucket size, at least 1
	MaxClients     int    // goreka.fetch-limit.max-clients (10000)
	IdentifyBy     string // goreka.fetch-limit.identify-by: FetchLimitByIdentity or FetchLimitByAddress
}

// Values of FetchLimitConfig.IdentifyBy.
const (
	FetchLimitByIdentity = "identity"
	FetchLimitByAddress  = "address"
)

// DefaultFetchLimitConfig is off, 6 full and 120 delta fetches per minute
// per client, bursts of 10, 10000 clients tracked, identified by identity
// headers with the remote IP as fallback. A Spring or Netflix client
// fetches one delta per registry-fetch-interval (30 s by default, 2 a
// minute) and a full registry at start-up or after a hash mismatch.
func DefaultFetchLimitConfig() FetchLimitConfig {
	return FetchLimitConfig{FullPerMinute: 6, DeltaPerMinute: 120, Burst: 10, MaxClients: 10000, IdentifyBy: FetchLimitByIdentity}
}

// IdentityIDHeader carries a client's id (AbstractEurekaIdentity): the Java
// client sends its IP address.
const IdentityIDHeader = "DiscoveryIdentity-Id"

var identityIDKey = http.CanonicalHeaderKey(IdentityIDHeader)

// maxIdentityPart caps each header value used in a client's key.
const maxIdentityPart = 128

type fetchClient struct {
	key         string
	full, delta tokenbucket.Bucket
	seen        time.Time
}

// fetchLimiter is the per-client state: an LRU list of clients (front =
// most recently seen) indexed by key, under one lock.
type fetchLimiter struct {
	cfg  FetchLimitConfig
	now  func() time.Time
	idle time.Duration // a client unseen this long has full buckets again
	// full and delta are the shapes of every client's two buckets.
	full, delta tokenbucket.Limit

	mu      sync.Mutex
	lru     list.List // of *fetchClient
	clients map[string]*list.Element

	throttledFull, throttledDelta atomic.Uint64
	dropped                       atomic.Uint64 // clients dropped at the cap
}

func newFetchLimiter(cfg FetchLimitConfig, now func() time.Time) *fetchLimiter {
	if !cfg.Enabled {
		return nil
	}
	cfg.Burst = max(cfg.Burst, 1)
	cfg.MaxClients = max(cfg.MaxClients, 1)
	fl := &fetchLimiter{cfg: cfg, now: now, clients: map[string]*list.Element{},
		full: tokenbucket.PerMinute(cfg.FullPerMinute, cfg.Burst), delta: tokenbucket.PerMinute(cfg.DeltaPerMinute, cfg.Burst)}
	slowest := 0
	for _, r := range []int{cfg.FullPerMinute, cfg.DeltaPerMinute} {
		if r > 0 && (slowest == 0 || r < slowest) {
			slowest = r
		}
	}
	if slowest > 0 {
		fl.idle = time.Duration(float64(cfg.Burst) / float64(slowest) * float64(time.Minute))
	}
	return fl
}

// allow draws a token for a fetch of target by the client key, tracking
// the client; false means throttled.
func (fl *fetchLimiter) allow(target fetchTarget, key string, now time.Time) bool {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	// Forget clients whose buckets have refilled: they are like new ones.
	for e := fl.lru.Back(); e != nil; e = fl.lru.Back() {
		c := e.Value.(*fetchClient)
		if now.Sub(c.seen) < fl.idle {
			break
		}
		fl.removeLocked(e)
	}
	var c *fetchClient
	if e, ok := fl.clients[key]; ok {
		c = e.Value.(*fetchClient)
		fl.lru.MoveToFront(e)
	} else {
		if fl.lru.Len() >= fl.cfg.MaxClients {
			fl.removeLocked(fl.lru.Back())
			fl.dropped.Add(1)
		}
		c = &fetchClient{key: key}
		fl.clients[key] = fl.lru.PushFront(c)
	}
	c.seen = now
	if target == targetFull {
		return c.full.Take(now, fl.full)
	}
	return c.delta.Take(now, fl.delta)
}

func (fl *fetchLimiter) removeLocked(e *list.Element) {
	delete(fl.clients, e.Value.(*fetchClient).key)
	fl.lru.Remove(e)
}

func (fl *fetchLimiter) tracked() int {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return fl.lru.Len()
}

// clientKey is who made the request, as FetchLimitConfig says.
func (fl *fetchLimiter) clientKey(r *http.Request) string {
	if fl.cfg.IdentifyBy != FetchLimitByAddress {
		if id := firstHeader(r.Header, identityIDKey); id != "" {
			return "id:" + truncate(firstHeader(r.Header, identityNameKey), maxIdentityPart) + "/" + truncate(id, maxIdentityPart)
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host
}

func firstHeader(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// admit is the edge's per-client step for a request whose route
// goreka.fetch-limit targets (the route table's perClient: targetFull or
// targetDelta; targetOther admits at once): it answers 503 without a body,
// as Eureka's RateLimitingFilter does, to a fetch over the client's limit
// and returns false. A nil limiter (goreka.fetch-limit.enabled false)
// admits everything.
func (fl *fetchLimiter) admit(c *gin.Context, target fetchTarget) bool {
	if fl == nil || target == targetOther {
		return true
	}
	if fl.allow(target, fl.clientKey(c.Request), fl.now()) {
		return true
	}
	if target == targetFull {
		fl.throttledFull.Add(1)
	} else {
		fl.throttledDelta.Add(1)
	}
	c.AbortWithStatus(http.StatusServiceUnavailable)
	return false
}

var (
	descFetchThrottled = prometheus.NewDesc("goreka_fetch_limit_throttled_requests_total",
		`Registry fetches answered 503 because one client was over its own limit (goreka.fetch-limit.*), by kind (full, delta).`, []string{"kind"}, nil)
	descFetchClients = prometheus.NewDesc("goreka_fetch_limit_tracked_clients",
		`Clients whose fetch allowance goreka.fetch-limit tracks now (at most goreka.fetch-limit.max-clients).`, nil, nil)
	descFetchDropped = prometheus.NewDesc("goreka_fetch_limit_dropped_clients_total",
		`Tracked clients forgotten before their allowance refilled because goreka.fetch-limit.max-clients was reached.`, nil, nil)
)

// FetchLimitCollector exposes the per-client fetch limiter's counts; with
// the limiter off they are all 0.
func (s *Server) FetchLimitCollector() prometheus.Collector { return fetchLimitCollector{s.fetchLimit} }

type fetchLimitCollector struct{ fl *fetchLimiter }

func (fetchLimitCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descFetchThrottled
	ch <- descFetchClients
	ch <- descFetchDropped
}

func (c fetchLimitCollector) Collect(ch chan<- prometheus.Metric) {
	var full, delta, dropped float64
	tracked := 0
	if c.fl != nil {
		full, delta, dropped = float64(c.fl.throttledFull.Load()), float64(c.fl.throttledDelta.Load()), float64(c.fl.dropped.Load())
		tracked = c.fl.tracked()
	}
	ch <- prometheus.MustNewConstMetric(descFetchThrottled, prometheus.CounterValue, full, "full")
	ch <- prometheus.MustNewConstMetric(descFetchThrottled, prometheus.CounterValue, delta, "delta")
	ch <- prometheus.MustNewConstMetric(descFetchClients, prometheus.GaugeValue, float64(tracked))
	ch <- prometheus.MustNewConstMetric(descFetchDropped, prometheus.CounterValue, dropped)
}
