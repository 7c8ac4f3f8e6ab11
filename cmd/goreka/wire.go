package main

import (
	"cmp"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/cmd/goreka/config"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/discovery"
	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/health"
	"github.com/goreka/goreka/kube"
	"github.com/goreka/goreka/kube/export"
	"github.com/goreka/goreka/kube/importer"
	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/relay"
	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/server"
	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/metrics"
	"github.com/goreka/goreka/snapshot"
	"github.com/goreka/goreka/tlsconf"
	"github.com/goreka/goreka/xds"
)

// xdsServer maps goreka.xds.*: nil, which serves nothing, when disabled.
// The xDS port has the main port's certificate and users.
func xdsServer(cfg *config.Config, log *slog.Logger, tlsIn *tlsconf.Server) *xds.Server {
	x, sec := cfg.Goreka.XDS, cfg.Security
	if !x.Enabled {
		return nil
	}
	c := xds.Config{ZonePriority: x.ZonePriority, HeldAsUnhealthy: x.HeldAsUnhealthy, Logger: log.With("component", "xds")}
	if sec.Password != "" || len(sec.Users) > 0 { // as the main port's authentication
		c.Credentials = map[string]string{sec.User: sec.Password, sec.ReadOnlyUser: sec.ReadOnlyPassword}
		c.Namespaces = map[string][]string{}
		for _, u := range sec.Users {
			if c.Credentials[u.Name] = u.Password; len(u.Namespaces) > 0 {
				c.Namespaces[u.Name] = u.Namespaces
			}
		}
		for u, p := range c.Credentials { // unset users, and certificate users, who have no password
			if u == "" || p == "" {
				delete(c.Credentials, u)
			}
		}
	}
	if tlsIn != nil {
		c.GetCertificate = tlsIn.GetCertificate // the main port's, rotated with it
	}
	return xds.New(c)
}

// kubeExporter maps goreka.kubernetes.export.* onto the exporter of the
// default namespace: nil unless enabled.
func (a *app) kubeExporter() (*export.Exporter, error) {
	kc := kube.Config(a.cfg.Goreka.Kubernetes)
	e, err := export.FromConfig(kc, a.reg, a.cfg.Instance.InstanceID, a.kubeMetrics, a.log.With("component", "kubernetes-export"), a.now)
	if e != nil && !kc.Import.Enabled { // else kubeImporter registered the set
		a.metrics.Registry().MustRegister(a.kubeMetrics.Collector())
	}
	return e, err
}

// kubeImporter maps goreka.kubernetes.* onto the import: nil unless enabled.
func (a *app) kubeImporter() (*importer.Importer, error) {
	kc := kube.Config(a.cfg.Goreka.Kubernetes)
	if !kc.Enabled || !kc.Import.Enabled {
		return nil, nil
	}
	a.metrics.Registry().MustRegister(a.kubeMetrics.Collector())
	return importer.New(importer.Config{Kube: kc, Metrics: a.kubeMetrics, Now: a.now, Logger: a.log.With("component", "kubernetes-import"),
		Registry: func(ns string) (*registry.Registry, error) {
			s, err := a.ns.Get(ns, true)
			if err != nil {
				return nil, err
			}
			return s.reg, nil
		}, Targets: a.ns.Names})
}

// One function per package maps goreka's configuration onto that
// package's settings, so that newApp only wires and each mapping can be
// read (and checked against the Spring property table) in one place.
// Defaults live in the config table or the package, never here.

func registryOptions(cfg *config.Config, now func() time.Time, onEvent func(registry.Event), onRenew func(registry.Renewal)) registry.Options {
	return registry.Options{
		Now:                   now,
		SelfID:                cfg.Instance.InstanceID,
		ExpectedClients:       cfg.Instance.ExpectedNumberOfClientsSendingRenews,
		IgnoreDirtyTimestamps: !cfg.EurekaServer.SyncWhenTimestampDiffers,
		KeepImported:          cfg.Goreka.Kubernetes.Enabled && cfg.Goreka.Kubernetes.Import.Enabled,
		OnEvent:               onEvent,
		OnRenew:               onRenew,
	}
}

// snapshotConfig maps goreka.snapshot.* (used when the path is set).
func snapshotConfig(cfg *config.Config, now func() time.Time, log *slog.Logger) snapshot.Config {
	sc := cfg.Goreka.Snapshot
	return snapshot.Config{Path: sc.Path, Interval: sc.Interval, MaxAge: sc.MaxAge,
		Server: cfg.Instance.InstanceID, Now: now, Logger: log.With("component", "snapshot")}
}

