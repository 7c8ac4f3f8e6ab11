package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/registry"
)

// secondsText writes a default duration in the syntax of a
// *-in-seconds property, so that defaults owned by a package (the lease
// timings are registry's) are stated there only.
func secondsText(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

// property is one scalar property goreka implements.
type property struct {
	name   string // Spring's kebab-case name
	def    string // default, in the property's own syntax; see dynamic
	doc    string
	set    func(c *Config, v string) error
	secret bool // never printed
	// dynamic, when set, describes a default computed at load time; def is
	// then not applied.
	dynamic string
}

// mapProp is a map-valued property (name.<key>).
type mapProp struct {
	name string
	def  string
	doc  string
}

// ignoredProp is a real Spring/Eureka property goreka accepts but does not
// use. A name ending in ".*" covers everything under it.
type ignoredProp struct {
	name string
	note string // optional hint
}

var mapProps = []mapProp{
	{"eureka.client.service-url", "defaultZone=http://localhost:8761/eureka/",
		"Peer URLs per zone, comma-separated; each gets a trailing /. Spring needs the key defaultZone in camelCase; goreka also takes default-zone and EUREKA_CLIENT_SERVICEURL_DEFAULTZONE."},
	{"eureka.client.availability-zones", "(none: the region has the single zone defaultZone)",
		"Zones of a region, comma-separated (key = region). The own zone (metadata-map.zone, else the first) comes first in the peer list."},
	{"eureka.server.remote-region-urls-with-name", "(none)",
		"Remote regions: region name (key, lower case) -> the region's Eureka base URL (http://host:port/eureka/). Each is fetched every remote-region-registry-fetch-interval and merged into reads that ask for it (?regions=) and, unless disable-transparent-fallback-to-other-region, into plain reads (README \"Remote regions\")."},
	{"eureka.server.remote-region-app-whitelist", "(none: every application)",
		"Applications (comma-separated, exact upper-case names) that may come from a region (key = region name, or global for regions without a list of their own)."},
	{"spring.ssl.bundle.jks", "(none)",
		"Spring Boot SSL bundles of keystores: <name>.keystore.location, .keystore.type, .keystore.password, .key.alias, .key.password, .truststore.location, .truststore.type, .truststore.password, .options.ciphers, .options.enabled-protocols; server.ssl.bundle=<name> serves with one."},
	{"spring.ssl.bundle.pem", "(none)",
		"Spring Boot SSL bundles of PEM files: <name>.keystore.certificate, .keystore.private-key, .truststore.certificate, .options.ciphers, .options.enabled-protocols."},
	{"eureka.instance.metadata-map", "(empty)",
		"Metadata of this server's own instance; the key zone selects its availability zone."},
}

var properties = []property{
	// Spring Boot
	{name: "server.port", def: "8761", doc: "HTTP port; 0 picks a free port.", set: intField(func(c *Config) *int { return &c.Server.Port }, 0, 65535)},
	{name: "server.address", def: "", doc: "Bind address; empty binds all interfaces.", set: strField(func(c *Config) *string { return &c.Server.Address })},
	{name: "server.ssl.enabled", def: "true", doc: "Serve HTTPS when a certificate is configured (Spring Boot's default is true; nothing happens without a certificate).", set: boolField(func(c *Config) *bool { return &c.Server.SSL.Enabled })},
	{name: "goreka.tls.cert-file", def: "", doc: "Alias of server.ssl.certificate.", set: strField(func(c *Config) *string { return &c.Server.SSL.Certificate })},
	{name: "goreka.tls.key-file", def: "", doc: "Alias of server.ssl.certificate-private-key.", set: strField(func(c *Config) *string { return &c.Server.SSL.CertificatePrivateKey })},
	{name: "server.ssl.certificate", def: "", doc: "PEM certificate (chain) file; a file: prefix is allowed.", set: pathField(func(c *Config) *string { return &c.Server.SSL.Certificate })},
	{name: "server.ssl.certificate-private-key", def: "", doc: "PEM private key file of the certificate.", set: pathField(func(c *Config) *string { return &c.Server.SSL.CertificatePrivateKey })},
	// TLS the Spring way (issue 29, package tlsconf): keystores, truststores, client certificates, SSL bundles; files re-read when they change.
	{name: "server.ssl.key-store", def: "", doc: "Keystore with the server's key and certificate chain (PKCS12 or JKS; instead of server.ssl.certificate).", set: pathField(func(c *Config) *string { return &c.Server.SSL.KeyStore })},
	{name: "server.ssl.key-store-type", def: "", doc: "PKCS12, JKS or PEM; empty: JKS for a .jks file, else PKCS12.", set: enumField(func(c *Config) *string { return &c.Server.SSL.KeyStoreType }, "", "pkcs12", "jks", "pem")},
	{name: "server.ssl.key-store-password", def: "", doc: "Password of the keystore.", secret: true, set: strField(func(c *Config) *string { return &c.Server.SSL.KeyStorePassword })},
	{name: "server.ssl.key-password", def: "", doc: "Password of the key entry; empty: the keystore's.", secret: true, set: strField(func(c *Config) *string { return &c.Server.SSL.KeyPassword })},
	{name: "server.ssl.key-alias", def: "", doc: "Alias of the key entry; empty: the only one (JKS: the first by alias).", set: strField(func(c *Config) *string { return &c.Server.SSL.KeyAlias })},
	{name: "server.ssl.trust-store", def: "", doc: "Truststore (PKCS12, JKS or PEM) whose CAs verify client certificates; empty: the system's roots.", set: pathField(func(c *Config) *string { return &c.Server.SSL.TrustStore })},
	{name: "server.ssl.trust-store-type", def: "", doc: "PKCS12, JKS or PEM; empty: as key-store-type.", set: enumField(func(c *Config) *string { return &c.Server.SSL.TrustStoreType }, "", "pkcs12", "jks", "pem")},
	{name: "server.ssl.trust-store-password", def: "", doc: "Password of the truststore.", secret: true, set: strField(func(c *Config) *string { return &c.Server.SSL.TrustStorePassword })},
	{name: "server.ssl.trust-certificate", def: "", doc: "PEM file of the CAs that verify client certificates (instead of trust-store).", set: pathField(func(c *Config) *string { return &c.Server.SSL.TrustCertificate })},
	{name: "server.ssl.client-auth", def: "none", doc: "Client certificates: none, want (verified when sent) or need (the handshake fails without one). A verified certificate names a goreka.security.users entry by its certificate-subject.", set: enumField(func(c *Config) *string { return &c.Server.SSL.ClientAuth }, "none", "want", "need")},
	{name: "server.ssl.enabled-protocols", def: "", doc: "Protocols, comma-separated (TLSv1.2,TLSv1.3); empty: TLS 1.2 and 1.3.", set: listField(func(c *Config) *[]string { return &c.Server.SSL.EnabledProtocols })},
	{name: "server.ssl.ciphers", def: "", doc: "Cipher suites (IANA names, as Java's), comma-separated; an unknown name stops the start. TLS 1.3's three suites are all on or all off in Go.", set: listField(func(c *Config) *[]string { return &c.Server.SSL.Ciphers })},
	{name: "server.ssl.bundle", def: "", doc: "Name of a spring.ssl.bundle.jks.<name> or .pem.<name> bundle to serve with (instead of the server.ssl stores).", set: strField(func(c *Config) *string { return &c.Server.SSL.Bundle })},
	{name: "goreka.tls.reload-interval", def: "10s", doc: "How often the TLS files (server and eureka.client.tls) are checked for a new content (a rotated certificate, a Secret volume's swap).", set: durationField(func(c *Config) *time.Duration { return &c.Server.SSL.ReloadInterval }, false)},
	{name: "eureka.client.tls.enabled", def: "false", doc: "goreka's calls to other Eureka servers (peers, start-up sync, remote regions) use the eureka.client.tls stores; host names are verified.", set: boolField(func(c *Config) *bool { return &c.Client.TLS.Enabled })},
	{name: "eureka.client.tls.key-store", def: "", doc: "Keystore with the client certificate goreka presents to servers that ask.", set: pathField(func(c *Config) *string { return &c.Client.TLS.KeyStore })},
	{name: "eureka.client.tls.certificate-private-key", def: "", doc: "goreka's addition: with key-store-type PEM, the key file of the key-store certificate (a Kubernetes TLS Secret's tls.key); empty: the key is in the key-store file.", set: pathField(func(c *Config) *string { return &c.Client.TLS.CertificatePrivateKey })},
	{name: "eureka.client.tls.key-store-type", def: "PKCS12", doc: "PKCS12, JKS or PEM.", set: enumField(func(c *Config) *string { return &c.Client.TLS.KeyStoreType }, "pkcs12", "jks", "pem")},
	{name: "eureka.client.tls.key-store-password", def: "", doc: "Password of the keystore.", secret: true, set: strField(func(c *Config) *string { return &c.Client.TLS.KeyStorePassword })},
	{name: "eureka.client.tls.key-password", def: "", doc: "Password of the key entry; empty: the keystore's.", secret: true, set: strField(func(c *Config) *string { return &c.Client.TLS.KeyPassword })},
	{name: "eureka.client.tls.trust-store", def: "", doc: "Truststore whose CAs verify the servers; empty: the system's roots.", set: pathField(func(c *Config) *string { return &c.Client.TLS.TrustStore })},
	{name: "eureka.client.tls.trust-store-type", def: "PKCS12", doc: "PKCS12, JKS or PEM.", set: enumField(func(c *Config) *string { return &c.Client.TLS.TrustStoreType }, "pkcs12", "jks", "pem")},
	{name: "eureka.client.tls.trust-store-password", def: "", doc: "Password of the truststore.", secret: true, set: strField(func(c *Config) *string { return &c.Client.TLS.TrustStorePassword })},
	{name: "spring.application.name", def: "eureka-server", doc: "Application name of this server (its own instance registers under it, upper-cased).", set: strField(func(c *Config) *string { return &c.AppName })},
	{name: "spring.security.user.name", def: "", dynamic: "user when a password is set", doc: "Basic-auth user.", set: strField(func(c *Config) *string { return &c.Security.User })},
	{name: "spring.security.user.password", def: "", doc: "Basic-auth password; empty turns authentication off.", set: strField(func(c *Config) *string { return &c.Security.Password }), secret: true},
	{name: "goreka.security.read-only-user", def: "", doc: "A second basic-auth user that may only read (GET, HEAD): dashboards, scrapers, fetch-only clients.", set: strField(func(c *Config) *string { return &c.Security.ReadOnlyUser })},
	{name: "goreka.security.read-only-password", def: "", doc: "Password of goreka.security.read-only-user; both must be set.", set: strField(func(c *Config) *string { return &c.Security.ReadOnlyPassword }), secret: true},
	{name: "logging.level.root", def: "info", doc: "Log level: trace, debug, info, warn, error, fatal or off.", set: levelField(func(c *Config) *slog.Level { return &c.Logging.Root })},
	{name: "logging.level.goreka", def: "", dynamic: "logging.level.root", doc: "Log level of goreka's own components.", set: levelField(func(c *Config) *slog.Level { return &c.Logging.Goreka })},

	// eureka.instance
	{name: "eureka.instance.hostname", dynamic: "the OS host name", doc: "Host name of this server; peer URLs with this host are this server (NF §8.1).", set: strField(func(c *Config) *string { return &c.Instance.Hostname })},
	{name: "eureka.instance.ip-address", dynamic: "first non-loopback IPv4 address, else 127.0.0.1", doc: "IP address of this server.", set: ipField(func(c *Config) *string { return &c.Instance.IPAddress })},
	{name: "eureka.instance.instance-id", dynamic: "hostname:spring.application.name:server.port", doc: "Instance id of this server's own registration.", set: strField(func(c *Config) *string { return &c.Instance.InstanceID })},
	{name: "eureka.instance.prefer-ip-address", def: "false", doc: "Announce the IP address instead of the host name.", set: boolField(func(c *Config) *bool { return &c.Instance.PreferIPAddress })},
	{name: "eureka.instance.lease-renewal-interval-in-seconds", def: secondsText(registry.DefaultRenewalInterval), doc: "Heartbeat interval of this server's own registration.", set: secondsField(func(c *Config) *time.Duration { return &c.Instance.LeaseRenewalInterval }, 1)},
	{name: "eureka.instance.lease-expiration-duration-in-seconds", def: secondsText(registry.DefaultLeaseDuration), doc: "Lease duration of this server's own registration.", set: secondsField(func(c *Config) *time.Duration { return &c.Instance.LeaseExpirationDuration }, 1)},
	{name: "eureka.instance.registry.expected-number-of-clients-sending-renews", def: "1", doc: "Expected clients at start-up, the base of the self-preservation threshold.", set: intField(func(c *Config) *int { return &c.Instance.ExpectedNumberOfClientsSendingRenews }, 0, math.MaxInt32)},
	{name: "eureka.instance.registry.default-open-for-traffic-count", def: "1", doc: "Count used when the start-up sync copied nothing; 1 keeps reads open (Spring), 0 gives Netflix's 403 warm-up.", set: intField(func(c *Config) *int { return &c.Instance.DefaultOpenForTrafficCount }, 0, math.MaxInt32)},

	// eureka.client
	{name: "eureka.client.region", def: "us-east-1", doc: "Region whose availability zones give the peer list.", set: nonEmptyField(func(c *Config) *string { return &c.Client.Region })},
	{name: "eureka.client.register-with-eureka", def: "true", doc: "Register this server with its peers (needed to show as an available replica).", set: boolField(func(c *Config) *bool { return &c.Client.RegisterWithEureka })},
	{name: "eureka.client.use-dns-for-fetching-service-urls", def: "false", doc: "Eureka's DNS mode: the peers are the hosts listed by the TXT records txt.{zone}.{dns-name} of the zones listed by txt.{region}.{dns-name}, re-read every goreka.peers.refresh-interval.", set: boolField(func(c *Config) *bool { return &c.Client.UseDNSForFetchingServiceURLs })},
	{name: "eureka.client.eureka-server-d-n-s-name", def: "", doc: "Domain of the TXT records of Eureka's DNS mode.", set: strField(func(c *Config) *string { return &c.Client.EurekaServerDNSName })},
	{name: "eureka.client.eureka-server-port", dynamic: "server.port", doc: "Port of the peers found in Eureka's DNS mode.", set: intField(func(c *Config) *int { return &c.Client.EurekaServerPort }, 1, 65535)},
	{name: "eureka.client.eureka-server-u-r-l-context", def: "eureka", doc: "Path of the peers' service URLs in Eureka's DNS mode.", set: strField(func(c *Config) *string { return &c.Client.EurekaServerURLContext })},
	{name: "eureka.client.fetch-registry", def: "true", doc: "Fetch the registry from peers (the start-up sync).", set: boolField(func(c *Config) *bool { return &c.Client.FetchRegistry })},

	// eureka.*
	{name: "eureka.environment", def: "test", doc: "Environment shown on the dashboard.", set: strField(func(c *Config) *string { return &c.Environment })},
	{name: "eureka.datacenter", def: "default", doc: "Data center shown on the dashboard.", set: strField(func(c *Config) *string { return &c.Datacenter })},
	{name: "eureka.dashboard.path", def: "/", doc: "Path of the dashboard.", set: pathPrefixField(func(c *Config) *string { return &c.Dashboard.Path })},
	{name: "eureka.dashboard.enabled", def: "true", doc: "Serve the dashboard.", set: boolField(func(c *Config) *bool { return &c.Dashboard.Enabled })},

	// eureka.server
	{name: "eureka.server.enable-self-preservation", def: "true", doc: "Stop evicting when renewals fall below the threshold.", set: boolField(func(c *Config) *bool { return &c.EurekaServer.EnableSelfPreservation })},
	{name: "eureka.server.renewal-percent-threshold", def: "0.85", doc: "Share of expected renewals below which self-preservation starts, in (0,1].", set: percentField(func(c *Config) *float64 { return &c.EurekaServer.RenewalPercentThreshold })},
	{name: "eureka.server.renewal-threshold-update-interval-ms", def: "900000", doc: "How often the expected-renewals threshold is recomputed.", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.RenewalThresholdUpdateInterval }, 1)},
	{name: "eureka.server.expected-client-renewal-interval-seconds", def: secondsText(registry.DefaultRenewalInterval), doc: "Heartbeat interval clients are assumed to use; 0 means 30 as in Netflix.", set: secondsField(func(c *Config) *time.Duration { return &c.EurekaServer.ExpectedClientRenewalInterval }, 0)},
	{name: "eureka.server.eviction-interval-timer-in-ms", def: "60000", doc: "How often expired leases are evicted.", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.EvictionInterval }, 1)},
	{name: "eureka.server.retention-time-in-m-s-in-delta-queue", def: "180000", doc: "How long a change stays in the delta.", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.RetentionTimeInDeltaQueue }, 1)},
	{name: "eureka.server.delta-retention-timer-interval-in-ms", def: "30000", doc: "How often old changes are dropped from the delta.", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.DeltaRetentionTimerInterval }, 1)},
	{name: "eureka.server.remote-region-urls", def: "", doc: "Remote region URLs, comma-separated. Like Eureka, goreka reads them nowhere (regions come from remote-region-urls-with-name); they are only checked to be URLs.", set: urlListField(func(c *Config) *[]string { return &c.EurekaServer.RemoteRegions.URLs })},
	{name: "eureka.server.remote-region-registry-fetch-interval", def: "30", doc: "Seconds between two fetches of a remote region's registry (delta, or full when needed); a fetch that takes longer is abandoned.", set: secondsField(func(c *Config) *time.Duration { return &c.EurekaServer.RemoteRegions.FetchInterval }, 1)},
	{name: "eureka.server.disable-delta-for-remote-regions", def: "false", doc: "Fetch remote regions' full registries every time instead of deltas.", set: boolField(func(c *Config) *bool { return &c.EurekaServer.RemoteRegions.DisableDelta })},
	{name: "eureka.server.g-zip-content-from-remote-region", def: "true", doc: "Ask remote regions for gzip bodies.", set: boolField(func(c *Config) *bool { return &c.EurekaServer.RemoteRegions.GZip })},
	{name: "eureka.server.remote-region-connect-timeout-ms", def: "1000", doc: "Connect timeout of remote region fetches.", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.RemoteRegions.ConnectTimeout }, 1)},
	{name: "eureka.server.remote-region-read-timeout-ms", def: "1000", doc: "Read timeout of remote region fetches: the longest wait for the headers or the next bytes of the body.", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.RemoteRegions.ReadTimeout }, 1)},
	{name: "eureka.server.disable-transparent-fallback-to-other-region", def: "false", doc: "Plain reads (no ?regions=) serve the local registry only. While false (Eureka's default), plain GET apps merges every remote region in and single-application, VIP and delta reads fall back to them.", set: boolField(func(c *Config) *bool { return &c.EurekaServer.RemoteRegions.DisableTransparentFallback })},
	{name: "eureka.server.disable-delta", def: "false", doc: "Answer 403 to GET apps/delta.", set: boolField(func(c *Config) *bool { return &c.EurekaServer.DisableDelta })},
	{name: "eureka.server.response-cache-auto-expiration-in-seconds", def: "180", doc: "Lifetime of an entry in the read-write response cache.", set: secondsField(func(c *Config) *time.Duration { return &c.EurekaServer.ResponseCacheAutoExpiration }, 1)},
	{name: "eureka.server.response-cache-update-interval-ms", def: "30000", doc: "Refresh period of the read-only cache. goreka refreshes on change (goreka.cache.refresh-on-change) and keeps this timer only when you set it.", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.ResponseCacheUpdateInterval }, 1)},
	{name: "eureka.server.use-read-only-response-cache", def: "true", doc: "Serve reads from the read-only cache tier.", set: boolField(func(c *Config) *bool { return &c.EurekaServer.UseReadOnlyResponseCache })},
	{name: "eureka.server.wait-time-in-ms-when-sync-empty", def: "300000", doc: "Warm-up during which reads get 403 after an empty start-up sync (only with default-open-for-traffic-count 0).", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.WaitTimeWhenSyncEmpty }, 0)},
	{name: "eureka.server.registry-sync-retries", dynamic: "1 when register-with-eureka is true, else 0", doc: "Start-up sync attempts. Spring sets 5 when register-with-eureka is true, which sleeps 4 x registry-sync-retry-wait-ms (2 min) on a lonely node; goreka makes one attempt, without sleeping, and lets heartbeats converge the rest (NF §8.5).", set: intField(func(c *Config) *int { return &c.EurekaServer.RegistrySyncRetries }, 0, math.MaxInt32)},
	{name: "eureka.server.registry-sync-retry-wait-ms", def: "30000", doc: "Sleep between start-up sync attempts.", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.RegistrySyncRetryWait }, 0)},
	{name: "eureka.server.sync-when-timestamp-differs", def: "true", doc: "Adopt a peer's newer copy on a 409 to a replicated heartbeat.", set: boolField(func(c *Config) *bool { return &c.EurekaServer.SyncWhenTimestampDiffers })},
	{name: "eureka.server.peer-eureka-nodes-update-interval-ms", def: "600000", doc: "How often the peer list is rebuilt.", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.PeerEurekaNodesUpdateInterval }, 1)},
	{name: "eureka.server.peer-node-connect-timeout-ms", def: "1000", doc: "Connect timeout to peers. Netflix's 1000, not Spring's 200.", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.PeerNodeConnectTimeout }, 1)},
	{name: "eureka.server.peer-node-read-timeout-ms", def: "5000", doc: "Read timeout to peers. Netflix's 5000, not Spring's 200: 200 ms times out batches under load and the retries cause replication storms (\"socket read timeout\" logs).", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.PeerNodeReadTimeout }, 1)},
	{name: "eureka.server.max-elements-in-peer-replication-pool", def: "10000", doc: "Pending replication tasks per peer; beyond it, the oldest task's instance is marked for a resync of its current state.", set: intField(func(c *Config) *int { return &c.EurekaServer.MaxElementsInPeerReplicationPool }, 1, math.MaxInt32)},
	{name: "eureka.server.max-time-for-replication", def: "30000", doc: "Milliseconds after which a pending replication task expires.", set: millisField(func(c *Config) *time.Duration { return &c.EurekaServer.MaxTimeForReplication }, 1)},
	{name: "eureka.server.enable-replicated-request-compression", def: "false", doc: "Gzip replication request bodies.", set: boolField(func(c *Config) *bool { return &c.EurekaServer.EnableReplicatedRequestCompression })},
	{name: "eureka.server.my-url", def: "", doc: "This server's own service URL; when set, only this exact URL is excluded from the peers.", set: urlField(func(c *Config) *string { return &c.EurekaServer.MyURL })},
	{name: "eureka.server.min-available-instances-for-peer-replication", def: "-1", doc: "Available replicas needed for the status page to report healthy; -1 disables the check.", set: intField(func(c *Config) *int { return &c.EurekaServer.MinAvailableInstancesForPeerReplication }, -1, math.MaxInt32)},

	{name: "eureka.server.rate-limiter-enabled", def: "false", doc: "Answer 503 to registry fetches (apps, apps/delta, apps/{app}) over the rate limit from clients that are not privileged (Netflix's RateLimitingFilter; stock Spring servers ignore it). Off, over-limit fetches are only counted as candidates.", set: boolField(func(c *Config) *bool { return &c.EurekaServer.RateLimiterEnabled })},
	{name: "eureka.server.rate-limiter-throttle-standard-clients", def: "false", doc: "Also throttle the standard clients (DiscoveryIdentity-Name DefaultClient or DefaultServer) and the privileged ones.", set: boolField(func(c *Config) *bool { return &c.EurekaServer.RateLimiterThrottleStandardClients })},
	{name: "eureka.server.rate-limiter-privileged-clients", def: "", doc: "DiscoveryIdentity-Name values never throttled besides DefaultClient and DefaultServer, comma-separated.", set: listField(func(c *Config) *[]string { return &c.EurekaServer.RateLimiterPrivilegedClients })},
	{name: "eureka.server.rate-limiter-burst-size", def: "10", doc: "Token bucket size of both rate limits; 0 admits everything.", set: intField(func(c *Config) *int { return &c.EurekaServer.RateLimiterBurstSize }, 0, math.MaxInt32)},
	{name: "eureka.server.rate-limiter-registry-fetch-average-rate", def: "500", doc: "Registry fetches (full, delta, application) per second; 0 admits everything.", set: intField(func(c *Config) *int { return &c.EurekaServer.RateLimiterRegistryFetchAverageRate }, 0, math.MaxInt32)},
	{name: "eureka.server.rate-limiter-full-fetch-average-rate", def: "100", doc: "Full registry fetches per second; 0 admits everything.", set: intField(func(c *Config) *int { return &c.EurekaServer.RateLimiterFullFetchAverageRate }, 0, math.MaxInt32)},
	{name: "eureka.server.json-codec-name", def: "LegacyJacksonJson", doc: "Codec of the full JSON registry documents (apps, apps/{app}, delta, vips): LegacyJacksonJson or JacksonJson (Jackson data binding: other field order, sid always, boolean and number types).", set: codecField(func(c *Config) *string { return &c.EurekaServer.JSONCodecName }, compat.ParseJSONCodec)},
	{name: "eureka.server.xml-codec-name", def: "XStreamXml", doc: "Codec of the full XML registry documents: XStreamXml or JacksonXml (one line, overriddenStatus, <metadata/>).", set: codecField(func(c *Config) *string { return &c.EurekaServer.XMLCodecName }, compat.ParseXMLCodec)},
	// goreka
	{name: "goreka.cache.refresh-on-change", def: "true", doc: "Rebuild cached responses right after a registry change instead of waiting for the 30 s timer.", set: boolField(func(c *Config) *bool { return &c.Goreka.Cache.RefreshOnChange })},
	{name: "goreka.snapshot.path", def: "", doc: "File to which the registry is saved and from which it is restored at start-up; empty disables snapshots.", set: strField(func(c *Config) *string { return &c.Goreka.Snapshot.Path })},
	{name: "goreka.snapshot.interval", def: "5s", doc: "How often the snapshot is written.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.Snapshot.Interval }, false)},
	{name: "goreka.snapshot.max-age", def: "1h", doc: "Older snapshots are not restored; 0 restores any age.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.Snapshot.MaxAge }, true)},
	{name: "goreka.log.format", def: "text", doc: "Log format: text or json.", set: enumField(func(c *Config) *string { return &c.Goreka.LogFormat }, "text", "json")},
	{name: "goreka.access-log", def: "false", doc: "Log every HTTP request.", set: boolField(func(c *Config) *bool { return &c.Goreka.AccessLog })},
	{name: "goreka.debug.pprof-enabled", def: "false", doc: "Serve Go's runtime profiles (net/http/pprof) at /debug/pprof/ on the main port; with security configured, to admin users only (spring.security.user, or the admin role). A CPU profile's seconds must end within goreka.server.write-timeout.", set: boolField(func(c *Config) *bool { return &c.Goreka.PProf })},
	{name: "goreka.namespaces.allowed", def: "", doc: "Namespaces served at /ns/{name}/eureka/ beside the default /eureka/, comma-separated DNS labels (lower case); they exist from start-up.", set: namespaceListField(func(c *Config) *[]string { return &c.Goreka.Namespaces.Allowed })},
	{name: "goreka.namespaces.auto-create", def: "false", doc: "Create a namespace at the first request to any valid /ns/{name}/. Off by default: a typo in a defaultZone or a scanner then gets 404 naming the namespace instead of a new, empty registry that a client would take for the truth.", set: boolField(func(c *Config) *bool { return &c.Goreka.Namespaces.AutoCreate })},
	{name: "goreka.namespaces.max", def: "100", doc: "Most namespaces besides the default one (allowed and auto-created); a request that would create one more gets 403.", set: intField(func(c *Config) *int { return &c.Goreka.Namespaces.Max }, 0, 100000)},
	{name: "goreka.namespaces.max-instances", def: "10000", doc: "Most instances in one namespace other than the default; a registration of one more gets 403 and changes nothing. 0: unlimited.", set: intField(func(c *Config) *int { return &c.Goreka.Namespaces.MaxInstances }, 0, math.MaxInt32)},
	{name: "goreka.namespaces.stock-peers", def: "", doc: "Peers (service URLs or host:port, comma-separated) that are stock Java Eureka servers: they exchange only the default namespace. Every other peer is taken for a goreka and gets each namespace at /ns/{name}/eureka/.", set: listField(func(c *Config) *[]string { return &c.Goreka.Namespaces.StockPeers })},
	{name: "goreka.consul-api.enabled", def: "false", doc: "Serve a read-only Consul catalog API (/v1/catalog, /v1/health, /v1/agent/self) over the registry.", set: boolField(func(c *Config) *bool { return &c.Goreka.ConsulAPI })},
	{name: "goreka.xds.enabled", def: "false", doc: "Serve the registry over xDS (ADS, state of the world and delta) to Envoy and proxyless gRPC clients (xds:///name) on its own gRPC port (README \"Envoy and gRPC (xDS)\"), and its REST-JSON form (POST /v3/discovery:clusters, ...) on the main port. The gRPC port has the main port's TLS certificate and users (authorization: Basic in the call's metadata).", set: boolField(func(c *Config) *bool { return &c.Goreka.XDS.Enabled })},
	{name: "goreka.xds.port", def: "18000", doc: "gRPC port of the xDS server; 0 picks a free port.", set: intField(func(c *Config) *int { return &c.Goreka.XDS.Port }, 0, 65535)},
	{name: "goreka.xds.address", dynamic: "server.address", doc: "Bind address of the xDS server; empty binds all interfaces.", set: strField(func(c *Config) *string { return &c.Goreka.XDS.Address })},
	{name: "goreka.xds.zone-priority", def: "true", doc: "A node that declares a locality zone gets its own zone's endpoints at priority 0, the other zones' at 1 and the remote regions' (eureka.server.remote-region-*) at 2, renumbered without gaps (a zone with no endpoints takes no priority).", set: boolField(func(c *Config) *bool { return &c.Goreka.XDS.ZonePriority })},
	{name: "goreka.xds.held-as-unhealthy", def: "true", doc: "A lease whose heartbeats stopped (expired, not evicted: held by self-preservation) or that goreka's health evidence calls dead is UNHEALTHY over xDS, though Eureka clients may still see it UP; false serves every instance by the status Eureka clients see.", set: boolField(func(c *Config) *bool { return &c.Goreka.XDS.HeldAsUnhealthy })},
	// goreka.kubernetes.*: the Kubernetes bridge (issue 27, README "Kubernetes bridge").
	{name: "goreka.kubernetes.enabled", def: "false", doc: "Connect to a Kubernetes API server (in-cluster, or goreka.kubernetes.kubeconfig) for the bridge's import and export directions.", set: boolField(func(c *Config) *bool { return &c.Goreka.Kubernetes.Enabled })},
	{name: "goreka.kubernetes.kubeconfig", def: "", doc: "kubeconfig file of the API server; empty: the in-cluster service account.", set: pathField(func(c *Config) *string { return &c.Goreka.Kubernetes.Kubeconfig })},
	{name: "goreka.kubernetes.cluster-id", def: "default", doc: "Marks everything this goreka group writes to Kubernetes (label goreka.io/cluster-id) and imports (metadata goreka.cluster-id); two groups on one API server need different ids. A Kubernetes label value.", set: labelValueField(func(c *Config) *string { return &c.Goreka.Kubernetes.ClusterID })},
	{name: "goreka.kubernetes.resync-grace", def: "30s", doc: "After a start, nothing imported is removed until the informers have synced and this much time has passed (after a lost connection nothing is removed until the informers have synced again).", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.Kubernetes.ResyncGrace }, true)},
	{name: "goreka.kubernetes.import.enabled", def: "false", doc: "Import every EndpointSlice endpoint of a Service as a lease-less instance of the application named after the Service, upper-cased (source=kubernetes; never evicted, not replicated, withdrawn when Kubernetes withdraws it).", set: boolField(func(c *Config) *bool { return &c.Goreka.Kubernetes.Import.Enabled })},
	{name: "goreka.kubernetes.import.namespaces", def: "", doc: "Kubernetes namespaces imported from, comma-separated; empty: all the client may read.", set: k8sNamespaceListField(func(c *Config) *[]string { return &c.Goreka.Kubernetes.Import.Namespaces })},
	{name: "goreka.kubernetes.import.port-name", def: "", doc: "Name of the EndpointSlice port that becomes the instance's port; empty: the first port.", set: strField(func(c *Config) *string { return &c.Goreka.Kubernetes.Import.PortName })},
	{name: "goreka.kubernetes.import.namespace-mode", def: "default", doc: "default: every imported Service goes to goreka's default namespace; namespaces: a Service of Kubernetes namespace N goes to goreka's namespace N (/ns/N/eureka/; it must be allowed or auto-created).", set: enumField(func(c *Config) *string { return &c.Goreka.Kubernetes.Import.NamespaceMode }, "default", "namespaces")},
	{name: "goreka.kubernetes.export.enabled", def: "false", doc: "Write every Eureka application with IP instances as a selectorless Service with goreka-managed EndpointSlices (one node of the peer group writes: a Lease elects it).", set: boolField(func(c *Config) *bool { return &c.Goreka.Kubernetes.Export.Enabled })},
	{name: "goreka.kubernetes.export.namespace", def: "", doc: "Kubernetes namespace the export writes to; empty: the namespace goreka runs in (in-cluster), else default.", set: k8sNamespaceField(func(c *Config) *string { return &c.Goreka.Kubernetes.Export.Namespace })},
	{name: "goreka.kubernetes.export.endpoints", def: "true", doc: "Also write a core/v1 Endpoints object per exported Service (labelled endpointslice.kubernetes.io/skip-mirror), for consumers that read Endpoints (Spring Cloud Kubernetes' DiscoveryClient).", set: boolField(func(c *Config) *bool { return &c.Goreka.Kubernetes.Export.Endpoints })},
	{name: "goreka.server.max-body-bytes", def: "1MB", doc: "Largest request body (register, status, metadata); sizes take B, KB, MB, GB (1024-based, as Spring's DataSize) or KiB, MiB, GiB.", set: sizeField(func(c *Config) *int64 { return &c.Goreka.HTTP.MaxBodyBytes })},
	{name: "goreka.server.max-batch-body-bytes", def: "32MB", doc: "Largest peer replication batch body.", set: sizeField(func(c *Config) *int64 { return &c.Goreka.HTTP.MaxBatchBodyBytes })},
	{name: "goreka.server.read-header-timeout", def: "10s", doc: "http.Server ReadHeaderTimeout.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.HTTP.ReadHeaderTimeout }, false)},
	{name: "goreka.server.read-timeout", def: "30s", doc: "http.Server ReadTimeout.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.HTTP.ReadTimeout }, false)},
	{name: "goreka.server.write-timeout", def: "60s", doc: "http.Server WriteTimeout.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.HTTP.WriteTimeout }, false)},
	{name: "goreka.server.idle-timeout", def: "120s", doc: "http.Server IdleTimeout.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.HTTP.IdleTimeout }, false)},
	{name: "goreka.server.shutdown-timeout", def: "15s", doc: "Grace period for in-flight requests on shutdown.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.HTTP.ShutdownTimeout }, false)},
	{name: "goreka.health.probe.enabled", def: "false", doc: "Probe instances' health URLs as evidence (off: goreka behaves exactly like Eureka).", set: boolField(func(c *Config) *bool { return &c.Goreka.Health.Enabled })},
	{name: "goreka.health.probe.mode", def: "on-suspicion", doc: "on-suspicion: probe instances that missed heartbeats and held leases; periodic: also every instance heartbeating to this server, every interval, serving failing ones as DOWN.", set: enumField(func(c *Config) *string { return &c.Goreka.Health.Mode }, "on-suspicion", "periodic")},
	{name: "goreka.health.probe.interval", def: "30s", doc: "How often one candidate instance is probed.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.Health.Interval }, false)},
	{name: "goreka.health.probe.timeout", def: "2s", doc: "Timeout of one probe; no answer within it is unreachable.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.Health.Timeout }, false)},
	{name: "goreka.health.probe.concurrency", def: "16", doc: "Probes in flight at most.", set: intField(func(c *Config) *int { return &c.Goreka.Health.Concurrency }, 1, 1024)},
	{name: "goreka.health.probe.jitter", def: "5s", doc: "Each probe is delayed by a random part of this.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.Health.Jitter }, true)},
	{name: "goreka.health.probe.budget", def: "50", doc: "Probes per second at most, whatever the fleet's size.", set: intField(func(c *Config) *int { return &c.Goreka.Health.Budget }, 1, 100000)},
	{name: "goreka.health.probe.failures-to-evict", def: "3", doc: "Failed probes in a row after which a lease held by self-preservation is evicted anyway.", set: intField(func(c *Config) *int { return &c.Goreka.Health.FailuresToEvict }, 1, 1000)},
	{name: "goreka.health.probe.failures-to-down", def: "3", doc: "Failed probes in a row after which a heartbeating instance is served as DOWN (periodic mode).", set: intField(func(c *Config) *int { return &c.Goreka.Health.FailuresToDown }, 1, 1000)},
	{name: "goreka.health.probe.successes-to-up", def: "2", doc: "Successful probes in a row after which DOWN by probe is lifted.", set: intField(func(c *Config) *int { return &c.Goreka.Health.SuccessesToUp }, 1, 1000)},
	{name: "goreka.health.probe.max-failing-percent", def: "50", doc: "The guard: when more of a window's probes fail, goreka stops acting on probes and alerts.", set: intField(func(c *Config) *int { return &c.Goreka.Health.MaxFailingPercent }, 1, 100)},
	{name: "goreka.health.probe.window", def: "1m", doc: "The probes the guard judges.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.Health.Window }, false)},
	{name: "goreka.health.probe.allowed-networks", def: "", doc: "Comma-separated CIDRs (or addresses) probes may connect to; empty: any. Health URLs are what registrants say: limit where goreka sends GETs.", set: prefixListField(func(c *Config) *[]netip.Prefix { return &c.Goreka.Health.AllowedNetworks })},
	{name: "goreka.health.report.instance-interval", def: "10s", doc: "At most one report-triggered probe per instance this often.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.Health.ReportInterval }, false)},
	{name: "goreka.health.report.per-reporter-per-minute", def: "60", doc: "Reports accepted from one reporter address per minute (bursts of 10); beyond, 429.", set: intField(func(c *Config) *int { return &c.Goreka.Health.ReportsPerMinute }, 1, 100000)},
	{name: "goreka.fetch-limit.enabled", def: "false", doc: "Limit full and delta registry fetches per client (503, as Eureka's rate limiter answers), besides the global eureka.server.rate-limiter-*: a client fetching the full registry in a loop is throttled, the others are not.", set: boolField(func(c *Config) *bool { return &c.Goreka.FetchLimit.Enabled })},
	{name: "goreka.fetch-limit.full-per-minute", def: "6", doc: "Full registry fetches (GET apps) one client may make per minute after its burst; 0 = unlimited.", set: intField(func(c *Config) *int { return &c.Goreka.FetchLimit.FullPerMinute }, 0, 60000)},
	{name: "goreka.fetch-limit.delta-per-minute", def: "120", doc: "Delta fetches (GET apps/delta) one client may make per minute after its burst; 0 = unlimited.", set: intField(func(c *Config) *int { return &c.Goreka.FetchLimit.DeltaPerMinute }, 0, 60000)},
	{name: "goreka.fetch-limit.burst", def: "10", doc: "Fetches of each kind one client may make at once before the per-minute rates apply.", set: intField(func(c *Config) *int { return &c.Goreka.FetchLimit.Burst }, 1, 100000)},
	{name: "goreka.fetch-limit.max-clients", def: "10000", doc: "Clients tracked at most (least recently seen dropped first; idle ones forgotten once their allowance refilled): bounds the memory to about 0.5 KB per client.", set: intField(func(c *Config) *int { return &c.Goreka.FetchLimit.MaxClients }, 1, 10000000)},
	{name: "goreka.fetch-limit.identify-by", def: "identity", doc: "identity: a client is its DiscoveryIdentity-Name and DiscoveryIdentity-Id headers when it sends an id (Netflix's Java client does), else its remote IP; address: its remote IP only (headers can be made up). Never X-Forwarded-For.", set: enumField(func(c *Config) *string { return &c.Goreka.FetchLimit.IdentifyBy }, "identity", "address")},
	{name: "goreka.eviction.report-held-as-down", def: "false", doc: "Serve leases held back by self-preservation as DOWN instead of UP, keeping them registered.", set: boolField(func(c *Config) *bool { return &c.Goreka.Eviction.ReportHeldAsDown })},
	{name: "goreka.peers.dns-name", def: "", doc: "DNS name whose A/AAAA addresses (or SRV records) are peers, e.g. a Kubernetes headless Service goreka-headless.NS.svc.cluster.local; re-resolved every goreka.peers.refresh-interval. Combines with eureka.client.service-url.", set: strField(func(c *Config) *string { return &c.Goreka.Peers.DNSName })},
	{name: "goreka.peers.port", dynamic: "server.port", doc: "Port of the peers found by goreka.peers.dns-name addresses.", set: intField(func(c *Config) *int { return &c.Goreka.Peers.Port }, 1, 65535)},
	{name: "goreka.peers.dns-srv", def: "false", doc: "Read SRV records of goreka.peers.dns-name (host and port) instead of its addresses.", set: boolField(func(c *Config) *bool { return &c.Goreka.Peers.DNSSRV })},
	{name: "goreka.peers.refresh-interval", def: "30s", doc: "How often DNS peers are resolved again.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.Peers.RefreshInterval }, false)},
	{name: "goreka.peers.dns-server", def: "", doc: "DNS server HOST:PORT asked for peers; empty uses the system resolver.", set: hostPortField(func(c *Config) *string { return &c.Goreka.Peers.DNSServer })},
	// goreka.replication.*: the peer sender (issue 30, BENCHMARKS.md "Issue 30: pipelined replication").
	{name: "goreka.replication.max-batches-in-flight", def: "4", doc: "Replication batches in flight to one peer at a time. Two batches in flight never carry the same instance, so each instance's changes reach the peer in order whatever order it answers in (a stock Java peer included); 1 sends the next batch only after the previous one was answered.", set: intField(func(c *Config) *int { return &c.Goreka.Replication.MaxBatchesInFlight }, 1, 64)},
	{name: "goreka.relay.upstream", def: "", doc: "Relay mode: the Eureka service URLs of the group above (goreka or stock Java servers, comma-separated like defaultZone, the first that answers used). The relay keeps its clients' leases, forwards their changes upstream under their own identity, sends their heartbeats aggregated (one request per interval to a goreka upstream) and serves the union of its clients and a copy of the upstream registry (README \"Relays and multi-level registries\").", set: listField(func(c *Config) *[]string { return &c.Goreka.Relay.Upstream })},
	{name: "goreka.relay.id", def: "", doc: "This relay's id in the relay chain header (loop detection); empty: eureka.instance.instance-id.", set: strField(func(c *Config) *string { return &c.Goreka.Relay.ID })},
	{name: "goreka.relay.heartbeat-interval", def: "30s", doc: "How often a relay sends its clients' heartbeats upstream.", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.Relay.HeartbeatInterval }, false)},
	{name: "goreka.relay.fetch-interval", def: "30s", doc: "How often a relay refreshes its copy of the upstream registry (full, then deltas checked by the hash).", set: durationField(func(c *Config) *time.Duration { return &c.Goreka.Relay.FetchInterval }, false)},
	{name: "goreka.relay.fetch-apps", def: "", doc: "Upstream applications a relay keeps and serves (comma-separated, any case); empty: all of them.", set: listField(func(c *Config) *[]string { return &c.Goreka.Relay.FetchApps })},
	{name: "goreka.relay.read-only", def: "false", doc: "A read replica: keeps no leases, proxies every write upstream and answers with the upstream's status, serves the upstream copy.", set: boolField(func(c *Config) *bool { return &c.Goreka.Relay.ReadOnly })},
	{name: "goreka.relay.max-queue", def: "100000", doc: "Instances a relay's forwarding queue holds; past it the relay resynchronises the upstream from its registry instead of dropping changes.", set: intField(func(c *Config) *int { return &c.Goreka.Relay.MaxQueue }, 1, 100000000)},
	{name: "goreka.print-config", def: "false", doc: "Print the effective configuration with the source of each value, then exit.", set: boolField(func(c *Config) *bool { return &c.Goreka.PrintConfig })},
}

// ignored lists real Spring Cloud Netflix properties (EurekaServerConfigBean,
// EurekaClientConfigBean, EurekaInstanceConfigBean and friends) that goreka
// accepts without effect. Setting one gives a soft warning, not an error.
var ignored = []ignoredProp{
	// EurekaServerConfigBean
	{name: "eureka.server.a-w-s-access-id"}, {name: "eureka.server.a-w-s-secret-key"},
	{name: "eureka.server.e-i-p-bind-rebind-retries"}, {name: "eureka.server.e-i-p-binding-retry-interval-ms"},
	{name: "eureka.server.e-i-p-binding-retry-interval-ms-when-unbound"},
	{name: "eureka.server.number-of-replication-retries"}, {name: "eureka.server.peer-eureka-status-refresh-time-interval-ms"},
	{name: "eureka.server.peer-node-total-connections"}, {name: "eureka.server.peer-node-total-connections-per-host"},
	{name: "eureka.server.peer-node-connection-idle-timeout-seconds"},
	{name: "eureka.server.a-s-g-query-timeout-ms"}, {name: "eureka.server.a-s-g-update-interval-ms"}, {name: "eureka.server.a-s-g-cache-expiry-timeout-ms"},
	{name: "eureka.server.max-idle-thread-in-minutes-age-for-status-replication"}, {name: "eureka.server.min-threads-for-status-replication"},
	{name: "eureka.server.max-threads-for-status-replication"}, {name: "eureka.server.max-elements-in-status-replication-pool"},
	{name: "eureka.server.max-idle-thread-age-in-minutes-for-peer-replication"}, {name: "eureka.server.min-threads-for-peer-replication"},
	{name: "eureka.server.max-threads-for-peer-replication", note: "goreka sends one batch at a time per peer"},
	{name: "eureka.server.prime-aws-replica-connections"},
	{name: "eureka.server.remote-region-total-connections"}, {name: "eureka.server.remote-region-total-connections-per-host"},
	{name: "eureka.server.remote-region-connection-idle-timeout-seconds"},
	{name: "eureka.server.remote-region-fetch-thread-pool-size", note: "goreka runs one fetch loop per remote region"},
	{name: "eureka.server.remote-region-trust-store", note: "goreka's calls to remote regions use eureka.client.tls.trust-store"}, {name: "eureka.server.remote-region-trust-store-password"},
	{name: "eureka.server.batch-replication", note: "goreka always replicates in batches"},
	{name: "eureka.server.log-identity-headers"}, {name: "eureka.server.list-auto-scaling-groups-role-name"},
	{name: "eureka.server.route53-bind-rebind-retries"}, {name: "eureka.server.route53-binding-retry-interval-ms"},
	{name: "eureka.server.route53-domain-t-t-l"}, {name: "eureka.server.binding-strategy"},
	{name: "eureka.server.initial-capacity-of-response-cache"}, {name: "eureka.server.use-aws-asg-api"},
	{name: "eureka.server.metrics.enabled", note: "goreka always serves Prometheus metrics"},
	{name: "eureka.server.experimental.*"},
	{name: "eureka.server.expected-number-of-renews-per-min", note: "use eureka.instance.registry.expected-number-of-clients-sending-renews"},
	{name: "eureka.server.default-open-for-traffic-count", note: "use eureka.instance.registry.default-open-for-traffic-count"},

	// EurekaClientConfigBean
	{name: "eureka.client.enabled"}, {name: "eureka.client.transport.*"},
	{name: "eureka.client.registry-fetch-interval-seconds"}, {name: "eureka.client.instance-info-replication-interval-seconds"},
	{name: "eureka.client.initial-instance-info-replication-interval-seconds"}, {name: "eureka.client.eureka-service-url-poll-interval-seconds"},
	{name: "eureka.client.proxy-port"}, {name: "eureka.client.proxy-host"}, {name: "eureka.client.proxy-user-name"}, {name: "eureka.client.proxy-password"},
	{name: "eureka.client.eureka-server-read-timeout-seconds", note: "see eureka.server.peer-node-read-timeout-ms"},
	{name: "eureka.client.eureka-server-connect-timeout-seconds", note: "see eureka.server.peer-node-connect-timeout-ms"},
	{name: "eureka.client.backup-registry-impl"}, {name: "eureka.client.eureka-server-total-connections"},
	{name: "eureka.client.eureka-server-total-connections-per-host"}, {name: "eureka.client.eureka-connection-idle-timeout-seconds"}, {name: "eureka.client.registry-refresh-single-vip-address"},
	{name: "eureka.client.heartbeat-executor-thread-pool-size"}, {name: "eureka.client.heartbeat-executor-exponential-back-off-bound"},
	{name: "eureka.client.cache-refresh-executor-thread-pool-size"}, {name: "eureka.client.cache-refresh-executor-exponential-back-off-bound"},
	{name: "eureka.client.g-zip-content"},
	{name: "eureka.client.prefer-same-zone-eureka"}, {name: "eureka.client.log-delta-diff"}, {name: "eureka.client.disable-delta"},
	{name: "eureka.client.fetch-remote-regions-registry"}, {name: "eureka.client.filter-only-up-instances"},
	{name: "eureka.client.dollar-replacement"}, {name: "eureka.client.escape-char-replacement"},
	{name: "eureka.client.allow-redirects"}, {name: "eureka.client.on-demand-update-status-change"},
	{name: "eureka.client.encoder-name"}, {name: "eureka.client.decoder-name"}, {name: "eureka.client.client-data-accept"},
	{name: "eureka.client.should-unregister-on-shutdown"}, {name: "eureka.client.should-enforce-registration-at-init"},
	{name: "eureka.client.order"}, {name: "eureka.client.healthcheck.*"},
	{name: "eureka.client.timeout.*"}, {name: "eureka.client.rest-template-timeout.*"}, {name: "eureka.client.restclient.*"},
	{name: "eureka.client.jersey.*"}, {name: "eureka.client.webclient.*"}, {name: "eureka.client.refresh.*"},

	// EurekaInstanceConfigBean
	{name: "eureka.instance.actuator-prefix"}, {name: "eureka.instance.appname", note: "goreka registers itself as spring.application.name"},
	{name: "eureka.instance.app-group-name"}, {name: "eureka.instance.instance-enabled-onit"},
	{name: "eureka.instance.non-secure-port", note: "goreka registers itself with server.port"}, {name: "eureka.instance.secure-port"},
	{name: "eureka.instance.non-secure-port-enabled"}, {name: "eureka.instance.secure-port-enabled"},
	{name: "eureka.instance.virtual-host-name"}, {name: "eureka.instance.secure-virtual-host-name"},
	{name: "eureka.instance.a-s-g-name"}, {name: "eureka.instance.data-center-info"},
	{name: "eureka.instance.status-page-url-path"}, {name: "eureka.instance.status-page-url"},
	{name: "eureka.instance.home-page-url-path"}, {name: "eureka.instance.home-page-url"},
	{name: "eureka.instance.health-check-url-path"}, {name: "eureka.instance.health-check-url"},
	{name: "eureka.instance.secure-health-check-url"}, {name: "eureka.instance.namespace"},
	{name: "eureka.instance.async-client-initialization"}, {name: "eureka.instance.initial-status"},
	{name: "eureka.instance.default-address-resolution-order"},
	// Spring Boot's server.ssl (issue 29) that goreka has no use for.
	{name: "server.ssl.protocol", note: "goreka speaks TLS; server.ssl.enabled-protocols picks the versions"},
	{name: "server.ssl.key-store-provider", note: "goreka has one provider"}, {name: "server.ssl.trust-store-provider", note: "goreka has one provider"},
	{name: "server.ssl.trust-certificate-private-key", note: "the trust certificates verify clients; no key is needed"},
	{name: "server.ssl.server-name-bundles", note: "goreka serves one certificate for every name"},
}

// Setter constructors. Each parses the text of a value and stores it; the
// error says what was wrong, the caller adds key, value and source.

type setter = func(c *Config, v string) error

func strField(f func(*Config) *string) setter {
	return func(c *Config, v string) error { *f(c) = strings.TrimSpace(v); return nil }
}

func nonEmptyField(f func(*Config) *string) setter {
	return func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if v == "" {
			return errors.New("must not be empty")
		}
		*f(c) = v
		return nil
	}
}

// listField takes a comma-separated list (Spring's form of a list).
func listField(f func(*Config) *[]string) setter {
	return func(c *Config, v string) error {
		*f(c) = splitList(v)
		return nil
	}
}

// namespaceListField takes a comma-separated list of namespace names,
// each a DNS label (namespace.Validate); "default" is the default
// namespace, which always exists, and is refused.
func namespaceListField(f func(*Config) *[]string) setter {
	return func(c *Config, v string) error {
		names := splitList(v)
		for _, n := range names {
			if n == namespace.Default {
				return errors.New(`"default" is the default namespace (/eureka/), which always exists; list the others`)
			}
			if err := namespace.Validate(n); err != nil {
				return err
			}
		}
		*f(c) = names
		return nil
	}
}

// k8sNamespaceListField takes a comma-separated list of Kubernetes
// namespace names (DNS labels; "default" is one).
func k8sNamespaceListField(f func(*Config) *[]string) setter {
	return func(c *Config, v string) error {
		names := splitList(v)
		for _, n := range names {
			if err := namespace.Validate(n); err != nil {
				return errors.New(strings.Replace(err.Error(), "namespace name", "Kubernetes namespace", 1))
			}
		}
		*f(c) = names
		return nil
	}
}

// k8sNamespaceField takes one Kubernetes namespace name, or empty.
func k8sNamespaceField(f func(*Config) *string) setter {
	list := k8sNamespaceListField(func(*Config) *[]string { return new([]string) })
	return func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if v != "" {
			if err := list(c, v); err != nil {
				return err
			}
			if strings.Contains(v, ",") {
				return errors.New("one Kubernetes namespace, not a list")
			}
		}
		*f(c) = v
		return nil
	}
}

// labelValueField takes a non-empty Kubernetes label value: at most 63
// characters, letters, digits, '-', '_' and '.', beginning and ending
// with a letter or digit.
func labelValueField(f func(*Config) *string) setter {
	return func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
			return errors.New("must not be empty")
		case len(v) > 63:
			return errors.New("longer than 63 characters (a Kubernetes label value)")
		}
		alnum := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' }
		for i := 0; i < len(v); i++ {
			if b := v[i]; !alnum(b) && b != '-' && b != '_' && b != '.' {
				return fmt.Errorf("may only hold letters, digits, '-', '_' and '.' (a Kubernetes label value), not %q", b)
			}
		}
		if !alnum(v[0]) || !alnum(v[len(v)-1]) {
			return errors.New("must begin and end with a letter or digit (a Kubernetes label value)")
		}
		*f(c) = v
		return nil
	}
}

// codecField takes a codec name as the Java server does (case-sensitive)
// and refuses one that parse does not implement.
func codecField(f func(*Config) *string, parse func(string) (compat.Codec, error)) setter {
	return func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if _, err := parse(v); err != nil {
			return err
		}
		*f(c) = v
		return nil
	}
}

func enumField(f func(*Config) *string, allowed ...string) setter {
	return func(c *Config, v string) error {
		v = strings.ToLower(strings.TrimSpace(v))
		for _, a := range allowed {
			if v == a {
				*f(c) = v
				return nil
			}
		}
		shown := slices.DeleteFunc(slices.Clone(allowed), func(a string) bool { return a == "" })
		if len(shown) < len(allowed) {
			return fmt.Errorf("must be one of %s (or empty)", strings.Join(shown, ", "))
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

func pathPrefixField(f func(*Config) *string) setter {
	return func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if !strings.HasPrefix(v, "/") {
			return errors.New("must start with /")
		}
		*f(c) = v
		return nil
	}
}

func pathField(f func(*Config) *string) setter {
	return func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "classpath:") {
			return errors.New("goreka has no classpath; give a file path")
		}
		*f(c) = strings.TrimPrefix(v, "file:")
		return nil
	}
}

// parseBool accepts what Spring's StringToBooleanConverter accepts, in any
// case: true/false, on/off, yes/no, 1/0.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "on", "yes", "1":
		return true, nil
	case "false", "off", "no", "0":
		return false, nil
	}
	return false, errors.New("not a boolean (want true or false)")
}

func boolField(f func(*Config) *bool) setter {
	return func(c *Config, v string) error {
		b, err := parseBool(v)
		if err != nil {
			return err
		}
		*f(c) = b
		return nil
	}
}

func parseInt(v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, errors.New("number out of range")
		}
		return 0, errors.New("not a number")
	}
	return n, nil
}

