package replication

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"time"
)

// Config configures a Replicator. Zero fields take the defaults listed;
// Default returns them all.
type Config struct {
	// PeerNodeConnectTimeout is eureka.server.peer-node-connect-timeout-ms
	// (default 1 s, Netflix's; Spring's 200 ms fails on any cross-zone hop
	// with a TLS handshake).
	PeerNodeConnectTimeout time.Duration
	// PeerNodeReadTimeout is eureka.server.peer-node-read-timeout-ms: the
	// longest wait for the next bytes of a peer's answer, its headers or its
	// body, as Java's socket read timeout (default 5 s, Netflix's).
	// Spring's 200 ms is shorter than a loaded peer needs for 250 items; the
	// sender then treats the batch as failed and sends it again, adding load
	// to the peer that was already slow: a replication storm
	// (spring-cloud-netflix#3167, #3608).
	PeerNodeReadTimeout time.Duration
	// PeerNodeMaxIdleConnsPerHost bounds kept-alive connections per peer
	// (eureka.server.peer-node-total-connections-per-host; default 8: one
	// sender per peer never needs more than a few).
	PeerNodeMaxIdleConnsPerHost int
	// PeerNodeConnectionIdleTimeout is
	// eureka.server.peer-node-connection-idle-timeout-seconds (default 30 s).
	PeerNodeConnectionIdleTimeout time.Duration
	// MaxElementsInPeerReplicationPool bounds each peer's queue
	// (eureka.server.max-elements-in-peer-replication-pool, default 10000).
	// When full, the oldest task's instance is marked for a resync of its
	// current state (see queue).
	MaxElementsInPeerReplicationPool int
	// MaxTimeForReplication is eureka.server.max-time-for-replication: the
	// life of a Cancel, StatusUpdate or DeleteStatusOverride task (default
	// 30 s). Register and Heartbeat tasks live one renewal interval.
	MaxTimeForReplication time.Duration
	// EnableReplicatedRequestCompression gzips batch bodies
	// (eureka.server.enable-replicated-request-compression).
	EnableReplicatedRequestCompression bool

	// MaxBatchesInFlight is goreka.replication.max-batches-in-flight: how
	// many batches the sender keeps in flight to one peer (default 4; 1
	// sends a batch only after the previous one was answered). Two batches
	// in flight never carry the same instance, so each instance's changes
	// reach the peer in order whatever order it answers in (package doc,
	// "Pipelining"). PeerNodeMaxIdleConnsPerHost is raised to it, so that
	// each batch in flight keeps its connection.
	MaxBatchesInFlight int

	// BatchSize and BatchDelay are Eureka's hard-coded 250 items and 500 ms.
	BatchSize  int
	BatchDelay time.Duration
	// CongestionRetryDelay (1 s) is the first back-off after a 503 or a
	// timeout, NetworkFailureRetryDelay (100 ms) after a network error; each
	// further failure doubles it up to MaxRetryDelay (30 s), with jitter.
	CongestionRetryDelay     time.Duration
	NetworkFailureRetryDelay time.Duration
	MaxRetryDelay            time.Duration

	// ProbeInterval: a peer nothing was sent to for this long is sent an
	// empty batch, so that its availability (Replicas, PeerStatus.Available)
	// is known without traffic (default 30 s, a heartbeat interval).
	ProbeInterval time.Duration

	// UserAgent is sent on every peer call (default goreka-replication/dev).
	UserAgent string
	// TLSConfigFor configures each https connection to a peer (nil: Go's
	// defaults; goreka's: eureka.client.tls, tlsconf.Client.ConfigFor).
	TLSConfigFor func(host string) *tls.Config
	// HTTPClient replaces the client built from the timeouts (tests);
	// the read timeout still applies (eurekahttp.Config.HTTPClient).
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Seed seeds the jitter; 0 means a seed from the clock.
	Seed uint64
	// Logger receives replication logs; nil discards them.
	Logger *slog.Logger
}

// DefaultMaxBatchesInFlight is MaxBatchesInFlight's default (BENCHMARKS.md,
// "Issue 30: pipelined replication").
const DefaultMaxBatchesInFlight = 4

// Default returns the configuration with every default filled in.
func Default() Config {
	var c Config
	c.fill()
	return c
}

func (c *Config) fill() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.PeerNodeConnectTimeout, time.Second)
	def(&c.PeerNodeReadTimeout, 5*time.Second)
	def(&c.PeerNodeConnectionIdleTimeout, 30*time.Second)
	def(&c.MaxTimeForReplication, 30*time.Second)
	def(&c.BatchDelay, 500*time.Millisecond)
	def(&c.CongestionRetryDelay, time.Second)
	def(&c.NetworkFailureRetryDelay, 100*time.Millisecond)
	def(&c.MaxRetryDelay, 30*time.Second)
	def(&c.ProbeInterval, 30*time.Second)
	if c.PeerNodeMaxIdleConnsPerHost <= 0 {
		c.PeerNodeMaxIdleConnsPerHost = 8
	}
	if c.MaxElementsInPeerReplicationPool <= 0 {
		c.MaxElementsInPeerReplicationPool = 10000
	}
	if c.MaxBatchesInFlight <= 0 {
		c.MaxBatchesInFlight = DefaultMaxBatchesInFlight
	}
	c.PeerNodeMaxIdleConnsPerHost = max(c.PeerNodeMaxIdleConnsPerHost, c.MaxBatchesInFlight)
	if c.BatchSize <= 0 {
		c.BatchSize = 250
	}
	if c.UserAgent == "" {
		c.UserAgent = "goreka-replication/dev"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}
