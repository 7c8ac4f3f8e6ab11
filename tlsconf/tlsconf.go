package tlsconf

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client authentication modes (server.ssl.client-auth).
const (
	ClientAuthNone = "none"
	ClientAuthWant = "want"
	ClientAuthNeed = "need"
)

// ServerConfig configures the server side: what goreka presents and what
// it asks of clients.
type ServerConfig struct {
	Keys Keys
	// Trust verifies client certificates; no Store means the system's
	// roots (Spring: the JVM's default truststore).
	Trust Trust
	// ClientAuth is none (""), want or need.
	ClientAuth string
	// Protocols are Java's protocol names (TLSv1.2, TLSv1.3); none means
	// TLS 1.2 and 1.3.
	Protocols []string
	// Ciphers are IANA suite names; none means Go's defaults.
	Ciphers []string
	// Prefix names the client-auth, enabled-protocols and ciphers
	// properties in errors (server.ssl).
	Prefix string
	// Now is the clock of the validity checks (nil: time.Now).
	Now func() time.Time
	// Logger gets reloads and refused files (nil: discarded).
	Logger *slog.Logger
}

// ClientConfig configures goreka as a TLS client of other servers
// (eureka.client.tls.*).
type ClientConfig struct {
	// Keys, when Store is set, is the certificate presented to servers
	// that ask for one.
	Keys Keys
	// Trust, when Store is set, replaces the system's roots; the server's
	// host name is verified either way.
	Trust  Trust
	Now    func() time.Time
	Logger *slog.Logger
}

// Server holds the server side's current material and hands it to each
// handshake, so that a rotated file is used by the next connection while
// open connections keep theirs. It is safe for concurrent use.
type Server struct {
	cfg   ServerConfig
	base  *tls.Config // protocols, ciphers, client auth
	keys  watched[tls.Certificate]
	trust watched[[]*x509.Certificate]
	conf  atomic.Pointer[tls.Config] // base with the current keys and trust
	log   *slog.Logger
}

// NewServer reads the configured files and checks them (the key matches
// the certificate, which is valid now; protocols and ciphers are known).
// Its errors are *Error: they name the property and the problem.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "server.ssl"
	}
	s := &Server{cfg: cfg, log: logger(cfg.Logger)}
	base := &tls.Config{NextProtos: []string{"h2", "http/1.1"}, Time: cfg.Now}
	switch strings.ToLower(strings.TrimSpace(cfg.ClientAuth)) {
	case "", ClientAuthNone:
		base.ClientAuth = tls.NoClientCert
	case ClientAuthWant:
		base.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthNeed:
		base.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, problem(cfg.Prefix+".client-auth", "unknown value %q (none, want or need)", cfg.ClientAuth)
	}
	if err := protocolConfig(base, cfg.Protocols, cfg.Ciphers, cfg.Prefix+".enabled-protocols", cfg.Prefix+".ciphers"); err != nil {
		return nil, err
	}
	s.base = base
	if cfg.Keys.Store == "" {
		return nil, problem(cfg.Keys.Names.Store, "no certificate configured")
	}
	s.keys = watched[tls.Certificate]{what: "server certificate", files: cfg.Keys.files(),
		load: func() (*tls.Certificate, error) { return loadKeys(cfg.Keys, cfg.Now()) }}
	if err := s.keys.init(); err != nil {
		return nil, err
	}
	if cfg.Trust.Store != "" {
		s.trust = watched[[]*x509.Certificate]{what: "server trust store", files: cfg.Trust.files(), load: trustLoader(cfg.Trust)}
		if err := s.trust.init(); err != nil {
			return nil, err
		}
	}
	s.rebuild()
	return s, nil
}

func trustLoader(t Trust) func() (*[]*x509.Certificate, error) {
	return func() (*[]*x509.Certificate, error) {
		cs, err := loadTrust(t)
		if err != nil {
			return nil, err
		}
		return &cs, nil
	}
}

func (s *Server) rebuild() {
	c := s.base.Clone()
	c.Certificates = []tls.Certificate{*s.keys.get()}
	if t := s.trust.get(); t != nil {
		c.ClientCAs = pool(*t)
	}
	s.conf.Store(c)
}

func pool(cs []*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range cs {
		p.AddCert(c)
	}
	return p
}

// GetConfigForClient is the hook of tls.Config.GetConfigForClient: the
// configuration of one handshake, with the current certificate and trust.
func (s *Server) GetConfigForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	return s.conf.Load(), nil
}

// GetCertificate is the hook of tls.Config.GetCertificate: the current
// certificate, for a listener that builds its own tls.Config.
func (s *Server) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.keys.get(), nil
}

// TLSConfig is the listener's configuration: every handshake takes the
// current material through GetConfigForClient, with h2 and http/1.1
// offered (an http.Server or grpc credentials.NewTLS can take it as is).
func (s *Server) TLSConfig() *tls.Config {
	if s == nil {
		return nil
	}
	c := s.base.Clone()
	c.GetConfigForClient = s.GetConfigForClient
	c.GetCertificate = s.GetCertificate
	return c
}

// Check re-reads the files whose content changed since the last read and
// uses them when they are good; a bad new file is logged once and the old
// material kept. It reports whether the material changed.
func (s *Server) Check() bool {
	if s == nil {
		return false
	}
	k, t := s.keys.check(s.log), s.trust.check(s.log)
	if k || t {
		s.rebuild()
	}
	return k || t
}

