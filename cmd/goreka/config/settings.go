package config

import (
	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/discovery"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/snapshot"
)

// The settings of the packages configuration may import (none of them
// serves HTTP) are mapped here, beside the property table that names
// them, as ServerTLS and ClientTLS map tlsconf's: cmd/goreka adds only
// what is not configuration (clocks, loggers, callbacks). Defaults live in
// the table or the package, never here.

// RegistryOptions are the registry's settings; the caller adds Now and
// the listeners.
func (c *Config) RegistryOptions() registry.Options {
	return registry.Options{
		SelfID:                c.Instance.InstanceID,
		ExpectedClients:       c.Instance.ExpectedNumberOfClientsSendingRenews,
		IgnoreDirtyTimestamps: !c.EurekaServer.SyncWhenTimestampDiffers,
		KeepImported:          c.Goreka.Kubernetes.Enabled && c.Goreka.Kubernetes.Import.Enabled,
	}
}

// SelfLease is the lease of this server's own registration.
func (c *Config) SelfLease() registry.LeaseInfo {
	return registry.LeaseInfo{RenewalInterval: c.Instance.LeaseRenewalInterval, Duration: c.Instance.LeaseExpirationDuration}
}

// SnapshotConfig maps goreka.snapshot.* (used when the path is set); the
// caller adds Now and Logger.
func (c *Config) SnapshotConfig() snapshot.Config {
	sc := c.Goreka.Snapshot
	return snapshot.Config{Path: sc.Path, Interval: sc.Interval, MaxAge: sc.MaxAge, Server: c.Instance.InstanceID}
}

// CacheConfig maps Eureka's cache properties. goreka refreshes the
// readOnly tier on change unless the user asked for Eureka's timer, by
// setting response-cache-update-interval-ms or
// goreka.cache.refresh-on-change=false. The caller adds Now.
func (c *Config) CacheConfig() cache.Config {
	es := c.EurekaServer
	cc := cache.DefaultConfig()
	cc.UseReadOnly = es.UseReadOnlyResponseCache
	cc.AutoExpiration = es.ResponseCacheAutoExpiration
	cc.UpdateInterval = es.ResponseCacheUpdateInterval
	cc.RefreshOnChange = c.Goreka.Cache.RefreshOnChange && !c.IsSet("eureka.server.response-cache-update-interval-ms")
	return cc
}

// Codecs maps eureka.server.json-codec-name and xml-codec-name (validated
// when the configuration was loaded) to the encoders of the response cache.
func (c *Config) Codecs() compat.Codecs {
	j, _ := compat.ParseJSONCodec(c.EurekaServer.JSONCodecName)
	x, _ := compat.ParseXMLCodec(c.EurekaServer.XMLCodecName)
	return compat.Codecs{JSON: j, XML: x}
}

// ReplicationURLs are the service URLs to replicate to. Without any
// eureka.client.service-url setting goreka runs standalone: Spring's
// built-in default (http://localhost:8761/eureka/) means "this server" to
// the people who leave it alone, but a goreka on another port would take
// whatever listens on 8761 for a peer and copy its registry.
func (c *Config) ReplicationURLs() []string {
	if !c.IsSet("eureka.client.service-url") {
		return nil
	}
	return c.PeerURLs()
}

// PeerPlan is where the peer list comes from besides the start-up
// configuration: the configuration file's service URLs again (reload, on
// hup and every peer-eureka-nodes-update-interval-ms; nil when the caller
// cannot reload), the headless DNS name and Eureka's TXT records. Its
// Sources are nil when the peer list is fixed.
func (c *Config) PeerPlan(reload func() ([]string, error), hup <-chan struct{}) discovery.Plan {
	form := discovery.URLForm{Scheme: "http", User: c.Security.User, Password: c.Security.Password}
	if c.TLSEnabled() {
		form.Scheme = "https"
	}
	pc, cl := c.Goreka.Peers, c.Client
	p := discovery.Plan{
		ServiceURLs: c.ReplicationURLs(), Reload: reload, ReloadInterval: c.EurekaServer.PeerEurekaNodesUpdateInterval, Trigger: hup,
		DNSServer: pc.DNSServer, RefreshInterval: pc.RefreshInterval,
		Headless: discovery.Headless{Name: pc.DNSName, Port: pc.Port, SRV: pc.DNSSRV, Form: form},
		Self:     discovery.LocalSelf(c.Server.Port, c.Server.Address, c.Instance.IPAddress),
	}
	if cl.UseDNSForFetchingServiceURLs {
		p.TXT = &discovery.EurekaTXT{Name: cl.EurekaServerDNSName, Region: cl.Region, Zone: c.Instance.Metadata["zone"],
			Port: cl.EurekaServerPort, Context: cl.EurekaServerURLContext, Form: form}
	}
	return p
}