func intField(f func(*Config) *int, lo, hi int) setter {
	return func(c *Config, v string) error {
		n, err := parseInt(v)
		if err != nil {
			return err
		}
		if n < int64(lo) || n > int64(hi) {
			if hi == math.MaxInt32 {
				return fmt.Errorf("must be >= %d", lo)
			}
			return fmt.Errorf("out of range %d..%d", lo, hi)
		}
		*f(c) = int(n)
		return nil
	}
}

// unitField parses a whole number of unit (ms or s) that must be >= lo.
func unitField(f func(*Config) *time.Duration, unit time.Duration, lo int64) setter {
	return func(c *Config, v string) error {
		n, err := parseInt(v)
		if err != nil {
			return err
		}
		if n < lo {
			if lo == 0 {
				return errors.New("must not be negative")
			}
			return fmt.Errorf("must be >= %d", lo)
		}
		if n > int64(math.MaxInt64/unit) {
			return errors.New("number out of range")
		}
		*f(c) = time.Duration(n) * unit
		return nil
	}
}

func millisField(f func(*Config) *time.Duration, lo int64) setter {
	return unitField(f, time.Millisecond, lo)
}

func secondsField(f func(*Config) *time.Duration, lo int64) setter {
	return unitField(f, time.Second, lo)
}

