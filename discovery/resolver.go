package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Lookup is the DNS a peer source asks.
type Lookup interface {
	// LookupIP returns the A and AAAA addresses of host.
	LookupIP(ctx context.Context, host string) ([]net.IP, error)
	// LookupSRV returns the SRV records of name.
	LookupSRV(ctx context.Context, name string) ([]SRV, error)
	// LookupTXT returns the TXT records of name, each record's strings
	// joined (RFC 7208 §3.3).
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// SRV is one SRV record: a target host (no trailing dot) and port.
type SRV struct {
	Target string
	Port   int
}

// ErrNoSuchName is returned for a name the DNS says does not exist
// (NXDOMAIN). Sources keep their last answer on any error, this one
// included: a name that disappears for one refresh must not drop every peer.
var ErrNoSuchName = errors.New("no such DNS name")

// DefaultTimeout bounds one query to a custom DNS server.
const DefaultTimeout = 2 * time.Second

// NewLookup returns a Lookup asking server (HOST:PORT, UDP with a TCP retry
// for truncated answers) with the given timeout per query (0 means
// DefaultTimeout); server "" means the system resolver (resolv.conf search
// domains, /etc/hosts).
func NewLookup(server string, timeout time.Duration) Lookup {
	if server == "" {
		return systemLookup{}
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &dnsLookup{server: server, udp: &dns.Client{Net: "udp", Timeout: timeout}, tcp: &dns.Client{Net: "tcp", Timeout: timeout}}
}

type systemLookup struct{}

func (systemLookup) LookupIP(ctx context.Context, host string) ([]net.IP, error) {
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, systemErr(err)
	}
	out := make([]net.IP, len(addrs))
	for i, a := range addrs {
		out[i] = a.IP
	}
	return out, nil
}

func (systemLookup) LookupSRV(ctx context.Context, name string) ([]SRV, error) {
	_, recs, err := net.DefaultResolver.LookupSRV(ctx, "", "", name)
	if err != nil {
		return nil, systemErr(err)
	}
	out := make([]SRV, len(recs))
	for i, r := range recs {
		out[i] = SRV{Target: strings.TrimSuffix(r.Target, "."), Port: int(r.Port)}
	}
	return out, nil
}

func (systemLookup) LookupTXT(ctx context.Context, name string) ([]string, error) {
	recs, err := net.DefaultResolver.LookupTXT(ctx, name)
	if err != nil {
		return nil, systemErr(err)
	}
	return recs, nil
}

func systemErr(err error) error {
	var de *net.DNSError
	if errors.As(err, &de) && de.IsNotFound {
		return fmt.Errorf("%w: %s", ErrNoSuchName, de.Name)
	}
	return err
}

// dnsLookup asks one DNS server directly.
type dnsLookup struct {
	server   string
	udp, tcp *dns.Client
}

func (l *dnsLookup) query(ctx context.Context, name string, qtype uint16) ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = true
	in, _, err := l.udp.ExchangeContext(ctx, m, l.server)
	if err == nil && in.Truncated {
		in, _, err = l.tcp.ExchangeContext(ctx, m, l.server)
	}
	if err != nil {
		return nil, fmt.Errorf("DNS %s %s at %s: %w", dns.TypeToString[qtype], name, l.server, err)
	}
	switch in.Rcode {
	case dns.RcodeSuccess:
		return in.Answer, nil
	case dns.RcodeNameError:
		return nil, fmt.Errorf("%w: %s (at %s)", ErrNoSuchName, name, l.server)
	}
	return nil, fmt.Errorf("DNS %s %s at %s: %s", dns.TypeToString[qtype], name, l.server, dns.RcodeToString[in.Rcode])
}

func (l *dnsLookup) LookupIP(ctx context.Context, host string) ([]net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IP{ip}, nil
	}
	var out []net.IP
	var errs []error
	for _, t := range []uint16{dns.TypeA, dns.TypeAAAA} {
		rrs, err := l.query(ctx, host, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, rr := range rrs {
			switch r := rr.(type) {
			case *dns.A:
				out = append(out, r.A)
			case *dns.AAAA:
				out = append(out, r.AAAA)
			}
		}
	}
	if len(errs) == 2 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func (l *dnsLookup) LookupSRV(ctx context.Context, name string) ([]SRV, error) {
	rrs, err := l.query(ctx, name, dns.TypeSRV)
	if err != nil {
		return nil, err
	}
	var out []SRV
	for _, rr := range rrs {
		if r, ok := rr.(*dns.SRV); ok {
			out = append(out, SRV{Target: strings.TrimSuffix(r.Target, "."), Port: int(r.Port)})
		}
	}
	return out, nil
}

func (l *dnsLookup) LookupTXT(ctx context.Context, name string) ([]string, error) {
	rrs, err := l.query(ctx, name, dns.TypeTXT)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range rrs {
		if r, ok := rr.(*dns.TXT); ok {
			out = append(out, strings.Join(r.Txt, ""))
		}
	}
	return out, nil
}
