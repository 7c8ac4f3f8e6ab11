package discovery

import (
	"context"
	"time"
)

// Plan is where a server's peer list comes from besides its start-up
// configuration: the configured service URLs (read again by Reload), a
// headless DNS name and Eureka's TXT records. Sources turns it into a
// Watcher's sources.
type Plan struct {
	// ServiceURLs are the configured service URLs. Reload reads them again
	// (nil: they are fixed), every ReloadInterval and at each Trigger.
	ServiceURLs    []string
	Reload         func() ([]string, error)
	ReloadInterval time.Duration
	Trigger        <-chan struct{}

	// DNSServer is the DNS server of both DNS sources ("" the system's
	// resolver), RefreshInterval how often they are asked.
	DNSServer       string
	RefreshInterval time.Duration
	// Headless is the headless DNS name of the peers (Name "": none).
	Headless Headless
	// TXT is Eureka's TXT records (eureka.client.use-dns-for-fetching-service-urls;
	// nil: none).
	TXT *EurekaTXT
	// Self is this server, which the DNS sources leave out.
	Self Self
}

// Sources returns the plan's sources, the service URLs first; nil when the
// peer list is fixed (no Reload and no DNS source), which needs no Watcher.
func (p Plan) Sources() []Source {
	static := p.ServiceURLs
	src := Source{Name: "service-url", Resolve: func(context.Context) ([]string, error) { return static, nil }}
	if p.Reload != nil {
		src.Interval, src.Trigger = p.ReloadInterval, p.Trigger
		src.Resolve = func(context.Context) ([]string, error) { return p.Reload() }
	}
	sources := []Source{src}
	if h := p.Headless; h.Name != "" {
		l := NewLookup(p.DNSServer, 0)
		sources = append(sources, Source{Name: "dns " + h.Name, Interval: p.RefreshInterval,
			Resolve: func(ctx context.Context) ([]string, error) { return h.Resolve(ctx, l, p.Self) }})
	}
	if x := p.TXT; x != nil {
		l := NewLookup(p.DNSServer, 0)
		sources = append(sources, Source{Name: "dns txt." + x.Region + "." + x.Name, Interval: p.RefreshInterval,
			Resolve: func(ctx context.Context) ([]string, error) { return x.Resolve(ctx, l, p.Self) }})
	}
	if len(sources) == 1 && p.Reload == nil {
		return nil
	}
	return sources
}
