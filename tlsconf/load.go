package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// Store types, as Spring names them (key-store-type, trust-store-type).
const (
	PKCS12 = "PKCS12"
	JKS    = "JKS"
	PEM    = "PEM"
)

// Names are the property names a problem is reported under: the
// configuration's, so that a start-up error names what to fix.
type Names struct {
	Store, Type, Password, KeyPassword, Alias, PrivateKey string
}

// SpringNames are the names of Spring Boot's server.ssl.* style under
// prefix (server.ssl, eureka.client.tls): key-store, key-store-type, ...
// or, for trust, trust-store, trust-store-type and trust-store-password.
func SpringNames(prefix string, trust bool) Names {
	if trust {
		return Names{Store: prefix + ".trust-store", Type: prefix + ".trust-store-type", Password: prefix + ".trust-store-password"}
	}
	return Names{Store: prefix + ".key-store", Type: prefix + ".key-store-type", Password: prefix + ".key-store-password",
		KeyPassword: prefix + ".key-password", Alias: prefix + ".key-alias", PrivateKey: prefix + ".certificate-private-key"}
}

// Error is a problem with TLS material: the property to fix and what is
// wrong with it. Its text is one line, fit for a start-up error.
type Error struct {
	Property string
	Problem  string
}

func (e *Error) Error() string { return e.Property + ": " + e.Problem }

func problem(prop, format string, args ...any) error {
	return &Error{Property: prop, Problem: fmt.Sprintf(format, args...)}
}

// Keys says where a certificate chain and its private key come from.
type Keys struct {
	// Type is PKCS12, JKS or PEM, in any case; "" is PEM when PrivateKey
	// is set, JKS for a .jks file, else PKCS12 (Spring's default).
	Type string
	// Store is the keystore, or the PEM certificate chain.
	Store string
	// PrivateKey is the PEM key file (PEM only; "" reads the key from
	// Store too).
	PrivateKey string
	// Password opens the keystore; KeyPassword the key entry ("" is
	// Password, as in Spring).
	Password, KeyPassword string
	// Alias picks the key entry (JKS and PKCS12); "" takes the only
	// one (JKS: the first in alias order).
	Alias string
	Names Names
}

// Trust says which CA certificates verify the other side.
type Trust struct {
	Type     string // PKCS12, JKS or PEM; "" as Keys.Type
	Store    string // the truststore or a PEM bundle of CA certificates
	Password string
	Names    Names
}

// files are the paths whose content decides the material.
func (k Keys) files() []string {
	if k.Store == "" {
		return nil
	}
	if k.PrivateKey != "" {
		return []string{k.Store, k.PrivateKey}
	}
	return []string{k.Store}
}

func (t Trust) files() []string {
	if t.Store == "" {
		return nil
	}
	return []string{t.Store}
}

// storeType normalises a store type and guesses one from the file name.
func storeType(typ, path, pemKey, prop string) (string, error) {
	switch t := strings.ToUpper(strings.TrimSpace(typ)); t {
	case PKCS12, JKS, PEM:
		return t, nil
	case "PKCS#12", "P12", "PFX":
		return PKCS12, nil
	case "":
		switch {
		case pemKey != "":
			return PEM, nil
		case strings.EqualFold(filepath.Ext(path), ".jks"):
			return JKS, nil
		case slices.Contains([]string{".pem", ".crt", ".cer"}, strings.ToLower(filepath.Ext(path))):
			return PEM, nil
		}
		return PKCS12, nil
	default:
		return "", problem(prop, "unknown store type %q (goreka reads PKCS12, JKS and PEM)", typ)
	}
}

func readFile(path, prop string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, problem(prop, "cannot read %s: %v", path, err)
	}
	return b, nil
}