func evictionConfig(cfg *config.Config, now func() time.Time, log *slog.Logger) eviction.Config {
	es := cfg.EurekaServer
	c := eviction.Default()
	c.EnableSelfPreservation = es.EnableSelfPreservation
	c.RenewalPercentThreshold = es.RenewalPercentThreshold
	c.ExpectedClientRenewalInterval = es.ExpectedClientRenewalInterval
	c.EvictionInterval = es.EvictionInterval
	c.RenewalThresholdUpdateInterval = es.RenewalThresholdUpdateInterval
	c.WaitTimeWhenSyncEmpty = es.WaitTimeWhenSyncEmpty
	c.DeltaRetentionInterval = es.DeltaRetentionTimerInterval
	c.DeltaRetention = es.RetentionTimeInDeltaQueue
	c.DefaultOpenForTrafficCount = cfg.Instance.DefaultOpenForTrafficCount
	c.ReportHeldAsDown = cfg.Goreka.Eviction.ReportHeldAsDown
	// Shorter than a peer's read timeout: goreka peers starting together
	// each hold the others' sync reads, and must refuse them before the
	// reader gives up on its own.
	c.SyncReadWait = es.PeerNodeReadTimeout / 2
	c.Now = now
	c.Logger = log
	return c
}

func healthConfig(cfg *config.Config, now func() time.Time, log *slog.Logger) health.Config {
	h := cfg.Goreka.Health
	c := health.Default()
	c.Enabled = h.Enabled
	c.Mode = health.Mode(h.Mode)
	c.Interval = h.Interval
	c.Timeout = h.Timeout
	c.Concurrency = h.Concurrency
	c.Jitter = h.Jitter
	c.Budget = float64(h.Budget)
	c.FailuresToEvict = h.FailuresToEvict
	c.FailuresToDown = h.FailuresToDown
	c.SuccessesToUp = h.SuccessesToUp
	c.MaxFailingPercent = float64(h.MaxFailingPercent)
	c.Window = h.Window
	c.ReportInterval = h.ReportInterval
	c.ReportsPerMinute = h.ReportsPerMinute
	c.AllowedNetworks = h.AllowedNetworks
	c.Now = now
	c.Logger = log
	return c
}

// selfInfo describes this server to its peers.
func selfInfo(cfg *config.Config) replication.SelfInfo {
	return replication.SelfInfo{
		MyURL:       cfg.EurekaServer.MyURL,
		HostName:    cfg.Instance.HostName(),
		IPAddr:      cfg.Instance.IPAddress,
		Port:        cfg.Server.Port,
		AppName:     cfg.AppName,
		InstanceID:  cfg.Instance.InstanceID,
		Secure:      cfg.TLSEnabled(),
		BindAddress: cfg.Server.Address,
	}
}

// selfLease is the lease of this server's own registration.
func selfLease(cfg *config.Config) registry.LeaseInfo {
	return registry.LeaseInfo{
		RenewalInterval: cfg.Instance.LeaseRenewalInterval,
		Duration:        cfg.Instance.LeaseExpirationDuration,
	}
}

func replicationConfig(cfg *config.Config, now func() time.Time, log *slog.Logger, tc func(string) *tls.Config) replication.Config {
	es := cfg.EurekaServer
	c := replication.Default()
	c.PeerNodeConnectTimeout = es.PeerNodeConnectTimeout
	c.PeerNodeReadTimeout = es.PeerNodeReadTimeout
	c.MaxElementsInPeerReplicationPool = es.MaxElementsInPeerReplicationPool
	c.MaxTimeForReplication = es.MaxTimeForReplication
	c.EnableReplicatedRequestCompression = es.EnableReplicatedRequestCompression
	c.TLSConfigFor = tc
	c.Now = now
	c.Logger = log
	return c
}

