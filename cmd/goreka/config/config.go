package config

import (
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// defaultZone is the service-url key Spring falls back to.
const defaultZone = "defaultZone"

// Config is goreka's effective configuration. Each field names the Spring
// property it comes from; the defaults are Spring Cloud Netflix's
// (EurekaServerConfigBean, EurekaClientConfigBean, EurekaInstanceConfigBean)
// unless a comment in the property table says why goreka differs.
type Config struct {
	Server       ServerConfig       // server.*
	AppName      string             // spring.application.name
	Security     SecurityConfig     // spring.security.user.*
	Instance     InstanceConfig     // eureka.instance.*
	Client       ClientConfig       // eureka.client.*
	EurekaServer EurekaServerConfig // eureka.server.*
	Environment  string             // eureka.environment, shown on the dashboard
	Datacenter   string             // eureka.datacenter, shown on the dashboard
	Dashboard    DashboardConfig    // eureka.dashboard.*
	Logging      LoggingConfig      // logging.level.*
	Goreka       GorekaConfig       // goreka.*

	// Profiles are the active Spring profiles (spring.profiles.active).
	Profiles []string
	// Warnings name keys that goreka ignored or did not recognise, and other
	// problems that do not stop the server. Sorted.
	Warnings []string

	set    map[string]string // canonical key -> source, for keys a source set
	origin map[string]origin // property name -> effective value and source
}

type origin struct {
	value  string
	source string
}

// ServerConfig holds the HTTP listener settings (Spring Boot's server.*).
type ServerConfig struct {
	Port    int    // server.port
	Address string // server.address; "" binds all interfaces
	SSL     SSLConfig
}

// SSLConfig holds TLS settings, with Spring Boot's property names
// (server.ssl.*; tls.go maps them to package tlsconf).
type SSLConfig struct {
	Enabled               bool   // server.ssl.enabled
	Certificate           string // server.ssl.certificate (PEM file)
	CertificatePrivateKey string // server.ssl.certificate-private-key (PEM file)
	TrustCertificate      string // server.ssl.trust-certificate (PEM CA bundle)
	KeyStores                    // server.ssl.key-store, trust-store, ...
	Bundle                string // server.ssl.bundle: a spring.ssl.bundle.* name
	ClientAuth            string // server.ssl.client-auth: none, want, need
	EnabledProtocols      []string
	Ciphers               []string
	// Bundles are spring.ssl.bundle.jks.<name>.* and .pem.<name>.*.
	Bundles map[string]*SSLBundle
	// ReloadInterval is goreka.tls.reload-interval.
	ReloadInterval time.Duration
}

// KeyStores are the keystore and truststore properties, as Spring Boot
// (server.ssl) and Spring Cloud Netflix (eureka.client.tls) name them.
type KeyStores struct {
	KeyStore, KeyStoreType, KeyStorePassword, KeyPassword, KeyAlias string
	TrustStore, TrustStoreType, TrustStorePassword                  string
}

// SecurityConfig holds HTTP basic auth credentials; an empty password means
// no authentication.
type SecurityConfig struct {
	User     string // spring.security.user.name
	Password string // spring.security.user.password

	ReadOnlyUser     string // goreka.security.read-only-user
	ReadOnlyPassword string // goreka.security.read-only-password

	Users []User // goreka.security.users (per-application write rights)
}

// InstanceConfig describes this server as a Eureka instance.
type InstanceConfig struct {
	Hostname                string            // eureka.instance.hostname
	IPAddress               string            // eureka.instance.ip-address
	InstanceID              string            // eureka.instance.instance-id
	PreferIPAddress         bool              // eureka.instance.prefer-ip-address
	LeaseRenewalInterval    time.Duration     // eureka.instance.lease-renewal-interval-in-seconds
	LeaseExpirationDuration time.Duration     // eureka.instance.lease-expiration-duration-in-seconds
	Metadata                map[string]string // eureka.instance.metadata-map.*

	ExpectedNumberOfClientsSendingRenews int // eureka.instance.registry.expected-number-of-clients-sending-renews
	DefaultOpenForTrafficCount           int // eureka.instance.registry.default-open-for-traffic-count
}

// HostName is the host name this server announces: the IP address when
// prefer-ip-address is set, as in Spring's EurekaInstanceConfigBean.
func (i InstanceConfig) HostName() string {
	if i.PreferIPAddress {
		return i.IPAddress
	}
	return i.Hostname
}

// ClientConfig holds the embedded client settings that decide the peers.
type ClientConfig struct {
	TLS                ClientTLSConfig     // eureka.client.tls.*
	ServiceURL         map[string][]string // eureka.client.service-url.<zone>
	Region             string              // eureka.client.region
	AvailabilityZones  map[string][]string // eureka.client.availability-zones.<region>
	RegisterWithEureka bool                // eureka.client.register-with-eureka
	FetchRegistry      bool                // eureka.client.fetch-registry

	// Eureka's DNS mode: TXT records txt.{region}.{name}, txt.{zone}.{name}.
	UseDNSForFetchingServiceURLs bool   // eureka.client.use-dns-for-fetching-service-urls
	EurekaServerDNSName          string // eureka.client.eureka-server-d-n-s-name
	EurekaServerPort             int    // eureka.client.eureka-server-port; 0 = server.port
	EurekaServerURLContext       string // eureka.client.eureka-server-u-r-l-context
}

// EurekaServerConfig mirrors Spring's EurekaServerConfigBean (eureka.server.*)
// for the properties goreka implements. Millisecond and second properties are
// exposed as time.Duration.
type EurekaServerConfig struct {
	EnableSelfPreservation                  bool
	RenewalPercentThreshold                 float64
	RenewalThresholdUpdateInterval          time.Duration
	ExpectedClientRenewalInterval           time.Duration
	EvictionInterval                        time.Duration
	RetentionTimeInDeltaQueue               time.Duration
	DeltaRetentionTimerInterval             time.Duration
	DisableDelta                            bool
	ResponseCacheAutoExpiration             time.Duration
	ResponseCacheUpdateInterval             time.Duration
	UseReadOnlyResponseCache                bool
	WaitTimeWhenSyncEmpty                   time.Duration
	RegistrySyncRetries                     int
	RegistrySyncRetryWait                   time.Duration
	SyncWhenTimestampDiffers                bool
	PeerEurekaNodesUpdateInterval           time.Duration
	PeerNodeConnectTimeout                  time.Duration
	PeerNodeReadTimeout                     time.Duration
	MaxElementsInPeerReplicationPool        int
	MaxTimeForReplication                   time.Duration
	EnableReplicatedRequestCompression      bool
	MyURL                                   string
	MinAvailableInstancesForPeerReplication int
	RateLimiterEnabled                      bool
	RateLimiterThrottleStandardClients      bool
	RateLimiterPrivilegedClients            []string
	RateLimiterBurstSize                    int
	RateLimiterRegistryFetchAverageRate     int
	RateLimiterFullFetchAverageRate         int
	JSONCodecName                           string // eureka.server.json-codec-name, validated by compat.ParseJSONCodec
	XMLCodecName                            string // eureka.server.xml-codec-name, validated by compat.ParseXMLCodec
	RemoteRegions                           RemoteRegionsConfig
}

// RemoteRegionsConfig holds eureka.server.remote-region-* and
// disable-transparent-fallback-to-other-region.
type RemoteRegionsConfig struct {
	URLsWithName                map[string]string   // remote-region-urls-with-name.<region> (region lower case)
	URLs                        []string            // remote-region-urls (Eureka reads it nowhere; validated only)
	AppWhitelist                map[string][]string // remote-region-app-whitelist.<region|global>
	FetchInterval               time.Duration       // remote-region-registry-fetch-interval (s)
	DisableDelta                bool                // disable-delta-for-remote-regions
	GZip                        bool                // g-zip-content-from-remote-region
	ConnectTimeout, ReadTimeout time.Duration       // remote-region-connect-timeout-ms, -read-timeout-ms
	DisableTransparentFallback  bool                // disable-transparent-fallback-to-other-region
}

// DashboardConfig holds eureka.dashboard.*.
type DashboardConfig struct {
	Path    string // eureka.dashboard.path
	Enabled bool   // eureka.dashboard.enabled
}

// LoggingConfig holds the log levels (logging.level.root and
// logging.level.goreka; the latter defaults to the former).
type LoggingConfig struct {
	Root   slog.Level
	Goreka slog.Level
}

// GorekaConfig holds goreka's own settings (goreka.*); durations in Go form.
type GorekaConfig struct {
	Cache       CacheConfig
	Snapshot    SnapshotConfig
	LogFormat   string // goreka.log.format: text or json
	AccessLog   bool   // goreka.access-log
	ConsulAPI   bool   // goreka.consul-api.enabled
	PProf       bool   // goreka.debug.pprof-enabled
	HTTP        HTTPConfig
	PrintConfig bool // goreka.print-config
	Health      HealthConfig
	Eviction    EvictionConfig
	Peers       PeersConfig
	Replication ReplicationConfig
	// StaticInstances is goreka.static-instances, in the configured order.
	StaticInstances []StaticInstance
	FetchLimit      FetchLimitConfig
	Namespaces      NamespacesConfig
	XDS             XDSConfig
	Relay           RelayConfig
	Kubernetes      KubernetesConfig
}

// RelayConfig holds goreka.relay.*: relay mode (package relay).
type RelayConfig struct {
	Upstream          []string      // goreka.relay.upstream; empty: not a relay
	ID                string        // goreka.relay.id; empty: eureka.instance.instance-id
	HeartbeatInterval time.Duration // goreka.relay.heartbeat-interval
	FetchInterval     time.Duration // goreka.relay.fetch-interval
	FetchApps         []string      // goreka.relay.fetch-apps
	ReadOnly          bool          // goreka.relay.read-only
	MaxQueue          int           // goreka.relay.max-queue
}

// KubernetesConfig holds goreka.kubernetes.*: the Kubernetes bridge. It
// has kube.Config's fields, in its order, so that cmd/goreka converts it.
type KubernetesConfig struct {
	Enabled     bool          // goreka.kubernetes.enabled
	Kubeconfig  string        // goreka.kubernetes.kubeconfig; empty: in-cluster
	ClusterID   string        // goreka.kubernetes.cluster-id
	ResyncGrace time.Duration // goreka.kubernetes.resync-grace
	Import      struct {
		Enabled       bool     // goreka.kubernetes.import.enabled
		Namespaces    []string // goreka.kubernetes.import.namespaces; empty: all
		PortName      string   // goreka.kubernetes.import.port-name; empty: the first port
		NamespaceMode string   // goreka.kubernetes.import.namespace-mode: default or namespaces
	}
	Export struct {
		Enabled   bool   // goreka.kubernetes.export.enabled
		Namespace string // goreka.kubernetes.export.namespace
		Endpoints bool   // goreka.kubernetes.export.endpoints
	}
}

// XDSConfig holds goreka.xds.*: the xDS server for Envoy and proxyless gRPC
// (package xds).
type XDSConfig struct {
	Enabled         bool   // goreka.xds.enabled
	Port            int    // goreka.xds.port
	Address         string // goreka.xds.address; defaults to server.address
	ZonePriority    bool   // goreka.xds.zone-priority
	HeldAsUnhealthy bool   // goreka.xds.held-as-unhealthy
}

// Listen is the host:port the xDS server binds.
func (x XDSConfig) Listen() string { return net.JoinHostPort(x.Address, strconv.Itoa(x.Port)) }

// NamespacesConfig holds goreka.namespaces.*: which /ns/{name}/ registries
// may exist beside the default one, and their limits.
type NamespacesConfig struct {
	Allowed      []string // goreka.namespaces.allowed: created at start-up
	AutoCreate   bool     // goreka.namespaces.auto-create: any valid name is created at its first request
	Max          int      // goreka.namespaces.max: namespaces besides the default one
	MaxInstances int      // goreka.namespaces.max-instances: instances per namespace; 0 = unlimited
	// StockPeers are the peers (URLs or host:port) that are stock Java
	// servers: they get only the default namespace.
	StockPeers []string // goreka.namespaces.stock-peers
}

// FetchLimitConfig holds goreka.fetch-limit.*: per-client limits on full and
// delta registry fetches (server.FetchLimitConfig).
type FetchLimitConfig struct {
	Enabled        bool   // goreka.fetch-limit.enabled
	FullPerMinute  int    // goreka.fetch-limit.full-per-minute; 0 = unlimited
	DeltaPerMinute int    // goreka.fetch-limit.delta-per-minute; 0 = unlimited
	Burst          int    // goreka.fetch-limit.burst
	MaxClients     int    // goreka.fetch-limit.max-clients
	IdentifyBy     string // goreka.fetch-limit.identify-by: identity or address
}

// HealthConfig holds goreka.health.*: the opt-in health probes and caller
// reports (package health).
type HealthConfig struct {
	Enabled           bool           // goreka.health.probe.enabled
	Mode              string         // goreka.health.probe.mode: on-suspicion or periodic
	Interval          time.Duration  // goreka.health.probe.interval
	Timeout           time.Duration  // goreka.health.probe.timeout
	Concurrency       int            // goreka.health.probe.concurrency
	Jitter            time.Duration  // goreka.health.probe.jitter
	Budget            int            // goreka.health.probe.budget (probes per second)
	FailuresToEvict   int            // goreka.health.probe.failures-to-evict
	FailuresToDown    int            // goreka.health.probe.failures-to-down
	SuccessesToUp     int            // goreka.health.probe.successes-to-up
	MaxFailingPercent int            // goreka.health.probe.max-failing-percent
	Window            time.Duration  // goreka.health.probe.window
	ReportInterval    time.Duration  // goreka.health.report.instance-interval
	ReportsPerMinute  int            // goreka.health.report.per-reporter-per-minute
	AllowedNetworks   []netip.Prefix // goreka.health.probe.allowed-networks (empty: any)
}

// EvictionConfig holds goreka.eviction.*.
type EvictionConfig struct {
	ReportHeldAsDown bool // goreka.eviction.report-held-as-down
}

// PeersConfig holds goreka.peers.*: peers found in DNS.
type PeersConfig struct {
	DNSName         string        // goreka.peers.dns-name; "" = none
	Port            int           // goreka.peers.port; 0 = server.port
	DNSSRV          bool          // goreka.peers.dns-srv
	RefreshInterval time.Duration // goreka.peers.refresh-interval
	DNSServer       string        // goreka.peers.dns-server HOST:PORT; "" = system resolver
}

// ReplicationConfig holds goreka.replication.*: the peer sender.
type ReplicationConfig struct {
	MaxBatchesInFlight int // goreka.replication.max-batches-in-flight
}

// CacheConfig holds goreka.cache.*.
type CacheConfig struct {
	RefreshOnChange bool // goreka.cache.refresh-on-change
}

// SnapshotConfig holds goreka.snapshot.*.
type SnapshotConfig struct {
	Path     string        // goreka.snapshot.path; "" disables snapshots
	Interval time.Duration // goreka.snapshot.interval
	MaxAge   time.Duration // goreka.snapshot.max-age; 0 = no limit
}

// HTTPConfig holds goreka.server.*: limits and timeouts of the HTTP server.
type HTTPConfig struct {
	MaxBodyBytes      int64
	MaxBatchBodyBytes int64
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	ShutdownTimeout   time.Duration
}

// Addr is the listen address, server.address:server.port.
func (c *Config) Addr() string {
	return net.JoinHostPort(c.Server.Address, strconv.Itoa(c.Server.Port))
}

// TLSEnabled reports whether the server should serve HTTPS: server.ssl.enabled
// is not false and a certificate is configured.
func (c *Config) TLSEnabled() bool {
	ssl := c.Server.SSL
	return ssl.Enabled && (ssl.Certificate != "" || ssl.KeyStore != "" || ssl.Bundle != "")
}

// IsSet reports whether a source (not a default) set key. Names compare in
// relaxed form; a map property such as eureka.client.service-url counts as
// set when any of its keys is.
func (c *Config) IsSet(key string) bool {
	canon := canonicalKey(key)
	if _, ok := c.set[canon]; ok {
		return true
	}
	for k := range c.set {
		if strings.HasPrefix(k, canon+".") && isMapPrefix(canon) {
			return true
		}
	}
	return false
}

// PeerURLs returns the service URLs of the region's availability zones: this
// instance's zone first (metadata-map.zone, else the first zone), then the
// others in order, wrapping round, de-duplicated; a zone without URLs uses
// defaultZone's, as in Netflix EndpointUtils.getServiceUrlsFromConfig.
// Removing this server's own URL is left to the caller.
func (c *Config) PeerURLs() []string {
	zones := lookupFold(c.Client.AvailabilityZones, c.Client.Region)
	if len(zones) == 0 {
		zones = []string{defaultZone}
	}
	offset := 0
	if z, ok := c.Instance.Metadata["zone"]; ok {
		if i := slices.Index(zones, z); i >= 0 {
			offset = i
		}
	}
	var out []string
	for n := range zones {
		zone := zones[(offset+n)%len(zones)]
		urls := lookupFold(c.Client.ServiceURL, zone)
		if len(urls) == 0 {
			urls = c.Client.ServiceURL[defaultZone]
		}
		for _, u := range urls {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out
}

// lookupFold finds a map key exactly, else in relaxed form (zone names from
// environment variables arrive lower-cased).
func lookupFold(m map[string][]string, key string) []string {
	if v, ok := m[key]; ok {
		return v
	}
	for k, v := range m {
		if canonicalSegment(k) == canonicalSegment(key) {
			return v
		}
	}
	return nil
}
