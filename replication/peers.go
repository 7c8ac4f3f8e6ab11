package replication

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/goreka/goreka/eurekahttp"
)

// SelfInfo describes this server, for self-exclusion from the peer list and
// for its own registration with its peers.
type SelfInfo struct {
	// MyURL is eureka.server.my-url; when set, only a URL equal to it
	// (normalised) is this server.
	MyURL string
	// HostName is eureka.instance.hostname (the IP address when
	// prefer-ip-address is set). Peers must use this host in their URL for
	// this server, or they list it under unavailable-replicas.
	HostName string
	// IPAddr is eureka.instance.ip-address.
	IPAddr string
	// Port is server.port; 0 means unknown, and self-exclusion then compares
	// the host only, as Eureka does.
	Port int
	// AppName is spring.application.name (default eureka-server).
	AppName string
	// InstanceID is eureka.instance.instance-id; "" means Spring's default
	// hostName:appName:port.
	InstanceID string
	// Secure says the server listens with TLS (for the URLs it announces).
	Secure bool
	// BindAddress is server.address: "" (or 0.0.0.0, ::) means all
	// interfaces. When it is one IP address, a loopback URL reaches this
	// server only at that address, so a loopback URL on our port with
	// another address (127.0.0.3 when we bind 127.0.0.2) is a peer.
	BindAddress string
}

// Peer is one other Eureka server this server replicates to.
type Peer struct {
	// URL is the service URL for display and logs, credentials scrubbed,
	// always ending in "/".
	URL string
	// BaseURL is the URL requests are built on: no user-info, ending in "/".
	BaseURL string
	// Host and Port are the URL's host (as written, without brackets) and
	// port (the scheme's default when absent).
	Host string
	Port int

	auth string // "Basic ..." from the URL's user-info, or ""
}

// ParsePeer parses one service URL (http://user:pass@host:port/eureka/) as
// eurekahttp.ParseURL does: the user-info becomes a preemptive basic-auth
// header, as in Spring's transports (unlike Spring, a password containing
// ':' works; a user without a password carries no credentials), the path
// ends in "/", a query or fragment is dropped.
func ParsePeer(raw string) (Peer, error) {
	ep, err := eurekahttp.ParseURL(raw)
	if err != nil {
		return Peer{}, fmt.Errorf("peer url %q: %w", scrub(strings.TrimSpace(raw)), err)
	}
	u, err := url.Parse(ep.URL)
	if err != nil {
		return Peer{}, fmt.Errorf("peer url %q: %w", scrub(raw), err)
	}
	return Peer{URL: ep.URL, BaseURL: ep.URL, Host: u.Hostname(), Port: portOf(u), auth: ep.Authorization}, nil
}

func portOf(u *url.URL) int {
	if s := u.Port(); s != "" {
		n, _ := strconv.Atoi(s)
		return n
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// scrub removes "user:pass@" from a URL for messages.
func scrub(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if i := strings.Index(raw, "@"); i >= 0 {
			if j := strings.Index(raw, "://"); j >= 0 && j < i {
				return raw[:j+3] + raw[i+1:]
			}
		}
		return raw
	}
	u.User = nil
	return u.String()
}

// normalised is the form URLs are compared in: lower-case scheme and host,
// explicit port, no user-info, path ending in "/".
func normalised(p Peer) string {
	return strings.ToLower(strings.SplitN(p.BaseURL, "://", 2)[0]) + "://" +
		strings.ToLower(net.JoinHostPort(p.Host, strconv.Itoa(p.Port))) + pathOf(p.BaseURL)
}

func pathOf(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return "/"
	}
	return u.EscapedPath()
}

// Peers turns the service URLs (eureka.client.service-url.<zone> lists,
// own zone first) into peers, dropping this server and duplicates. It
// returns the peers it could parse and an error naming the URLs it could not.
//
// Self-exclusion: with self.MyURL set, a URL is this server iff it equals
// MyURL after normalisation (case of scheme and host, default port, trailing
// slash, credentials ignored). Otherwise a URL is this server iff its port
// equals self.Port and its host equals self.HostName or self.IPAddr (case
// insensitive) or is a loopback name (localhost, 127.0.0.0/8, ::1): a
// loopback URL on our own port can only reach this process. Eureka compares
// the host only, which silently drops a peer on the same host with another
// port; goreka compares the port too, unless self.Port is 0. A loopback URL
// that cannot reach self.BindAddress (another loopback address, or any
// loopback URL when we bind a non-loopback address) is never this server,
// so peers on 127.0.0.2, 127.0.0.3, ... may share one port.
func Peers(urls []string, self SelfInfo) ([]Peer, error) {
	var (
		out  []Peer
		errs []error
		seen = map[string]bool{}
		mine string
	)
	if self.MyURL != "" {
		mp, err := ParsePeer(self.MyURL)
		if err != nil {
			errs = append(errs, fmt.Errorf("eureka.server.my-url: %w", err))
		} else {
			mine = normalised(mp)
		}
	}
	for _, raw := range urls {
		p, err := ParsePeer(raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n := normalised(p)
		if seen[n] {
			continue
		}
		seen[n] = true
		if self.MyURL != "" {
			if n == mine {
				continue
			}
		} else if isSelf(p, self) {
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

func isSelf(p Peer, self SelfInfo) bool {
	if self.Port != 0 && p.Port != self.Port {
		return false
	}
	h := p.Host
	if isLoopback(h) && !bindReaches(self.BindAddress, h) {
		return false
	}
	if self.HostName != "" && strings.EqualFold(h, self.HostName) {
		return true
	}
	if self.IPAddr != "" && strings.EqualFold(h, self.IPAddr) {
		return true
	}
	return self.Port != 0 && isLoopback(h)
}

// bindReaches reports whether a connection to the loopback host can reach a
// listener bound to bind. A bind address that is empty, unspecified or a
// name (not resolved here) is assumed to reach it.
func bindReaches(bind, host string) bool {
	b := net.ParseIP(strings.Trim(bind, "[]"))
	if b == nil || b.IsUnspecified() {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.Equal(b)
	}
	// localhost and *.localhost: 127.0.0.1 or ::1.
	return b.Equal(net.IPv4(127, 0, 0, 1)) || b.Equal(net.IPv6loopback)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// InNamespace returns the peer as seen by goreka namespace name: its URLs
// with /ns/{name}/ put before their last path segment, or before
// /eureka/v2 (http://h:8761/eureka/ becomes http://h:8761/ns/dev/eureka/,
// http://h:8761/eureka/v2/ becomes http://h:8761/ns/dev/eureka/v2/, which
// the server routes to the namespace and then normalises as at the root),
// its credentials kept. ok is false for a URL without a path segment (such
// as http://h:8761/), which has no place for the namespace.
func (p Peer) InNamespace(name string) (q Peer, ok bool) {
	isPath := func(head string) bool { return !strings.HasSuffix(head, "/") } // scheme://host has no path
	insert := func(u string) (string, bool) {
		rest := strings.TrimSuffix(u, "/")
		i := strings.LastIndexByte(rest, '/')
		if i < 0 || !isPath(rest[:i]) {
			return "", false
		}
		if rest[i:] == "/v2" && strings.HasSuffix(rest[:i], "/eureka") && isPath(rest[:i-len("/eureka")]) {
			i -= len("/eureka")
		}
		return rest[:i] + "/ns/" + name + rest[i:] + "/", true
	}
	q = p
	if q.URL, ok = insert(p.URL); !ok {
		return Peer{}, false
	}
	if q.BaseURL, ok = insert(p.BaseURL); !ok {
		return Peer{}, false
	}
	return q, true
}