// loadKeys reads a certificate chain and its key and checks them: the key
// matches the certificate, which is valid at now.
func loadKeys(k Keys, now time.Time) (*tls.Certificate, error) {
	n := k.Names
	typ, err := storeType(k.Type, k.Store, k.PrivateKey, n.Type)
	if err != nil {
		return nil, err
	}
	data, err := readFile(k.Store, n.Store)
	if err != nil {
		return nil, err
	}
	var chain []*x509.Certificate
	var key crypto.PrivateKey
	switch typ {
	case PEM:
		keyData, keyProp := data, n.Store
		if k.PrivateKey != "" {
			if keyData, err = readFile(k.PrivateKey, n.PrivateKey); err != nil {
				return nil, err
			}
			keyProp = n.PrivateKey
		}
		if chain, err = pemCerts(data, k.Store, n.Store); err != nil {
			return nil, err
		}
		if key, err = pemKey(keyData, keyProp); err != nil {
			return nil, err
		}
	case PKCS12:
		chain, key, err = pkcs12Keys(data, k)
	case JKS:
		chain, key, err = jksKeys(data, k)
	}
	if err != nil {
		return nil, err
	}
	leaf := chain[0]
	pub, ok := key.(crypto.Signer)
	if !ok {
		return nil, problem(n.Store, "unsupported private key type %T", key)
	}
	if eq, ok := pub.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !eq.Equal(leaf.PublicKey) {
		return nil, problem(n.Store, "the private key does not match the certificate (%s)", subjectOf(leaf))
	}
	if err := validAt(leaf, now, n.Store); err != nil {
		return nil, err
	}
	c := &tls.Certificate{PrivateKey: key, Leaf: leaf}
	for _, x := range chain {
		c.Certificate = append(c.Certificate, x.Raw)
	}
	return c, nil
}

