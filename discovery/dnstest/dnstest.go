// Package dnstest runs a small authoritative DNS server for tests (UDP and
// TCP on 127.0.0.1) whose A, AAAA, SRV and TXT records can be changed while
// it runs.
package dnstest

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// Server is a test DNS server.
type Server struct {
	// Addr is HOST:PORT, the same for UDP and TCP.
	Addr string

	mu      sync.Mutex
	a       map[string][]net.IP
	srv     map[string][]*dns.SRV
	txt     map[string][]string
	queries int
}

// New starts a server and stops it at the end of the test.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{a: map[string][]net.IP{}, srv: map[string][]*dns.SRV{}, txt: map[string][]string{}}
	// UDP and TCP on one port number: the kernel picks a free UDP port, and
	// the same number may be taken for TCP (the tests run in parallel with
	// everything else on the machine), so try a few.
	var (
		pc  net.PacketConn
		ln  net.Listener
		err error
	)
	for range 20 {
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
	}
	if err != nil {
		t.Fatalf("no port free for both UDP and TCP: %v", err)
	}
	s.Addr = pc.LocalAddr().String()
	udp := &dns.Server{PacketConn: pc, Handler: s}
	tcp := &dns.Server{Listener: ln, Handler: s}
	started := make(chan struct{}, 2)
	udp.NotifyStartedFunc = func() { started <- struct{}{} }
	tcp.NotifyStartedFunc = func() { started <- struct{}{} }
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	<-started
	<-started
	t.Cleanup(func() { udp.Shutdown(); tcp.Shutdown() })
	return s
}

func key(name string) string { return strings.ToLower(dns.Fqdn(name)) }

// SetA replaces the A/AAAA addresses of name (none: the name does not exist
// unless it has other records).
func (s *Server) SetA(name string, ips ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []net.IP
	for _, ip := range ips {
		out = append(out, net.ParseIP(ip))
	}
	s.a[key(name)] = out
}

// SetSRV replaces the SRV records of name, given as target:port pairs.
func (s *Server) SetSRV(name string, targets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*dns.SRV
	for _, t := range targets {
		h, p, _ := net.SplitHostPort(t)
		port, _ := strconv.Atoi(p)
		out = append(out, &dns.SRV{Hdr: dns.RR_Header{Name: key(name), Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: 5},
			Priority: 0, Weight: 10, Port: uint16(port), Target: dns.Fqdn(h)})
	}
	s.srv[key(name)] = out
}

// SetTXT replaces the TXT records of name (one record per value).
func (s *Server) SetTXT(name string, values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.txt[key(name)] = values
}

// Remove deletes every record of name: it no longer exists (NXDOMAIN).
func (s *Server) Remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.a, key(name))
	delete(s.srv, key(name))
	delete(s.txt, key(name))
}

// Queries returns how many queries the server answered.
func (s *Server) Queries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries
}

// ServeDNS answers from the records; a name with no record of any type is
// NXDOMAIN.
func (s *Server) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	s.mu.Lock()
	s.queries++
	for _, q := range r.Question {
		k := key(q.Name)
		_, hasA := s.a[k]
		_, hasSRV := s.srv[k]
		_, hasTXT := s.txt[k]
		if !hasA && !hasSRV && !hasTXT {
			m.Rcode = dns.RcodeNameError
			continue
		}
		hdr := func(t uint16) dns.RR_Header {
			return dns.RR_Header{Name: q.Name, Rrtype: t, Class: dns.ClassINET, Ttl: 5}
		}
		switch q.Qtype {
		case dns.TypeA:
			for _, ip := range s.a[k] {
				if ip4 := ip.To4(); ip4 != nil {
					m.Answer = append(m.Answer, &dns.A{Hdr: hdr(dns.TypeA), A: ip4})
				}
			}
		case dns.TypeAAAA:
			for _, ip := range s.a[k] {
				if ip.To4() == nil {
					m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr(dns.TypeAAAA), AAAA: ip})
				}
			}
		case dns.TypeSRV:
			for _, rr := range s.srv[k] {
				c := *rr
				c.Hdr.Name = q.Name
				m.Answer = append(m.Answer, &c)
			}
		case dns.TypeTXT:
			for _, v := range s.txt[k] {
				m.Answer = append(m.Answer, &dns.TXT{Hdr: hdr(dns.TypeTXT), Txt: []string{v}})
			}
		}
	}
	s.mu.Unlock()
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if o := r.IsEdns0(); o != nil {
			size = int(o.UDPSize())
		}
		m.Truncate(size) // sets TC: the client asks again over TCP
	}
	w.WriteMsg(m)
}
