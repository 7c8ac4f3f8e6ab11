package discovery

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goreka/goreka/discovery/dnstest"
)

func lookupAt(t *testing.T, s *dnstest.Server) Lookup {
	t.Helper()
	return NewLookup(s.Addr, 2*time.Second)
}

// Every address of the headless name is a peer on the configured port,
// except this server (its bind address on its port); another port on the
// same address is a peer.
func TestHeadlessA(t *testing.T) {
	t.Parallel()
	s := dnstest.New(t)
	s.SetA("goreka-headless.ns.svc.cluster.local", "127.0.0.3", "127.0.0.2", "10.1.2.3", "fd00::7")
	l := lookupAt(t, s)
	h := Headless{Name: "goreka-headless.ns.svc.cluster.local", Port: 8761,
		Form: URLForm{User: "eureka", Password: "p:w"}}
	got, err := h.Resolve(t.Context(), l, Self{Port: 8761, Bind: net.ParseIP("127.0.0.2")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://eureka:p%3Aw@10.1.2.3:8761/eureka/", "http://eureka:p%3Aw@127.0.0.3:8761/eureka/", "http://eureka:p%3Aw@[fd00::7]:8761/eureka/"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// All interfaces bound: every loopback address and the own addresses
	// are this server; on another port they are peers.
	got, _ = h.Resolve(t.Context(), l, Self{Port: 8761, Addrs: []net.IP{net.ParseIP("10.1.2.3")}})
	if want := []string{"http://eureka:p%3Aw@[fd00::7]:8761/eureka/"}; !slices.Equal(got, want) {
		t.Errorf("all interfaces: %q", got)
	}
	got, _ = h.Resolve(t.Context(), l, Self{Port: 9999, Addrs: []net.IP{net.ParseIP("10.1.2.3")}})
	if len(got) != 4 {
		t.Errorf("other port: %q", got)
	}
}

func TestHeadlessSRV(t *testing.T) {
	t.Parallel()
	s := dnstest.New(t)
	s.SetSRV("_http._tcp.goreka.test", "goreka-0.goreka.test:8761", "goreka-1.goreka.test:8761", "goreka-2.goreka.test:8762")
	s.SetA("goreka-0.goreka.test", "10.0.0.10")
	s.SetA("goreka-1.goreka.test", "10.0.0.11")
	s.SetA("goreka-2.goreka.test", "10.0.0.10")
	h := Headless{Name: "_http._tcp.goreka.test", SRV: true, Form: URLForm{Scheme: "https"}}
	got, err := h.Resolve(t.Context(), lookupAt(t, s), Self{Port: 8761, Bind: net.ParseIP("10.0.0.10")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"https://goreka-1.goreka.test:8761/eureka/", "https://goreka-2.goreka.test:8762/eureka/"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q", got)
	}
}

// Eureka's TXT mode, as EndpointUtils.getServiceUrlsFromDNS reads it: the
// region record lists zone names, each zone record lists hosts; the own
// zone comes first.
func TestEurekaTXT(t *testing.T) {
	t.Parallel()
	s := dnstest.New(t)
	s.SetTXT("txt.us-east-1.eureka.example.com", "us-east-1a.eureka.example.com us-east-1c.eureka.example.com")
	s.SetTXT("txt.us-east-1a.eureka.example.com", "a2.example.com a1.example.com")
	s.SetTXT("txt.us-east-1c.eureka.example.com", "c1.example.com")
	s.SetA("c1.example.com", "10.0.3.1")
	s.SetA("a1.example.com", "10.0.1.1")
	s.SetA("a2.example.com", "10.0.1.2")
	x := EurekaTXT{Name: "eureka.example.com", Region: "US-East-1", Zone: "us-east-1c", Port: 8080, Context: "eureka/v2"}
	got, err := x.Resolve(t.Context(), lookupAt(t, s), Self{Port: 8080, Bind: net.ParseIP("10.0.1.2")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://c1.example.com:8080/eureka/v2/", "http://a1.example.com:8080/eureka/v2/"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// A zone that does not answer fails the whole answer (the watcher keeps
	// the last one), and a malformed region record is named.
	s.Remove("txt.us-east-1c.eureka.example.com")
	if _, err := x.Resolve(t.Context(), lookupAt(t, s), Self{}); !errors.Is(err, ErrNoSuchName) {
		t.Errorf("zone without record: %v", err)
	}
	s.SetTXT("txt.us-east-1.eureka.example.com", "ec2-1-2-3-4.compute-1.amazonaws.com")
	if _, err := x.Resolve(t.Context(), lookupAt(t, s), Self{}); err == nil || !strings.Contains(err.Error(), "<zone>.<domain>") {
		t.Errorf("malformed region record: %v", err)
	}
}

// LocalSelf leaves out this server on its bind address, or with all
// interfaces bound on any loopback address and the configured IP.
func TestLocalSelf(t *testing.T) {
	s := LocalSelf(8761, "", "192.0.2.7")
	if s.Port != 8761 || s.Bind != nil || !s.listensOn(net.ParseIP("192.0.2.7")) || !s.listensOn(net.ParseIP("127.0.0.1")) ||
		s.listensOn(net.ParseIP("198.51.100.1")) {
		t.Errorf("all interfaces: %+v", s)
	}
	if b := LocalSelf(8761, "10.1.2.3", ""); !b.Bind.Equal(net.ParseIP("10.1.2.3")) || b.listensOn(net.ParseIP("127.0.0.1")) {
		t.Errorf("bound: %+v", b)
	}
}

// A plan without reload or DNS needs no watcher; otherwise the service
// URLs come first, then the DNS sources, named for the logs.
func TestPlanSources(t *testing.T) {
	if s := (Plan{ServiceURLs: []string{"http://a:8761/eureka/"}}).Sources(); s != nil {
		t.Fatalf("fixed plan: %d sources", len(s))
	}
	reloads := 0
	p := Plan{ServiceURLs: []string{"http://a:8761/eureka/"}, ReloadInterval: time.Minute,
		Reload:   func() ([]string, error) { reloads++; return []string{"http://b:8761/eureka/"}, nil },
		Headless: Headless{Name: "goreka-headless.ns.svc"},
		TXT:      &EurekaTXT{Name: "example.com", Region: "us-east-1"}}
	s := p.Sources()
	if len(s) != 3 || s[0].Name != "service-url" || s[0].Interval != time.Minute || s[1].Name != "dns goreka-headless.ns.svc" ||
		s[2].Name != "dns txt.us-east-1.example.com" {
		t.Fatalf("sources: %+v", s)
	}
	if urls, err := s[0].Resolve(t.Context()); err != nil || len(urls) != 1 || urls[0] != "http://b:8761/eureka/" || reloads != 1 {
		t.Fatalf("service-url source: %v %v after %d reloads", urls, err, reloads)
	}
	if s := (Plan{Headless: Headless{Name: "h"}}).Sources(); len(s) != 2 {
		t.Fatalf("DNS only: %d sources", len(s))
	}
}

func TestLookupErrors(t *testing.T) {
	t.Parallel()
	s := dnstest.New(t)
	l := lookupAt(t, s)
	if _, err := l.LookupIP(t.Context(), "missing.test"); !errors.Is(err, ErrNoSuchName) {
		t.Errorf("NXDOMAIN: %v", err)
	}
	pc, _ := net.ListenPacket("udp", "127.0.0.1:0")
	dead := pc.LocalAddr().String()
	pc.Close()
	if _, err := NewLookup(dead, 200*time.Millisecond).LookupTXT(t.Context(), "x.test"); err == nil || !strings.Contains(err.Error(), dead) {
		t.Errorf("dead server: %v", err)
	}
	// Many records: the UDP answer is truncated and retried over TCP.
	var ips []string
	for i := range 200 {
		ips = append(ips, net.IPv4(10, 9, byte(i/250), byte(i%250+1)).String())
	}
	s.SetA("big.test", ips...)
	got, err := l.LookupIP(t.Context(), "big.test")
	if err != nil || len(got) != 200 {
		t.Errorf("big answer: %d addresses, %v", len(got), err)
	}
}

// The watcher applies the merged list when it changes, keeps a failing
// source's last answer (logging once), and refreshes on its trigger.
func TestWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		dnsURLs := []string{"http://10.0.0.2:8761/eureka/", "http://10.0.0.3:8761/eureka/"}
		var dnsErr error
		cfgURLs := []string{"http://static:8761/eureka/", "http://10.0.0.2:8761/eureka/"}
		get := func(u *[]string, e *error) func(context.Context) ([]string, error) {
			return func(context.Context) ([]string, error) {
				mu.Lock()
				defer mu.Unlock()
				if e != nil && *e != nil {
					return nil, *e
				}
				return slices.Clone(*u), nil
			}
		}
		var noErr error
		hup := make(chan struct{})
		var applied [][]string
		var logs bytes.Buffer
		w := &Watcher{
			Sources: []Source{
				{Name: "config", Interval: 10 * time.Minute, Trigger: hup, Resolve: get(&cfgURLs, &noErr)},
				{Name: "dns", Interval: 30 * time.Second, Resolve: get(&dnsURLs, &dnsErr)},
			},
			Apply:  func(u []string) { applied = append(applied, u) },
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		}
		first := w.Init(t.Context())
		want := []string{"http://static:8761/eureka/", "http://10.0.0.2:8761/eureka/", "http://10.0.0.3:8761/eureka/"}
		if !slices.Equal(first, want) || len(applied) != 1 {
			t.Fatalf("init %q", first)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		set := func(f func()) { mu.Lock(); f(); mu.Unlock() }

		time.Sleep(31 * time.Second)
		synctest.Wait()
		if len(applied) != 1 {
			t.Fatal("applied an unchanged list")
		}
		set(func() { dnsURLs = append(dnsURLs, "http://10.0.0.4:8761/eureka/") })
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if len(applied) != 2 || !slices.Contains(applied[1], "http://10.0.0.4:8761/eureka/") {
			t.Fatalf("added address not applied: %q", applied)
		}
		set(func() { dnsErr = errors.New("timeout") })
		time.Sleep(90 * time.Second)
		synctest.Wait()
		if len(applied) != 2 || strings.Count(logs.String(), "peer source failing") != 1 {
			t.Fatalf("failing source: applied %d, logs %s", len(applied), logs.String())
		}
		set(func() { dnsErr = nil; dnsURLs = slices.Delete(dnsURLs, 1, 2) })
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if len(applied) != 3 || !strings.Contains(logs.String(), "peer source answers again") {
			t.Fatalf("recovery: %q", applied)
		}
		want = []string{"http://static:8761/eureka/", "http://10.0.0.2:8761/eureka/", "http://10.0.0.4:8761/eureka/"}
		if !slices.Equal(applied[2], want) {
			t.Errorf("after removal %q, want %q", applied[2], want)
		}
		set(func() { cfgURLs = nil })
		hup <- struct{}{}
		synctest.Wait()
		if len(applied) != 4 || slices.Contains(applied[3], "http://static:8761/eureka/") {
			t.Errorf("trigger: %q", applied)
		}
		cancel()
		<-done
	})
}