func validAt(c *x509.Certificate, now time.Time, prop string) error {
	switch {
	case now.Before(c.NotBefore):
		return problem(prop, "certificate %s is not valid yet (not before %s)", subjectOf(c), c.NotBefore.UTC().Format(time.RFC3339))
	case now.After(c.NotAfter):
		return problem(prop, "certificate %s expired at %s", subjectOf(c), c.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

func subjectOf(c *x509.Certificate) string {
	if c.Subject.CommonName != "" {
		return "CN=" + c.Subject.CommonName
	}
	return c.Subject.String()
}

func pemCerts(data []byte, path, prop string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, problem(prop, "%s: bad certificate: %v", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, problem(prop, "%s holds no PEM certificate", path)
	}
	return out, nil
}

func pemKey(data []byte, prop string) (crypto.PrivateKey, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, problem(prop, "no PEM private key found")
		}
		switch b.Type {
		case "ENCRYPTED PRIVATE KEY":
			return nil, problem(prop, "encrypted PEM private keys are not supported; use an unencrypted key or a PKCS12 keystore")
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
			if err != nil {
				return nil, problem(prop, "bad PKCS#8 private key: %v", err)
			}
			return k, nil
		case "RSA PRIVATE KEY":
			if _, enc := b.Headers["DEK-Info"]; enc {
				return nil, problem(prop, "encrypted PEM private keys are not supported; use an unencrypted key or a PKCS12 keystore")
			}
			k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
			if err != nil {
				return nil, problem(prop, "bad RSA private key: %v", err)
			}
			return k, nil
		case "EC PRIVATE KEY":
			k, err := x509.ParseECPrivateKey(b.Bytes)
			if err != nil {
				return nil, problem(prop, "bad EC private key: %v", err)
			}
			return k, nil
		}
	}
}

// pkcs12Keys reads a PKCS12 keystore with one key entry (go-pkcs12 reads
// one key and its chain; keytool's and openssl's PBES2/AES and legacy
// files alike).
func pkcs12Keys(data []byte, k Keys) ([]*x509.Certificate, crypto.PrivateKey, error) {
	n := k.Names
	pw := k.Password
	key, leaf, cas, err := pkcs12.DecodeChain(data, pw)
	if errors.Is(err, pkcs12.ErrIncorrectPassword) && k.KeyPassword != "" && k.KeyPassword != k.Password {
		pw = k.KeyPassword
		key, leaf, cas, err = pkcs12.DecodeChain(data, pw)
	}
	if err != nil && k.Alias != "" && strings.Contains(err.Error(), "expected exactly one key bag") {
		return pkcs12Entry(data, pw, k)
	}
	if err != nil {
		return nil, nil, pkcs12Problem(err, k.Store, n)
	}
	if k.Alias != "" {
		// The key entries' names (keytool's aliases): from the key bags
		// in the clear, else from go-pkcs12's PEM conversion.
		aliases, ok := pkcs12KeyAliases(data)
		if !ok {
			blocks, perr := pkcs12.ToPEM(data, pw)
			if perr != nil {
				return nil, nil, problem(n.Alias, "cannot read the aliases of %s to find %q: %v", k.Store, k.Alias, perr)
			}
			for _, b := range blocks {
				if b.Type == "PRIVATE KEY" {
					aliases = append(aliases, b.Headers["friendlyName"])
				}
			}
		}
		if !slices.ContainsFunc(aliases, func(a string) bool { return strings.EqualFold(a, k.Alias) }) {
			return nil, nil, noAlias(n, k.Store, k.Alias, aliases)
		}
	}
	return leafFirst(key, append([]*x509.Certificate{leaf}, cas...)), key, nil
}

// leafFirst puts the certificate of key first: go-pkcs12 takes the first
// certificate bag for the leaf, which a tool that writes the CA first
// would make the CA.
func leafFirst(key crypto.PrivateKey, certs []*x509.Certificate) []*x509.Certificate {
	i := slices.IndexFunc(certs, func(c *x509.Certificate) bool { return matches(key, c) })
	if i > 0 {
		certs[0], certs[i] = certs[i], certs[0]
	}
	return certs
}

func matches(key crypto.PrivateKey, c *x509.Certificate) bool {
	s, ok := key.(crypto.Signer)
	if !ok {
		return false
	}
	eq, ok := s.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(c.PublicKey)
}

// pkcs12Entry reads the key entry named k.Alias of a PKCS12 keystore with
// several (go-pkcs12's DecodeChain reads one): through ToPEM, which keeps
// the entries' names and key ids, the leaf being the certificate of the
// same key id and its chain the certificates that issued it. ToPEM refuses
// a keystore that also holds trusted certificate entries (Java's attribute
// on them): that one is refused with what to do.
func pkcs12Entry(data []byte, pw string, k Keys) ([]*x509.Certificate, crypto.PrivateKey, error) {
	n := k.Names
	blocks, err := pkcs12.ToPEM(data, pw)
	if err != nil {
		return nil, nil, problem(n.Store, "%s holds several keys and trusted certificates, which goreka cannot read together; "+
			"export the entry %q to a keystore of its own (keytool -importkeystore -srcalias %s) or use JKS: %v", k.Store, k.Alias, k.Alias, err)
	}
	var key crypto.PrivateKey
	var id string
	var aliases []string
	var certs []*x509.Certificate
	ids := map[*x509.Certificate]string{}
	for _, b := range blocks {
		switch b.Type {
		case "PRIVATE KEY":
			name := b.Headers["friendlyName"]
			aliases = append(aliases, name)
			if key != nil || !strings.EqualFold(name, k.Alias) {
				continue
			}
			// ToPEM writes PKCS #1 and SEC 1 keys under this type.
			if key, err = x509.ParsePKCS1PrivateKey(b.Bytes); err != nil {
				if key, err = x509.ParseECPrivateKey(b.Bytes); err != nil {
					return nil, nil, problem(n.Store, "key entry %q of %s: %v", k.Alias, k.Store, err)
				}
			}
			id = b.Headers["localKeyId"]
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, problem(n.Store, "%s: bad certificate: %v", k.Store, err)
			}
			certs = append(certs, c)
			ids[c] = b.Headers["localKeyId"]
		}
	}
	if key == nil {
		return nil, nil, noAlias(n, k.Store, k.Alias, aliases)
	}
	i := slices.IndexFunc(certs, func(c *x509.Certificate) bool { return id != "" && ids[c] == id })
	if i < 0 {
		return nil, nil, problem(n.Store, "key entry %q of %s has no certificate", k.Alias, k.Store)
	}
	chain := []*x509.Certificate{certs[i]}
	for len(chain) < 10 {
		last := chain[len(chain)-1]
		if bytes.Equal(last.RawIssuer, last.RawSubject) {
			break
		}
		j := slices.IndexFunc(certs, func(c *x509.Certificate) bool {
			return bytes.Equal(c.RawSubject, last.RawIssuer) && last.CheckSignatureFrom(c) == nil
		})
		if j < 0 {
			break
		}
		chain = append(chain, certs[j])
	}
	return chain, key, nil
}

// noAlias is key-alias naming no key entry of the keystore at path, in
// Spring Boot's words ("Keystore does not contain alias"), with the file
// and the aliases of the key entries it does hold, sorted.
func noAlias(n Names, path, alias string, keyAliases []string) error {
	names := slices.DeleteFunc(slices.Clone(keyAliases), func(a string) bool { return a == "" })
	slices.Sort(names)
	names = slices.Compact(names)
	has := "it holds no named key entry"
	if len(names) > 0 {
		has = "its key entries: " + strings.Join(names, ", ")
	}
	return problem(n.Alias, "keystore %s does not contain alias '%s' (%s)", path, alias, has)
}