func durationField(f func(*Config) *time.Duration, allowZero bool) setter {
	return func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		d, err := time.ParseDuration(v)
		if err != nil {
			if _, nerr := strconv.ParseFloat(v, 64); nerr == nil {
				return errors.New("not a duration: missing unit (e.g. 5s, 1m, 1h)")
			}
			return errors.New("not a duration (e.g. 5s, 1m, 1h)")
		}
		if d < 0 || (d == 0 && !allowZero) {
			if allowZero {
				return errors.New("must not be negative")
			}
			return errors.New("must be > 0")
		}
		*f(c) = d
		return nil
	}
}

// prefixListField parses comma-separated CIDRs; a bare address is its own
// /32 or /128. Empty is an empty list.
func prefixListField(f func(*Config) *[]netip.Prefix) setter {
	return func(c *Config, v string) error {
		var out []netip.Prefix
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			p, err := netip.ParsePrefix(part)
			if err != nil {
				a, aerr := netip.ParseAddr(part)
				if aerr != nil {
					return fmt.Errorf("%q is not a CIDR (such as 10.0.0.0/8) or an IP address", part)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			out = append(out, p.Masked())
		}
		*f(c) = out
		return nil
	}
}

func percentField(f func(*Config) *float64) setter {
	return func(c *Config, v string) error {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) {
			return errors.New("not a number")
		}
		if x <= 0 || x > 1 {
			return errors.New("must be in (0,1]")
		}
		*f(c) = x
		return nil
	}
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"b", 1},
}