// cacheConfig maps Eureka's cache properties. goreka refreshes the readOnly
// tier on change unless the user asked for Eureka's timer, by setting
// response-cache-update-interval-ms or goreka.cache.refresh-on-change=false.
func cacheConfig(cfg *config.Config, now func() time.Time) cache.Config {
	es := cfg.EurekaServer
	c := cache.DefaultConfig()
	c.UseReadOnly = es.UseReadOnlyResponseCache
	c.AutoExpiration = es.ResponseCacheAutoExpiration
	c.UpdateInterval = es.ResponseCacheUpdateInterval
	c.RefreshOnChange = cfg.Goreka.Cache.RefreshOnChange && !cfg.IsSet("eureka.server.response-cache-update-interval-ms")
	c.Now = now
	return c
}

// codecs maps eureka.server.json-codec-name and xml-codec-name (validated
// when the configuration was loaded) to the encoders of the response cache.
func codecs(cfg *config.Config) compat.Codecs {
	j, _ := compat.ParseJSONCodec(cfg.EurekaServer.JSONCodecName)
	x, _ := compat.ParseXMLCodec(cfg.EurekaServer.XMLCodecName)
	return compat.Codecs{JSON: j, XML: x}
}

func serverConfig(cfg *config.Config) server.Config {
	es := cfg.EurekaServer
	return server.Config{
		DisableDelta:      cfg.EurekaServer.DisableDelta,
		MaxBodyBytes:      cfg.Goreka.HTTP.MaxBodyBytes,
		MaxBatchBodyBytes: cfg.Goreka.HTTP.MaxBatchBodyBytes,
		RateLimit: server.RateLimitConfig{
			Enabled:                  es.RateLimiterEnabled,
			ThrottleStandardClients:  es.RateLimiterThrottleStandardClients,
			PrivilegedClients:        es.RateLimiterPrivilegedClients,
			BurstSize:                es.RateLimiterBurstSize,
			RegistryFetchAverageRate: es.RateLimiterRegistryFetchAverageRate,
			FullFetchAverageRate:     es.RateLimiterFullFetchAverageRate,
		},
		FetchLimit: fetchLimitConfig(cfg.Goreka.FetchLimit),
	}
}

// fetchLimitConfig maps goreka.fetch-limit.* to the server's per-client
// fetch limiter.
func fetchLimitConfig(fl config.FetchLimitConfig) server.FetchLimitConfig {
	return server.FetchLimitConfig{Enabled: fl.Enabled, FullPerMinute: fl.FullPerMinute, DeltaPerMinute: fl.DeltaPerMinute,
		Burst: fl.Burst, MaxClients: fl.MaxClients, IdentifyBy: fl.IdentifyBy}
}

func apiConfig(now func() time.Time, x api.XDS) api.Config {
	return api.Config{Now: now, XDS: x}
}

func opsConfig(cfg *config.Config, log *slog.Logger, m *metrics.Metrics, namespace string) server.OpsConfig {
	sec := cfg.Security
	return server.OpsConfig{
		Auth: server.AuthConfig{User: sec.User, Password: sec.Password,
			ReadOnlyUser: sec.ReadOnlyUser, ReadOnlyPassword: sec.ReadOnlyPassword, Users: authUsers(sec.Users), Namespace: namespace},
		AccessLog: cfg.Goreka.AccessLog,
		Logger:    log.With("component", "access"),
		Metrics:   m,
	}
}

func httpServer(cfg *config.Config, h http.Handler, log *slog.Logger) *http.Server {
	hc := cfg.Goreka.HTTP
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: hc.ReadHeaderTimeout,
		ReadTimeout:       hc.ReadTimeout,
		WriteTimeout:      hc.WriteTimeout,
		IdleTimeout:       hc.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelWarn),
	}
}

// peerSources are the origins of the peer list besides the start-up
// configuration (discovery.Plan): the configuration file's service URLs
// again (reload, on hup and every peer-eureka-nodes-update-interval-ms; nil
// when the caller cannot reload), the headless DNS name and Eureka's TXT
// records. It returns nil when the peer list is fixed.
func peerSources(cfg *config.Config, reload func() ([]string, error), hup <-chan struct{}) []discovery.Source {
	form := discovery.URLForm{Scheme: "http", User: cfg.Security.User, Password: cfg.Security.Password}
	if cfg.TLSEnabled() {
		form.Scheme = "https"
	}
	pc, cl := cfg.Goreka.Peers, cfg.Client
	p := discovery.Plan{
		ServiceURLs: peerURLs(cfg), Reload: reload, ReloadInterval: cfg.EurekaServer.PeerEurekaNodesUpdateInterval, Trigger: hup,
		DNSServer: pc.DNSServer, RefreshInterval: pc.RefreshInterval,
		Headless: discovery.Headless{Name: pc.DNSName, Port: pc.Port, SRV: pc.DNSSRV, Form: form},
		Self:     discovery.LocalSelf(cfg.Server.Port, cfg.Server.Address, cfg.Instance.IPAddress),
	}
	if cl.UseDNSForFetchingServiceURLs {
		p.TXT = &discovery.EurekaTXT{Name: cl.EurekaServerDNSName, Region: cl.Region, Zone: cfg.Instance.Metadata["zone"],
			Port: cl.EurekaServerPort, Context: cl.EurekaServerURLContext, Form: form}
	}
	return p.Sources()
}

