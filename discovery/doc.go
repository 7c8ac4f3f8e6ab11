// Package discovery finds a server's peers at run time: from a DNS name
// (every A/AAAA address of a Kubernetes headless Service, or its SRV
// records), from Eureka's own DNS mode (TXT records txt.{region}.{name}
// listing zones and txt.{zone name} listing servers), and from whatever
// else the caller supplies as a Source (cmd re-reads the configuration
// file's service URLs). A Watcher asks each source on its own interval,
// merges their answers and calls Apply when the merged list changes; a
// source that fails keeps its last answer, so a DNS hiccup drops no peer.
//
// Sources leave this server out by address and port (Self): a target whose
// port is this server's and whose address is one it listens on. The
// caller still passes the URLs through replication.Peers, which also drops
// this server by host name.
//
// A custom DNS server (goreka.peers.dns-server=HOST:PORT) is asked directly
// with github.com/miekg/dns; without one the system resolver is used.
package discovery
