package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Self is what a source needs to leave this server out of its answer: a
// target is this server when its port is Port and one of its addresses is
// one this server listens on.
type Self struct {
	Port int
	// Bind is server.address as an IP; nil (or unspecified) means all
	// interfaces.
	Bind net.IP
	// Addrs are the interface addresses (used when Bind is nil).
	Addrs []net.IP
	// Names are host names this server answers as (its
	// eureka.instance.hostname), for Is; "localhost" always is one when
	// loopback reaches it.
	Names []string
}

// Is reports whether host:port names this server: its port, and an
// address it listens on ("localhost" meaning loopback) or one of Names,
// compared without case. A relay refuses itself as its upstream with it.
func (s Self) Is(host string, port int) bool {
	if port != s.Port {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip != nil {
		return s.listensOn(ip)
	}
	return slices.ContainsFunc(s.Names, func(n string) bool { return strings.EqualFold(n, host) })
}

// LocalSelf is this server as it listens: port, the bind address
// (server.address, "" for all interfaces) and, for Addrs, every interface
// address of the host plus ip (eureka.instance.ip-address, when it is one);
// names are its host names (Self.Names).
func LocalSelf(port int, bind, ip string, names ...string) Self {
	s := Self{Port: port, Bind: net.ParseIP(bind), Names: names}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				s.Addrs = append(s.Addrs, n.IP)
			}
		}
	}
	if ip := net.ParseIP(ip); ip != nil {
		s.Addrs = append(s.Addrs, ip)
	}
	return s
}

// listensOn reports whether a connection to ip reaches this server's
// listener: the bind address only, or with all interfaces bound any own
// address and any loopback address.
func (s Self) listensOn(ip net.IP) bool {
	if s.Bind != nil && !s.Bind.IsUnspecified() {
		return ip.Equal(s.Bind)
	}
	if ip.IsLoopback() {
		return true
	}
	return slices.ContainsFunc(s.Addrs, ip.Equal)
}

// URLForm says how a peer's service URL is built from a host and port.
type URLForm struct {
	Scheme   string // "http" (default) or "https"
	User     string // basic-auth user and password put in the URL; "" for none
	Password string
	Path     string // the service path, default "/eureka/"
}

func (f URLForm) url(host string, port int) string {
	u := url.URL{Scheme: f.Scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: f.Path}
	if u.Scheme == "" {
		u.Scheme = "http"
	}
	if u.Path == "" {
		u.Path = "/eureka/"
	}
	if !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	if f.User != "" {
		u.User = url.UserPassword(f.User, f.Password)
	}
	return u.String()
}

// Headless is goreka.peers.dns-name: every A/AAAA address of Name is a peer
// at Port, or with SRV the targets and ports of Name's SRV records (a
// Kubernetes headless Service answers both).
type Headless struct {
	Name string
	Port int  // goreka.peers.port (default server.port); unused with SRV
	SRV  bool // goreka.peers.dns-srv
	Form URLForm
}

// Resolve returns the peers' service URLs, this server left out, sorted so
// that every node of a group builds the same list.
func (h Headless) Resolve(ctx context.Context, l Lookup, self Self) ([]string, error) {
	var out []string
	if !h.SRV {
		ips, err := l.LookupIP(ctx, h.Name)
		if err != nil {
			return nil, err
		}
		for _, ip := range ips {
			if h.Port == self.Port && self.listensOn(ip) {
				continue
			}
			out = append(out, h.Form.url(ip.String(), h.Port))
		}
	} else {
		recs, err := l.LookupSRV(ctx, h.Name)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.Port == self.Port && isSelfHost(ctx, l, self, r.Target) {
				continue
			}
			out = append(out, h.Form.url(r.Target, r.Port))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// isSelfHost resolves a target host for self-exclusion; a host that does
// not resolve is not this server (it is a peer that will fail and be shown
// so).
func isSelfHost(ctx context.Context, l Lookup, self Self, host string) bool {
	ips, err := l.LookupIP(ctx, host)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(ips, self.listensOn)
}

// EurekaTXT is Netflix Eureka's DNS mode
// (eureka.client.use-dns-for-fetching-service-urls, EndpointUtils
// getServiceUrlsFromDNS): the TXT record txt.{region}.{Name} lists the
// zones' DNS names, space-separated ("us-east-1c.eureka.example.com"; the
// zone is the first label), and each zone's TXT record txt.{zone name}
// lists the servers' host names. A server's URL is
// {scheme}://{host}:{Port}/{Context}/. The own zone comes first, then the
// others in name order, hosts in name order within a zone (Eureka shuffles
// the failover order of a client; a server replicates to all of them).
type EurekaTXT struct {
	Name    string // eureka.client.eureka-server-d-n-s-name
	Region  string // eureka.client.region (lower-cased, as Eureka does)
	Zone    string // this server's zone (metadata-map.zone), "" for none
	Port    int    // eureka.client.eureka-server-port
	Context string // eureka.client.eureka-server-u-r-l-context
	Form    URLForm
}

// Resolve returns the servers' service URLs, this server left out.
func (t EurekaTXT) Resolve(ctx context.Context, l Lookup, self Self) ([]string, error) {
	regionName := "txt." + strings.ToLower(strings.TrimSpace(t.Region)) + "." + t.Name
	recs, err := l.LookupTXT(ctx, regionName)
	if err != nil {
		return nil, err
	}
	zones := map[string][]string{} // zone -> zone DNS names
	for _, cname := range fields(recs) {
		if strings.HasPrefix(cname, "ec2") {
			return nil, fmt.Errorf("TXT %s: %q is not of the form <zone>.<domain>", regionName, cname)
		}
		z := strings.SplitN(cname, ".", 2)[0]
		zones[z] = append(zones[z], cname)
	}
	if len(zones) == 0 {
		return nil, fmt.Errorf("TXT %s lists no zones", regionName)
	}
	order := make([]string, 0, len(zones))
	for z := range zones {
		order = append(order, z)
	}
	slices.Sort(order)
	if i := slices.IndexFunc(order, func(z string) bool { return strings.EqualFold(z, t.Zone) }); i > 0 {
		order = append(order[i:], order[:i]...)
	}
	form := t.Form
	form.Path = "/" + strings.Trim(t.Context, "/") + "/"
	var out []string
	var errs []error
	for _, z := range order {
		for _, cname := range zones[z] {
			hosts, err := l.LookupTXT(ctx, "txt."+cname)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			hs := fields(hosts)
			slices.Sort(hs)
			for _, h := range slices.Compact(hs) {
				if t.Port == self.Port && isSelfHost(ctx, l, self, h) {
					continue
				}
				if u := form.url(h, t.Port); !slices.Contains(out, u) {
					out = append(out, u)
				}
			}
		}
	}
	if len(errs) > 0 {
		// A zone that did not answer must not drop its servers: the caller
		// keeps the last full answer.
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// fields splits TXT records into their space-separated names, dropping
// quotes and trailing dots.
func fields(recs []string) []string {
	var out []string
	for _, r := range recs {
		for _, f := range strings.Fields(strings.Trim(r, `"`)) {
			out = append(out, strings.TrimSuffix(f, "."))
		}
	}
	return out
}
