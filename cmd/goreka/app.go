package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/cmd/goreka/config"
	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server"
)

// app is one goreka server: registry, cache, eviction, replication and HTTP,
// wired together.
type app struct {
	cfg     *config.Config
	log     *slog.Logger
	now     func() time.Time
	started time.Time

	reg     *registry.Registry
	cache   *cache.Cache
	evictor *eviction.Evictor
	srv     *server.Server
	http    *http.Server

	// emptyOnStartup is Eureka's peerInstancesTransferEmptyOnStartup.
	mu             sync.Mutex
	emptyOnStartup bool
	openedAt       time.Time
}

func newApp(cfg *config.Config, log *slog.Logger, now func() time.Time) *app {
	a := &app{cfg: cfg, log: log, now: now, started: now()}
	es := cfg.EurekaServer

	a.reg = registry.New(registry.Options{
		Now:                   now,
		SelfID:                cfg.Instance.InstanceID,
		ExpectedClients:       cfg.Instance.ExpectedNumberOfClientsSendingRenews,
		IgnoreDirtyTimestamps: !es.SyncWhenTimestampDiffers,
		OnEvent:               a.onEvent,
	})

	ec := eviction.Default()
	ec.EnableSelfPreservation = es.EnableSelfPreservation
	ec.RenewalPercentThreshold = es.RenewalPercentThreshold
	ec.ExpectedClientRenewalInterval = es.ExpectedClientRenewalInterval
	ec.EvictionInterval = es.EvictionInterval
	ec.RenewalThresholdUpdateInterval = es.RenewalThresholdUpdateInterval
	ec.WaitTimeWhenSyncEmpty = es.WaitTimeWhenSyncEmpty
	ec.DeltaRetentionInterval = es.DeltaRetentionTimerInterval
	ec.DeltaRetention = es.RetentionTimeInDeltaQueue
	ec.Now = now
	ec.Logger = log
	a.evictor = eviction.New(a.reg, ec)

	a.cache = cache.New(cacheConfig(cfg, now), server.NewLoader(a.reg))
	a.srv = server.New(server.Config{
		DisableDelta:          es.DisableDelta,
		MaxBodyBytes:          cfg.Goreka.HTTP.MaxBodyBytes,
		MaxBatchBodyBytes:     cfg.Goreka.HTTP.MaxBatchBodyBytes,
		IgnoreDirtyTimestamps: !es.SyncWhenTimestampDiffers,
	}, server.Deps{
		Registry: a.reg,
		Cache:    a.cache,
		Gate:     a,
		Expiry:   a,
		Status:   a,
		Logger:   log.With("component", "http"),
		Now:      now,
	})

	a.http = &http.Server{
		Handler:           a.srv,
		ReadHeaderTimeout: cfg.Goreka.HTTP.ReadHeaderTimeout,
		ReadTimeout:       cfg.Goreka.HTTP.ReadTimeout,
		WriteTimeout:      cfg.Goreka.HTTP.WriteTimeout,
		IdleTimeout:       cfg.Goreka.HTTP.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelWarn),
	}
	return a
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

// onEvent fans a registry change out: cache invalidation, logs (and, wired
// by later components, replication and metrics).
func (a *app) onEvent(e registry.Event) {
	if e.Changed() && a.cache != nil {
		a.cache.Invalidate(e.App, e.Instance.VIPAddress, e.Instance.SecureVIPAddress)
	}
	switch e.Kind {
	case registry.EventHeartbeat:
		if e.Changed() {
			a.log.Info("status corrected on renew", "app", e.App, "instance", e.ID, "from", e.Prev, "to", e.Instance.Status)
		}
	case registry.EventRegister:
		a.log.Info("registered", "app", e.App, "instance", e.ID, "status", e.Instance.Status, "replication", e.Replicated)
	case registry.EventCancel:
		a.log.Info("cancelled", "app", e.App, "instance", e.ID, "replication", e.Replicated)
	case registry.EventEvict:
		a.log.Info("evicted", "app", e.App, "instance", e.ID)
	case registry.EventStatusUpdate, registry.EventDeleteStatusOverride:
		a.log.Info("status override "+e.Kind.String(), "app", e.App, "instance", e.ID, "status", e.Instance.Status, "replication", e.Replicated)
	}
}

// AllowAccess is Eureka's shouldAllowAccess: reads are refused for
// wait-time-in-ms-when-sync-empty after a start-up sync that found nothing,
// unless default-open-for-traffic-count (Spring's default 1) stood in for it.
func (a *app) AllowAccess() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.emptyOnStartup {
		return true
	}
	return a.now().After(a.openedAt.Add(a.cfg.EurekaServer.WaitTimeWhenSyncEmpty))
}

// LeaseExpirationEnabled is isLeaseExpirationEnabled, computed cheaply.
func (a *app) LeaseExpirationEnabled() bool {
	es := a.cfg.EurekaServer
	th := eviction.Threshold(a.reg.ExpectedClients(), es.ExpectedClientRenewalInterval, es.RenewalPercentThreshold)
	return eviction.LeaseExpirationEnabled(es.EnableSelfPreservation, th, a.reg.RenewsLastMinute())
}