// parseSize reads a byte size: a plain number of bytes or a number with a
// unit (Spring's DataSize units are 1024-based).
func parseSize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mult := int64(1)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errors.New("not a size (e.g. 1048576, 512KB, 1MB)")
	}
	if n <= 0 {
		return 0, errors.New("must be > 0")
	}
	if n > math.MaxInt64/mult {
		return 0, errors.New("size out of range")
	}
	return n * mult, nil
}

func sizeField(f func(*Config) *int64) setter {
	return func(c *Config, v string) error {
		n, err := parseSize(v)
		if err != nil {
			return err
		}
		*f(c) = n
		return nil
	}
}

// parseLevel maps Spring Boot's level names to slog levels.
func parseLevel(v string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "trace":
		return slog.LevelDebug - 4, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	case "fatal":
		return slog.LevelError + 4, nil
	case "off":
		return slog.LevelError + 8, nil
	}
	return 0, errors.New("not a log level (trace, debug, info, warn, error, fatal, off)")
}

func levelField(f func(*Config) *slog.Level) setter {
	return func(c *Config, v string) error {
		l, err := parseLevel(v)
		if err != nil {
			return err
		}
		*f(c) = l
		return nil
	}
}

func ipField(f func(*Config) *string) setter {
	return func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if v != "" && net.ParseIP(v) == nil {
			return errors.New("not an IP address")
		}
		*f(c) = v
		return nil
	}
}

