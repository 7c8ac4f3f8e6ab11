package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goreka/goreka/tlsconf"
)

// ClientTLSConfig is eureka.client.tls.*, Spring Cloud Netflix's TLS of a
// Eureka client: goreka's own calls to other servers (peers, the start-up
// sync, remote regions) use it.
type ClientTLSConfig struct {
	Enabled bool // eureka.client.tls.enabled
	KeyStores
	// CertificatePrivateKey is goreka's addition for a PEM key-store: the
	// key file beside the certificate (a Kubernetes TLS Secret's tls.key).
	CertificatePrivateKey string
}

// SSLBundle is one Spring Boot SSL bundle (spring.ssl.bundle.jks.<name>.*
// or spring.ssl.bundle.pem.<name>.*), which server.ssl.bundle names.
type SSLBundle struct {
	Kind string // jks or pem
	KeyStores
	// PEM bundles: keystore.certificate, keystore.private-key and
	// truststore.certificate.
	Certificate, PrivateKey, TrustCertificate string
	Ciphers, EnabledProtocols                 []string          // options.*
	fields                                    map[string]string // canonical field -> property, for errors
}

// bundleFields are the fields of a bundle goreka reads, canonical.
var bundleFields = map[string][]string{
	"jks": {"key.alias", "key.password", "keystore.location", "keystore.password", "keystore.type", "truststore.location", "truststore.password", "truststore.type",
		"options.ciphers", "options.enabledprotocols", "reloadonupdate", "protocol", "keystore.provider", "truststore.provider"},
	"pem": {"key.alias", "key.password", "keystore.certificate", "keystore.privatekey", "truststore.certificate",
		"options.ciphers", "options.enabledprotocols", "reloadonupdate", "protocol"},
}

// bindBundles reads spring.ssl.bundle.jks.* and spring.ssl.bundle.pem.*.
func bindBundles(st *stack, c *Config, errs *[]error) {
	c.Server.SSL.Bundles = map[string]*SSLBundle{}
	for _, kind := range []string{"jks", "pem"} {
		eachMapEntry(st, c, "spring.ssl.bundle."+kind, errs, func(k string, e entry) error {
			name, field, ok := strings.Cut(k, ".")
			if !ok || name == "" {
				return fmt.Errorf("not a bundle field (spring.ssl.bundle.%s.<name>.<field>)", kind)
			}
			var segs []string
			for s := range strings.SplitSeq(field, ".") {
				segs = append(segs, canonicalSegment(s))
			}
			field = strings.Join(segs, ".")
			if !slices.Contains(bundleFields[kind], field) {
				return fmt.Errorf("unknown field %q of a %s bundle", field, kind)
			}
			b := c.Server.SSL.Bundles[name]
			if b == nil {
				b = &SSLBundle{Kind: kind, fields: map[string]string{}}
				c.Server.SSL.Bundles[name] = b
			}
			if b.Kind != kind {
				return fmt.Errorf("bundle %q is both a jks and a pem bundle", name)
			}
			b.fields[field] = "spring.ssl.bundle." + kind + "." + name + "." + field
			v := strings.TrimPrefix(strings.TrimSpace(e.value), "file:")
			switch field {
			case "key.alias":
				b.KeyAlias = v
			case "key.password":
				b.KeyPassword = e.value
			case "keystore.location":
				b.KeyStore = v
			case "keystore.password":
				b.KeyStorePassword = e.value
			case "keystore.type":
				b.KeyStoreType = v
			case "truststore.location":
				b.TrustStore = v
			case "truststore.password":
				b.TrustStorePassword = e.value
			case "truststore.type":
				b.TrustStoreType = v
			case "keystore.certificate":
				b.Certificate = v
			case "keystore.privatekey":
				b.PrivateKey = v
			case "truststore.certificate":
				b.TrustCertificate = v
			case "options.ciphers":
				b.Ciphers = splitList(e.value)
			case "options.enabledprotocols":
				b.EnabledProtocols = splitList(e.value)
			} // reload-on-update, protocol, providers: goreka always reloads, speaks TLS, has one provider
			return nil
		})
	}
}

// finishTLS checks the TLS properties that span keys and makes their
// files absolute. The files are read when the server starts (tlsconf).
func finishTLS(c *Config, workDir string, errs *[]error) {
	ssl := &c.Server.SSL
	if (ssl.Certificate == "") != (ssl.CertificatePrivateKey == "") && !strings.EqualFold(ssl.KeyStoreType, tlsconf.PEM) {
		*errs = append(*errs, fmt.Errorf("server.ssl.certificate and server.ssl.certificate-private-key must be set together"))
	}
	if ssl.Certificate != "" && ssl.KeyStore != "" {
		*errs = append(*errs, fmt.Errorf("server.ssl.certificate and server.ssl.key-store are both set; give one"))
	}
	if ssl.Bundle != "" {
		if ssl.Bundles[ssl.Bundle] == nil {
			names := make([]string, 0, len(ssl.Bundles))
			for n := range ssl.Bundles {
				names = append(names, n)
			}
			slices.Sort(names)
			*errs = append(*errs, fmt.Errorf("server.ssl.bundle=%q: no such bundle (configured: %s)", ssl.Bundle, strings.Join(names, ", ")))
		} else if ssl.Certificate != "" || ssl.KeyStore != "" {
			*errs = append(*errs, fmt.Errorf("server.ssl.bundle and server.ssl.certificate or key-store are both set; give one"))
		}
	}
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(workDir, *p)
		}
	}
	for _, p := range []*string{&ssl.Certificate, &ssl.CertificatePrivateKey, &ssl.TrustCertificate, &ssl.KeyStore, &ssl.TrustStore,
		&c.Client.TLS.KeyStore, &c.Client.TLS.TrustStore, &c.Client.TLS.CertificatePrivateKey} {
		abs(p)
	}
	for _, b := range ssl.Bundles {
		for _, p := range []*string{&b.KeyStore, &b.TrustStore, &b.Certificate, &b.PrivateKey, &b.TrustCertificate} {
			abs(p)
		}
	}
	if c.TLSEnabled() && ssl.Bundle == "" && ssl.KeyStore == "" {
		for _, p := range []string{ssl.Certificate, ssl.CertificatePrivateKey} {
			if _, err := os.Stat(p); err != nil {
				*errs = append(*errs, fmt.Errorf("TLS file: %w", err))
			}
		}
	}
}