// Expiry reports when the material runs out: the certificate's NotAfter
// under "server" and the earliest of the trusted CAs' under
// "server-trust".
func (s *Server) Expiry() map[string]time.Time {
	out := map[string]time.Time{"server": s.keys.get().Leaf.NotAfter}
	if t := s.trust.get(); t != nil {
		out["server-trust"] = earliest(*t)
	}
	return out
}

// Client holds goreka's material as a client of other servers.
type Client struct {
	cfg   ClientConfig
	keys  watched[tls.Certificate]
	trust watched[[]*x509.Certificate]
	roots atomic.Pointer[x509.CertPool]
	log   *slog.Logger
}

// NewClient reads and checks the configured files (errors as NewServer's).
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Client{cfg: cfg, log: logger(cfg.Logger)}
	if cfg.Keys.Store != "" {
		c.keys = watched[tls.Certificate]{what: "client certificate", files: cfg.Keys.files(),
			load: func() (*tls.Certificate, error) { return loadKeys(cfg.Keys, cfg.Now()) }}
		if err := c.keys.init(); err != nil {
			return nil, err
		}
	}
	if cfg.Trust.Store != "" {
		c.trust = watched[[]*x509.Certificate]{what: "client trust store", files: cfg.Trust.files(), load: trustLoader(cfg.Trust)}
		if err := c.trust.init(); err != nil {
			return nil, err
		}
		c.roots.Store(pool(*c.trust.get()))
	}
	return c, nil
}

// ConfigFor is the configuration of one new connection to host: the
// current certificate on request, the server verified against the current
// trust store (the system's roots without one) with its host name, by Go's
// own verification (an IP address against the IP SANs). A rotated file
// reaches the next connection. A nil Client's is nil: Go's defaults.
func (c *Client) ConfigFor(host string) *tls.Config {
	if c == nil {
		return nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host, RootCAs: c.roots.Load(), Time: c.cfg.Now}
	if c.keys.files != nil {
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return c.keys.get(), nil }
	}
	return tc
}

// ConfigFunc is ConfigFor as a function value, nil for a nil Client (for
// eurekahttp.Config.TLSConfigFor, whose nil means Go's defaults).
func (c *Client) ConfigFunc() func(host string) *tls.Config {
	if c == nil {
		return nil
	}
	return c.ConfigFor
}

// Check re-reads changed files, as Server.Check.
func (c *Client) Check() bool {
	if c == nil {
		return false
	}
	k, t := c.keys.check(c.log), c.trust.check(c.log)
	if t {
		c.roots.Store(pool(*c.trust.get()))
	}
	return k || t
}

// Expiry reports "client" (its certificate) and "client-trust".
func (c *Client) Expiry() map[string]time.Time {
	out := map[string]time.Time{}
	if k := c.keys.get(); k != nil {
		out["client"] = k.Leaf.NotAfter
	}
	if t := c.trust.get(); t != nil {
		out["client-trust"] = earliest(*t)
	}
	return out
}

func earliest(cs []*x509.Certificate) time.Time {
	var t time.Time
	for _, c := range cs {
		if t.IsZero() || c.NotAfter.Before(t) {
			t = c.NotAfter
		}
	}
	return t
}

// Checker is what Poll re-reads: *Server and *Client (nil ones too).
type Checker interface{ Check() bool }

// Poll calls Check on each checker every interval until ctx is done. A
// Kubernetes Secret volume's swap (the ..data symlink) is seen as any
// other change: the files' content is compared, not their names.
func Poll(ctx context.Context, interval time.Duration, cs ...Checker) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, c := range cs {
				if c != nil {
					c.Check()
				}
			}
		}
	}
}

// watched is material read from files, re-read when their content
// changes.
type watched[T any] struct {
	what  string
	files []string
	load  func() (*T, error)
	cur   atomic.Pointer[T]

	mu     sync.Mutex
	digest [32]byte // of the files the current material came from
	failed string   // the last refusal, logged once
}

func (w *watched[T]) get() *T {
	if w == nil {
		return nil
	}
	return w.cur.Load()
}

func (w *watched[T]) init() error {
	d, err := digest(w.files)
	if err != nil {
		_, lerr := w.load() // the loader names the property
		if lerr != nil {
			return lerr
		}
		return err
	}
	v, err := w.load()
	if err != nil {
		return err
	}
	w.digest = d
	w.cur.Store(v)
	return nil
}

func (w *watched[T]) check(log *slog.Logger) bool {
	if w.files == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	d, err := digest(w.files)
	if err == nil && d == w.digest {
		return false
	}
	var v *T
	if err == nil {
		v, err = w.load()
	}
	if err != nil {
		if msg := fmt.Sprintf("%x %v", d, err); msg != w.failed {
			log.Warn("new "+w.what+" refused; the old one stays in use", "err", err)
			w.failed = msg
		}
		return false
	}
	w.digest, w.failed = d, ""
	w.cur.Store(v)
	log.Info(w.what+" reloaded", "files", strings.Join(w.files, ","))
	return true
}

// digest hashes the files' content (symlinks followed).
func digest(files []string) ([32]byte, error) {
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return [32]byte{}, fmt.Errorf("%s: %w", f, err)
		}
		_ = binary.Write(h, binary.BigEndian, int64(len(b)))
		h.Write(b)
	}
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d, nil
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.With("component", "tls")
}