// newTLS reads the server's (server.ssl.*) and the client's
// (eureka.client.tls.*) TLS material; nil for what is off.
func newTLS(cfg *config.Config, now func() time.Time, log *slog.Logger) (srv *tlsconf.Server, cli *tlsconf.Client, err error) {
	if cfg.TLSEnabled() {
		sc := cfg.ServerTLS()
		sc.Now, sc.Logger = now, log
		if srv, err = tlsconf.NewServer(sc); err != nil {
			return nil, nil, err
		}
	}
	if cc, ok := cfg.ClientTLS(); ok {
		cc.Now, cc.Logger = now, log
		cli, err = tlsconf.NewClient(cc)
	}
	return srv, cli, err
}

// authUsers maps goreka.security.users to the server's per-app users.
func authUsers(us []config.User) []server.UserConfig {
	out := make([]server.UserConfig, len(us))
	for i, u := range us {
		out[i] = server.UserConfig{Name: u.Name, Password: u.Password, Roles: u.Roles, Apps: u.Apps, Namespaces: u.Namespaces, CertificateSubject: u.CertificateSubject}
	}
	return out
}

// remoteRegions maps eureka.server.remote-region-* to one region.Remote per
// region of remote-region-urls-with-name. onChange is called after a
// region's copy changed (a.cache is set by then: fetches start in run).
func remoteRegions(cfg *config.Config, now func() time.Time, log *slog.Logger, onChange func(region.Change), tc func(string) *tls.Config) (document.Regions, error) {
	rr := cfg.EurekaServer.RemoteRegions
	out := document.Regions{DisableTransparentFallback: rr.DisableTransparentFallback}
	if len(rr.URLsWithName) == 0 {
		return out, nil
	}
	var remotes []*region.Remote
	for name, u := range rr.URLsWithName {
		r, err := region.New(region.Config{
			Name: name, URL: u, FetchInterval: rr.FetchInterval,
			ConnectTimeout: rr.ConnectTimeout, ReadTimeout: rr.ReadTimeout,
			DisableDelta: rr.DisableDelta, GZip: rr.GZip,
			UserAgent: "goreka-remote-region/dev",
			Now:       now, Logger: log, OnChange: onChange, TLSConfigFor: tc,
		})
		if err != nil {
			return out, err
		}
		remotes = append(remotes, r)
	}
	out.Set = region.NewSet(remotes, rr.AppWhitelist)
	return out, nil
}

// newRelay maps goreka.relay.*: nil without an upstream.
func newRelay(cfg *config.Config, now func() time.Time, log *slog.Logger, reg *registry.Registry, onChange func(region.Change), tc func(string) *tls.Config) (*relay.Relay, error) {
	rc := cfg.Goreka.Relay
	if len(rc.Upstream) == 0 && (rc.ReadOnly || len(rc.FetchApps) > 0) {
		return nil, errors.New("goreka.relay.read-only and goreka.relay.fetch-apps need goreka.relay.upstream")
	} else if len(rc.Upstream) == 0 {
		return nil, nil
	}
	return relay.New(relay.Config{Upstream: rc.Upstream, ID: cmp.Or(rc.ID, cfg.Instance.InstanceID), HeartbeatInterval: rc.HeartbeatInterval, FetchInterval: rc.FetchInterval,
		FetchApps: rc.FetchApps, ReadOnly: rc.ReadOnly, MaxQueue: rc.MaxQueue, Now: now, Logger: log, OnCopyChange: onChange, TLSConfigFor: tc,
		Self: relay.SelfAddresses(cfg.Server.Port, cfg.Instance.HostName(), cfg.Instance.IPAddress, cfg.Server.Address)}, reg)
}