// checkCertificateUsers runs after the users are bound (bindUsers).
func checkCertificateUsers(c *Config, errs *[]error) {
	// A certificate user is named by whatever certificate the trust
	// verifies: without a trust store of its own that is the system's
	// roots, and any publicly trusted certificate with that name would be
	// the user.
	for i, u := range c.Security.Users {
		if u.CertificateSubject != "" && c.TLSEnabled() && c.ServerTLS().Trust.Store == "" {
			*errs = append(*errs, fmt.Errorf("goreka.security.users[%d].certificate-subject=%q needs server.ssl.trust-store (or trust-certificate, or the bundle's truststore): without one, any certificate the system trusts could name that user", i, u.CertificateSubject))
		}
	}
}

// ServerTLS maps server.ssl.* (or the bundle server.ssl.bundle names) to
// tlsconf's server side; TLSEnabled says whether it is used.
func (c *Config) ServerTLS() tlsconf.ServerConfig {
	ssl := c.Server.SSL
	sc := tlsconf.ServerConfig{ClientAuth: ssl.ClientAuth, Protocols: ssl.EnabledProtocols, Ciphers: ssl.Ciphers, Prefix: "server.ssl"}
	if b := ssl.Bundles[ssl.Bundle]; ssl.Bundle != "" && b != nil {
		sc.Keys, sc.Trust = b.stores("spring.ssl.bundle." + b.Kind + "." + ssl.Bundle)
		if len(sc.Protocols) == 0 {
			sc.Protocols = b.EnabledProtocols
		}
		if len(sc.Ciphers) == 0 {
			sc.Ciphers = b.Ciphers
		}
		return sc
	}
	sc.Keys = keysOf(ssl.KeyStores, "server.ssl")
	sc.Trust = trustOf(ssl.KeyStores, "server.ssl")
	if ssl.KeyStore == "" {
		sc.Keys = tlsconf.Keys{Type: tlsconf.PEM, Store: ssl.Certificate, PrivateKey: ssl.CertificatePrivateKey,
			Names: tlsconf.Names{Store: "server.ssl.certificate", PrivateKey: "server.ssl.certificate-private-key", Type: "server.ssl.key-store-type"}}
	}
	if ssl.TrustStore == "" && ssl.TrustCertificate != "" {
		sc.Trust = tlsconf.Trust{Type: tlsconf.PEM, Store: ssl.TrustCertificate, Names: tlsconf.Names{Store: "server.ssl.trust-certificate"}}
	}
	return sc
}

// ClientTLS maps eureka.client.tls.*; ok is false when it is off (Go's
// defaults then: the system's roots, no client certificate).
func (c *Config) ClientTLS() (cc tlsconf.ClientConfig, ok bool) {
	t := c.Client.TLS
	if !t.Enabled {
		return cc, false
	}
	cc.Keys = keysOf(t.KeyStores, "eureka.client.tls")
	cc.Keys.PrivateKey = t.CertificatePrivateKey
	cc.Trust = trustOf(t.KeyStores, "eureka.client.tls")
	return cc, true
}

func keysOf(k KeyStores, prefix string) tlsconf.Keys {
	return tlsconf.Keys{Type: k.KeyStoreType, Store: k.KeyStore, Password: k.KeyStorePassword, KeyPassword: k.KeyPassword,
		Alias: k.KeyAlias, Names: tlsconf.SpringNames(prefix, false)}
}

func trustOf(k KeyStores, prefix string) tlsconf.Trust {
	return tlsconf.Trust{Type: k.TrustStoreType, Store: k.TrustStore, Password: k.TrustStorePassword, Names: tlsconf.SpringNames(prefix, true)}
}

func (b *SSLBundle) stores(prefix string) (tlsconf.Keys, tlsconf.Trust) {
	if b.Kind == "pem" {
		return tlsconf.Keys{Type: tlsconf.PEM, Store: b.Certificate, PrivateKey: b.PrivateKey,
				Names: tlsconf.Names{Store: prefix + ".keystore.certificate", PrivateKey: prefix + ".keystore.private-key", Type: prefix}},
			tlsconf.Trust{Type: tlsconf.PEM, Store: b.TrustCertificate, Names: tlsconf.Names{Store: prefix + ".truststore.certificate"}}
	}
	return tlsconf.Keys{Type: b.KeyStoreType, Store: b.KeyStore, Password: b.KeyStorePassword, KeyPassword: b.KeyPassword, Alias: b.KeyAlias,
			Names: tlsconf.Names{Store: prefix + ".keystore.location", Type: prefix + ".keystore.type", Password: prefix + ".keystore.password",
				KeyPassword: prefix + ".key.password", Alias: prefix + ".key.alias"}},
		tlsconf.Trust{Type: b.TrustStoreType, Store: b.TrustStore, Password: b.TrustStorePassword,
			Names: tlsconf.Names{Store: prefix + ".truststore.location", Type: prefix + ".truststore.type", Password: prefix + ".truststore.password"}}
}