func hostPortField(f func(*Config) *string) setter {
	return func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if v != "" {
			h, p, err := net.SplitHostPort(v)
			if err != nil || h == "" {
				return errors.New("want HOST:PORT")
			}
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return errors.New("want HOST:PORT with a port in 1..65535")
			}
		}
		*f(c) = v
		return nil
	}
}

// urlListField takes comma-separated absolute http(s) URLs.
func urlListField(f func(*Config) *[]string) setter {
	return func(c *Config, v string) error {
		var out []string
		for _, u := range splitList(v) {
			if err := checkURL(u); err != nil {
				return err
			}
			out = append(out, u)
		}
		*f(c) = out
		return nil
	}
}

func urlField(f func(*Config) *string) setter {
	return func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if v != "" {
			if err := checkURL(v); err != nil {
				return err
			}
		}
		*f(c) = v
		return nil
	}
}

// checkURL accepts absolute http and https URLs with a host.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL: %v", errors.Unwrap(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URL %q: scheme must be http or https", s)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("URL %q: no host", s)
	}
	return nil
}

// listProp is a property whose value is a list of records, written
// name[N].field (YAML: a sequence of maps; properties and the command line:
// name[0].field=...; environment: NAME_0_FIELD). As in Spring, the list of
// the highest source that has any entry of it replaces the lists of lower
// ones whole; a record field that is a map (name[N].field.<key>) keeps its
// keys' text.
type listProp struct {
	name   string
	doc    string
	fields []recordField
}