// openForTraffic is Eureka's openForTraffic after the start-up sync.
func (a *app) openForTraffic(synced int) {
	count := synced
	if count == 0 {
		count = a.cfg.Instance.DefaultOpenForTrafficCount
	}
	a.mu.Lock()
	a.emptyOnStartup = count == 0
	a.openedAt = a.now()
	a.mu.Unlock()
	a.evictor.OpenForTraffic(count)
}

// selfView is this server's own instance, as it registers with peers and
// shows on /eureka/status.
func (a *app) selfInstance() *registry.Instance {
	c := a.cfg
	in := &registry.Instance{
		InstanceID:       c.Instance.InstanceID,
		HostName:         c.Instance.HostName(),
		App:              strings.ToUpper(c.AppName),
		IPAddr:           c.Instance.IPAddress,
		Status:           registry.StatusUp,
		OverriddenStatus: registry.StatusUnknown,
		Port:             registry.Port{Number: c.Server.Port, Enabled: true},
		SecurePort:       registry.Port{Number: 443, Enabled: false},
		CountryID:        1,
		DataCenterInfo:   registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		LeaseInfo: registry.LeaseInfo{
			RenewalInterval: c.Instance.LeaseRenewalInterval,
			Duration:        c.Instance.LeaseExpirationDuration,
		},
		Metadata:                      c.Instance.Metadata,
		VIPAddress:                    strings.ToLower(c.AppName),
		SecureVIPAddress:              strings.ToLower(c.AppName),
		IsCoordinatingDiscoveryServer: true,
		LastDirtyTimestamp:            a.started,
		LastUpdatedTimestamp:          a.started,
		ActionType:                    registry.ActionAdded,
	}
	scheme := "http"
	if c.TLSEnabled() {
		scheme = "https"
	}
	base := scheme + "://" + net.JoinHostPort(in.HostName, strconv.Itoa(c.Server.Port))
	in.HomePageURL = base + "/"
	in.StatusPageURL = base + "/actuator/info"
	in.HealthCheckURL = base + "/actuator/health"
	return in
}

// StatusInfo feeds GET /eureka/status (Eureka's StatusResource).
func (a *app) StatusInfo() server.StatusInfo {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	uptime := a.now().Sub(a.started)
	st := server.StatusInfo{
		General: [][2]string{
			{"environment", a.cfg.Environment},
			{"num-of-cpus", strconv.Itoa(runtime.NumCPU())},
			{"total-avail-memory", fmt.Sprintf("%dmb", ms.Sys>>20)},
			{"current-memory-usage", fmt.Sprintf("%dmb (%d%%)", ms.HeapAlloc>>20, percent(ms.HeapAlloc, ms.Sys))},
			{"server-uptime", formatUptime(uptime)},
		},
	}
	v := registry.LeaseView{Instance: a.selfInstance(), RegistrationTimestamp: a.started, LastRenewalTimestamp: a.now(), ServiceUpTimestamp: a.started,
		RenewalInterval: a.cfg.Instance.LeaseRenewalInterval, Duration: a.cfg.Instance.LeaseExpirationDuration}
	st.Instance = &v
	return st
}

func percent(a, b uint64) uint64 {
	if b == 0 {
		return 0
	}
	return a * 100 / b
}

// joinTrailing joins replica URLs as Eureka's StatusUtil does: each followed
// by a comma.
func joinTrailing(urls []string) string {
	var b strings.Builder
	for _, u := range urls {
		b.WriteString(u)
		b.WriteByte(',')
	}
	return b.String()
}

// formatUptime is StatusInfo.getUpTime: "HH:MM", with "N day(s) " before.
func formatUptime(d time.Duration) string {
	days := int(d.Hours()) / 24
	h := int(d.Hours()) % 24
	m := int(d.Minutes()) % 60
	s := fmt.Sprintf("%02d:%02d", h, m)
	switch {
	case days == 1:
		return "1 day " + s
	case days > 1:
		return fmt.Sprintf("%d days %s", days, s)
	}
	return s
}

// run serves until ctx is done, then shuts down gracefully. It returns an
// error only for start-up failures (e.g. the port is in use).
func (a *app) run(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { a.runLoop(ctx, "cache", a.cache.Run) })
	wg.Go(func() { a.runLoop(ctx, "eviction", a.evictor.Run) })

	a.openForTraffic(0)

	errc := make(chan error, 1)
	go func() {
		var err error
		if a.cfg.TLSEnabled() {
			err = a.http.ServeTLS(ln, a.cfg.Server.SSL.Certificate, a.cfg.Server.SSL.CertificatePrivateKey)
		} else {
			err = a.http.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
		close(errc)
	}()
	a.log.Info("goreka started", "addr", ln.Addr().String(), "app", a.cfg.AppName, "instance", a.cfg.Instance.InstanceID,
		"self_preservation", a.cfg.EurekaServer.EnableSelfPreservation)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	a.log.Info("shutting down")
	sctx, scancel := context.WithTimeout(context.Background(), a.cfg.Goreka.HTTP.ShutdownTimeout)
	defer scancel()
	if err := a.http.Shutdown(sctx); err != nil {
		a.log.Warn("HTTP shutdown did not finish in time", "err", err)
	}
	cancel()
	wg.Wait()
	return serveErr
}

func (a *app) runLoop(ctx context.Context, name string, f func(context.Context) error) {
	if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
		a.log.Error("background loop stopped", "loop", name, "err", err)
	}
}
