package main

import (
	"cmp"
	"crypto/tls"
	"github.com/goreka/goreka/discovery"
	"log/slog"
	"net/http"
	"time"

	"github.com/goreka/goreka/cmd/goreka/config"
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
	"github.com/goreka/goreka/server/metrics"
	"github.com/goreka/goreka/tlsconf"
	"github.com/goreka/goreka/xds"
)

// xdsServer maps goreka.xds.*: nil, which serves nothing, when disabled.
// The xDS port has the main port's TLS and users (identify: the default
// namespace's edge, called once it exists).
func xdsServer(cfg *config.Config, log *slog.Logger, tlsIn *tlsconf.Server, identify func(string, *tls.ConnectionState) (string, []string, bool)) *xds.Server {
	if x := cfg.Goreka.XDS; x.Enabled {
		return xds.New(xds.Config{ZonePriority: x.ZonePriority, HeldAsUnhealthy: x.HeldAsUnhealthy, Logger: log.With("component", "xds"),
			TLS: tlsIn.TLSConfig(), Identify: identify})
	}
	return nil
}

// kubeExporter maps goreka.kubernetes.export.* onto the exporter of the
// default namespace: nil unless enabled.
func (a *app) kubeExporter() (*export.Exporter, error) {
	kc := kube.Config(a.cfg.Goreka.Kubernetes)
	return export.FromConfig(kc, a.reg, a.cfg.Instance.InstanceID, a.kubeMetrics, a.log.With("component", "kubernetes-export"), a.now)
}

// kubeImporter maps goreka.kubernetes.* onto the import: nil unless enabled.
func (a *app) kubeImporter() (*importer.Importer, error) {
	kc := kube.Config(a.cfg.Goreka.Kubernetes)
	if !kc.Enabled || !kc.Import.Enabled {
		return nil, nil
	}
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

func replicationConfig(cfg *config.Config, now func() time.Time, log *slog.Logger, tc func(string) *tls.Config) replication.Config {
	es := cfg.EurekaServer
	c := replication.Default()
	c.PeerNodeConnectTimeout = es.PeerNodeConnectTimeout
	c.PeerNodeReadTimeout = es.PeerNodeReadTimeout
	c.MaxElementsInPeerReplicationPool, c.MaxBatchesInFlight = es.MaxElementsInPeerReplicationPool, cfg.Goreka.Replication.MaxBatchesInFlight
	c.MaxTimeForReplication = es.MaxTimeForReplication
	c.EnableReplicatedRequestCompression = es.EnableReplicatedRequestCompression
	c.TLSConfigFor = tc
	c.Now = now
	c.Logger = log
	return c
}

func serverConfig(cfg *config.Config) server.Config {
	es, fl := cfg.EurekaServer, cfg.Goreka.FetchLimit
	return server.Config{
		DisableDelta: cfg.EurekaServer.DisableDelta, PProf: cfg.Goreka.PProf,
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
		FetchLimit: server.FetchLimitConfig{Enabled: fl.Enabled, FullPerMinute: fl.FullPerMinute, DeltaPerMinute: fl.DeltaPerMinute,
			Burst: fl.Burst, MaxClients: fl.MaxClients, IdentifyBy: fl.IdentifyBy},
	}
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

// remoteRegions maps eureka.server.remote-region-*: one region.Remote per
// region of remote-region-urls-with-name. onChange is called after a
// region's copy changed (a.cache is set by then: fetches start in run).
func remoteRegions(cfg *config.Config, now func() time.Time, log *slog.Logger, onChange func(region.Change), tc func(string) *tls.Config) (document.Regions, error) {
	rr := cfg.EurekaServer.RemoteRegions
	set, err := region.Regions(rr.URLsWithName, region.Config{FetchInterval: rr.FetchInterval, ConnectTimeout: rr.ConnectTimeout,
		ReadTimeout: rr.ReadTimeout, DisableDelta: rr.DisableDelta, GZip: rr.GZip, UserAgent: "goreka-remote-region/dev",
		Now: now, Logger: log, OnChange: onChange, TLSConfigFor: tc}, rr.AppWhitelist)
	return document.Regions{Set: set, DisableTransparentFallback: rr.DisableTransparentFallback}, err
}

// newRelay maps goreka.relay.*: nil without an upstream.
func newRelay(cfg *config.Config, now func() time.Time, log *slog.Logger, reg *registry.Registry, onChange func(region.Change), tc func(string) *tls.Config, authed func(*http.Request) bool) (*relay.Relay, error) {
	rc := cfg.Goreka.Relay
	if len(rc.Upstream) == 0 { // read-only and fetch-apps without it are refused by config
		return nil, nil
	}
	self := discovery.LocalSelf(cfg.Server.Port, cfg.Server.Address, cfg.Instance.IPAddress, cfg.Instance.HostName())
	return relay.New(relay.Config{Upstream: rc.Upstream, ID: cmp.Or(rc.ID, cfg.Instance.InstanceID), HeartbeatInterval: rc.HeartbeatInterval, FetchInterval: rc.FetchInterval,
		FetchApps: rc.FetchApps, ReadOnly: rc.ReadOnly, MaxQueue: rc.MaxQueue, Now: now, Logger: log, OnCopyChange: onChange, TLSConfigFor: tc, Authenticate: authed,
		Self: self}, reg)
}