// recordField is one field of a record of a list property. A field whose name
// ends in ".*" is a map.
// canon is the list's canonical name (no canonicalKey: it asks isMapPrefix,
// which asks this).
func (lp listProp) canon() string {
	parts := strings.Split(lp.name, ".")
	for i, p := range parts {
		parts[i] = canonicalSegment(p)
	}
	return strings.Join(parts, ".")
}

type recordField struct {
	name string
	doc  string
	set  func(s *StaticInstance, key, v string) error
}

var listProps = []listProp{
	{name: "goreka.static-instances", doc: "Static registrations: instances that never heartbeat (databases, external APIs). Registered at start, reloaded on SIGHUP, never expire or get evicted, not counted by self-preservation, not replicated (each node serves those of its own configuration).",
		fields: []recordField{
			{"app", "Application name (required; upper-cased).", func(s *StaticInstance, _, v string) error { return nonEmpty(&s.App, v) }},
			{"instance-id", "Instance id; default host-name:app:port.", func(s *StaticInstance, _, v string) error { s.InstanceID = v; return nil }},
			{"host-name", "Host name; default ip-addr (one of the two is required).", func(s *StaticInstance, _, v string) error { s.HostName = v; return nil }},
			{"ip-addr", "IP address; default host-name.", func(s *StaticInstance, _, v string) error { s.IPAddr = v; return nil }},
			{"port", "Port (enabled when set).", func(s *StaticInstance, _, v string) error { return portValue(&s.Port, v) }},
			{"secure-port", "Secure port (enabled when set).", func(s *StaticInstance, _, v string) error { return portValue(&s.SecurePort, v) }},
			{"status", "UP (default), DOWN, STARTING, OUT_OF_SERVICE or UNKNOWN.", func(s *StaticInstance, _, v string) error {
				st, ok := registry.ParseStatus(strings.ToUpper(v))
				if !ok {
					return errors.New("not a status: UP, DOWN, STARTING, OUT_OF_SERVICE or UNKNOWN")
				}
				s.Status = string(st)
				return nil
			}},
			{"vip-address", "VIP address; default the lower-cased app.", func(s *StaticInstance, _, v string) error { s.VIPAddress = v; return nil }},
			{"secure-vip-address", "Secure VIP address; default the lower-cased app.", func(s *StaticInstance, _, v string) error { s.SecureVIPAddress = v; return nil }},
			{"home-page-url", "Home page URL.", func(s *StaticInstance, _, v string) error { s.HomePageURL = v; return nil }},
			{"status-page-url", "Status page URL.", func(s *StaticInstance, _, v string) error { s.StatusPageURL = v; return nil }},
			{"health-check-url", "Health check URL, published to clients (goreka's health probes leave static registrations alone).", func(s *StaticInstance, _, v string) error { s.HealthCheckURL = v; return nil }},
			{"metadata.*", "Metadata map (keys keep their text).", func(s *StaticInstance, k, v string) error {
				if s.Metadata == nil {
					s.Metadata = map[string]string{}
				}
				s.Metadata[k] = v
				return nil
			}},
		}},
}

func nonEmpty(p *string, v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("must not be empty")
	}
	*p = v
	return nil
}

func portValue(p *int, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 65535 {
		return errors.New("not a port (1..65535)")
	}
	*p = n
	return nil
}
