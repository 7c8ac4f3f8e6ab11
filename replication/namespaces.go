package replication

import (
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// NamespacePeers are the peers a goreka namespace replicates with: those
// of peers (the default namespace's) that are not stock Java servers
// (stock: goreka.namespaces.stock-peers, matched by Peer.IsAt), each at its
// URL for the namespace (InNamespace). A stock server has only the default
// namespace; a peer whose URL has no place for the namespace is left out,
// with a warning on log.
func NamespacePeers(name string, peers []Peer, stock []string, log *slog.Logger) []Peer {
	var out []Peer
	for _, p := range peers {
		if p.isAtAny(stock) {
			continue
		}
		if q, ok := p.InNamespace(name); ok {
			out = append(out, q)
		} else {
			log.Warn("peer has no path for a namespace: it gets only the default namespace", "peer", p.URL, "namespace", name)
		}
	}
	return out
}

func (p Peer) isAtAny(addrs []string) bool {
	for _, a := range addrs {
		if p.IsAt(a) {
			return true
		}
	}
	return false
}

// IsAt reports whether the peer is at addr, a service URL or host:port: the
// same host (case-insensitive) and port, a URL without a port having its
// scheme's default one (as ParsePeer).
func (p Peer) IsAt(addr string) bool {
	host, port := addr, ""
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		host, port = u.Hostname(), u.Port()
		if port == "" {
			port = strconv.Itoa(portOf(u))
		}
	} else if h, pt, err := net.SplitHostPort(addr); err == nil {
		host, port = h, pt
	}
	return strings.EqualFold(host, p.Host) && port == strconv.Itoa(p.Port)
}
