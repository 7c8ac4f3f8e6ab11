package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goreka/goreka/registry"
)

// DefaultAppName is spring.application.name when unset, as for Spring's
// Eureka server.
const DefaultAppName = "eureka-server"

// Instance builds this server's own InstanceInfo as Spring's
// EurekaInstanceConfigBean would: app = upper-cased application name,
// instanceId hostName:appName:port unless set, vipAddress = the application
// name, data center MyOwn, status UP, the given lease timings (eureka.instance.lease-*)
// and metadata. now becomes its lastDirtyTimestamp. It returns an error when
// the result is not registrable (no host name or IP address).
func (s SelfInfo) Instance(lease registry.LeaseInfo, metadata map[string]string, now time.Time) (*registry.Instance, error) {
	name := s.AppName
	if name == "" {
		name = DefaultAppName
	}
	id := s.InstanceID
	if id == "" {
		id = s.HostName + ":" + name + ":" + strconv.Itoa(s.Port)
	}
	scheme := "http"
	if s.Secure {
		scheme = "https"
	}
	base := scheme + "://" + net.JoinHostPort(s.HostName, strconv.Itoa(s.Port)) + "/"
	in := &registry.Instance{
		InstanceID:           id,
		HostName:             s.HostName,
		App:                  strings.ToUpper(name),
		IPAddr:               s.IPAddr,
		Status:               registry.StatusUp,
		OverriddenStatus:     registry.StatusUnknown,
		Port:                 registry.Port{Number: s.Port, Enabled: !s.Secure},
		SecurePort:           registry.Port{Number: 443, Enabled: s.Secure},
		CountryID:            1,
		DataCenterInfo:       registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		LeaseInfo:            lease,
		Metadata:             maps.Clone(metadata),
		HomePageURL:          base,
		StatusPageURL:        base + "actuator/info",
		HealthCheckURL:       base + "actuator/health",
		VIPAddress:           name,
		SecureVIPAddress:     name,
		LastDirtyTimestamp:   now,
		LastUpdatedTimestamp: now,
		ActionType:           registry.ActionAdded,
	}
	if s.Secure {
		in.SecureHealthCheckURL = in.HealthCheckURL
	}
	if in.Metadata == nil {
		in.Metadata = map[string]string{}
	}
	if err := in.Validate(""); err != nil {
		return nil, fmt.Errorf("self-registration: %w", err)
	}
	return in, nil
}

// SelfRegistrar registers this server with each peer as an ordinary client
// would (POST apps/{APP}, expect 204), heartbeats every renewal interval
// (PUT apps/{APP}/{id}?status=UP&lastDirtyTimestamp=...), registers again on
// a 404 and cancels on shutdown. Stock Spring peers list this server under
// available-replicas only when it is registered under their application
// name with hostName = the host of their URL for it. cmd runs it only when
// eureka.client.register-with-eureka is true.
type SelfRegistrar struct {
	cfg  Config
	http *httpClient
	inst *registry.Instance
	log  *slog.Logger

	mu    sync.Mutex
	peers []Peer                        // the current set, in order
	stops map[string]context.CancelFunc // running loops by peerKey
	run   *runState                     // the running Run, nil outside it
}

// NewSelfRegistrar returns a registrar of self (see SelfInfo.Instance) with
// peers; cfg supplies the timeouts, clock and logger.
func NewSelfRegistrar(cfg Config, self *registry.Instance, peers []Peer) *SelfRegistrar {
	cfg.fill()
	return &SelfRegistrar{cfg: cfg, http: newHTTPClient(&cfg), inst: self, peers: peers,
		stops: map[string]context.CancelFunc{}, log: cfg.Logger.With("component", "replication")}
}

// SetPeers replaces the peers this server registers with: under a running
// Run a new peer's loop starts at once (register, then heartbeats), a
// removed peer's loop stops and cancels the registration there (bounded by
// the timeouts; Run waits for it). The Replicator logs the change.
func (s *SelfRegistrar) SetPeers(peers []Peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peers = append([]Peer(nil), peers...)
	if s.run == nil {
		return
	}
	keep := map[string]bool{}
	for _, p := range peers {
		k := peerKey(p)
		keep[k] = true
		if s.stops[k] == nil {
			s.startLocked(p)
		}
	}
	for k, stop := range s.stops {
		if !keep[k] {
			stop()
			delete(s.stops, k)
		}
	}
}

func (s *SelfRegistrar) startLocked(p Peer) {
	ctx, cancel := context.WithCancel(s.run.ctx)
	s.stops[peerKey(p)] = cancel
	s.run.wg.Go(func() {
		defer cancel()
		s.runPeer(ctx, p)
	})
}

func (s *SelfRegistrar) interval() time.Duration {
	return s.inst.LeaseInfo.WithDefaults().RenewalInterval
}

// Run registers with every peer, heartbeats until ctx is done, then cancels
// the registrations (bounded by the connect and read timeouts) and returns
// nil. Peers set by SetPeers meanwhile are registered with at once.
func (s *SelfRegistrar) Run(ctx context.Context) error {
	rs := &runState{ctx: ctx}
	s.mu.Lock()
	if s.run != nil {
		s.mu.Unlock()
		return errors.New("self-registration: Run is already running")
	}
	s.run = rs
	seen := map[string]bool{}
	for _, p := range s.peers {
		if k := peerKey(p); !seen[k] {
			seen[k] = true
			s.startLocked(p)
		}
	}
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.run = nil
	clear(s.stops)
	s.mu.Unlock()
	rs.wg.Wait()
	return nil
}

func (s *SelfRegistrar) runPeer(ctx context.Context, p Peer) {
	log := s.log.With("peer", p.URL)
	registered := false
	var lastErr string
	report := func(err error) {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg == lastErr {
			return
		}
		if err != nil {
			log.Warn("self-registration with peer failing", "err", err)
		} else {
			log.Info("registered with peer", "app", s.inst.App, "instance", s.inst.ID())
		}
		lastErr = msg
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if registered {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.PeerNodeConnectTimeout+s.cfg.PeerNodeReadTimeout)
				if err := s.cancel(cctx, &p); err != nil {
					log.Warn("cancelling self-registration with peer", "err", err)
				}
				cancel()
			}
			return
		case <-t.C:
		}
		var err error
		if registered {
			var found bool
			found, err = s.heartbeat(ctx, &p)
			if err == nil && !found {
				registered = false
			}
		}
		if err == nil && !registered {
			err = s.register(ctx, &p)
			registered = err == nil
		}
		if ctx.Err() == nil {
			report(err)
		}
		t.Reset(s.interval())
	}
}

func (s *SelfRegistrar) register(ctx context.Context, p *Peer) error {
	li := s.inst.LeaseInfo.WithDefaults()
	return s.http.c.Register(ctx, p.endpoint(), &registry.LeaseView{Instance: s.inst, RenewalInterval: li.RenewalInterval, Duration: li.Duration})
}

// heartbeat renews; found is false when the peer answered 404.
func (s *SelfRegistrar) heartbeat(ctx context.Context, p *Peer) (found bool, err error) {
	return s.http.c.Renew(ctx, p.endpoint(), s.inst)
}

func (s *SelfRegistrar) cancel(ctx context.Context, p *Peer) error {
	return s.http.c.Cancel(ctx, p.endpoint(), s.inst.App, s.inst.ID())
}