// pkcs12Problem words go-pkcs12's error as Spring Boot does ("Could not
// load store from", the JDK's "keystore password was incorrect"), naming
// the file and, by the Error's property, what to fix.
func pkcs12Problem(err error, path string, n Names) error {
	switch {
	case errors.Is(err, pkcs12.ErrIncorrectPassword):
		return problem(n.Password, "could not load store from '%s': keystore password was incorrect", path)
	case strings.Contains(err.Error(), "expected exactly one key bag"):
		return problem(n.Store, "%s holds several key entries and no key alias names the one to use", path)
	case strings.Contains(err.Error(), "private key missing"):
		return problem(n.Store, "%s holds no private key entry", path)
	}
	return problem(n.Store, "could not load store from '%s': not a PKCS12 keystore: %v", path, err)
}

func jksLoad(data []byte, password, path string, n Names) (keystore.KeyStore, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		if strings.Contains(err.Error(), "invalid digest") {
			return ks, problem(n.Password, "could not load store from '%s': keystore password was incorrect", path)
		}
		return ks, problem(n.Store, "could not load store from '%s': not a JKS keystore: %v", path, err)
	}
	return ks, nil
}

func jksKeys(data []byte, k Keys) ([]*x509.Certificate, crypto.PrivateKey, error) {
	n := k.Names
	ks, err := jksLoad(data, k.Password, k.Store, n)
	if err != nil {
		return nil, nil, err
	}
	var keyAliases []string
	for _, a := range ks.Aliases() {
		if ks.IsPrivateKeyEntry(a) {
			keyAliases = append(keyAliases, a)
		}
	}
	slices.Sort(keyAliases)
	alias := strings.ToLower(k.Alias)
	switch {
	case len(keyAliases) == 0:
		return nil, nil, problem(n.Store, "%s holds no private key entry", k.Store)
	case alias == "":
		alias = keyAliases[0]
	case !slices.Contains(keyAliases, alias):
		return nil, nil, noAlias(n, k.Store, k.Alias, keyAliases)
	}
	kp := k.KeyPassword
	if kp == "" {
		kp = k.Password
	}
	e, err := ks.GetPrivateKeyEntry(alias, []byte(kp))
	if err != nil {
		return nil, nil, problem(n.KeyPassword, "cannot open key entry %q of %s (wrong key password?): %v", alias, k.Store, err)
	}
	key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
	if err != nil {
		return nil, nil, problem(n.Store, "key entry %q of %s: %v", alias, k.Store, err)
	}
	var chain []*x509.Certificate
	for _, c := range e.CertificateChain {
		x, err := x509.ParseCertificate(c.Content)
		if err != nil {
			return nil, nil, problem(n.Store, "key entry %q of %s: bad certificate: %v", alias, k.Store, err)
		}
		chain = append(chain, x)
	}
	if len(chain) == 0 {
		return nil, nil, problem(n.Store, "key entry %q of %s has no certificate", alias, k.Store)
	}
	return chain, key, nil
}

// loadTrust reads CA certificates.
func loadTrust(t Trust) ([]*x509.Certificate, error) {
	n := t.Names
	typ, err := storeType(t.Type, t.Store, "", n.Type)
	if err != nil {
		return nil, err
	}
	data, err := readFile(t.Store, n.Store)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	switch typ {
	case PEM:
		return pemCerts(data, t.Store, n.Store)
	case PKCS12:
		certs, err = pkcs12.DecodeTrustStore(data, t.Password)
		if err != nil {
			// Not a Java truststore (no trust attribute): a keystore's
			// chain, as openssl pkcs12 -export writes it.
			_, leaf, cas, cerr := pkcs12.DecodeChain(data, t.Password)
			if cerr != nil {
				return nil, pkcs12Problem(err, t.Store, n)
			}
			certs = append([]*x509.Certificate{leaf}, cas...)
		}
	case JKS:
		ks, err := jksLoad(data, t.Password, t.Store, n)
		if err != nil {
			return nil, err
		}
		aliases := ks.Aliases()
		slices.Sort(aliases)
		for _, a := range aliases {
			if !ks.IsTrustedCertificateEntry(a) {
				continue
			}
			e, _ := ks.GetTrustedCertificateEntry(a)
			c, err := x509.ParseCertificate(e.Certificate.Content)
			if err != nil {
				return nil, problem(n.Store, "entry %q of %s: bad certificate: %v", a, t.Store, err)
			}
			certs = append(certs, c)
		}
	}
	if len(certs) == 0 {
		return nil, problem(n.Store, "%s holds no trusted certificate", t.Store)
	}
	return certs, nil
}
