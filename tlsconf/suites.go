package tlsconf

import (
	"crypto/tls"
	"slices"
	"strings"
)

// protocolVersions are Java's names of the protocols Go speaks.
var protocolVersions = map[string]uint16{
	"TLSV1": tls.VersionTLS10, "TLSV1.0": tls.VersionTLS10, "TLSV1.1": tls.VersionTLS11,
	"TLSV1.2": tls.VersionTLS12, "TLSV1.3": tls.VersionTLS13,
}

// versions maps enabled-protocols (TLSv1.2,TLSv1.3) to Go's range. Go has a
// minimum and a maximum only, so a list with a gap is refused.
func versions(protocols []string, prop string) (lo, hi uint16, err error) {
	var vs []uint16
	for _, p := range protocols {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		v, ok := protocolVersions[strings.ToUpper(p)]
		if !ok {
			return 0, 0, problem(prop, "unknown or unsupported protocol %q (goreka speaks TLSv1, TLSv1.1, TLSv1.2 and TLSv1.3)", p)
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	slices.Sort(vs)
	vs = slices.Compact(vs)
	for i := 1; i < len(vs); i++ {
		if vs[i] != vs[i-1]+1 {
			return 0, 0, problem(prop, "protocols %s leave a gap; Go enables a contiguous range of versions", strings.Join(protocols, ","))
		}
	}
	return vs[0], vs[len(vs)-1], nil
}

// tls13Suites are TLS 1.3's suites: Go enables all three whenever TLS 1.3
// is, and cannot leave one out.
var tls13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// suites maps ciphers (IANA names, which Java uses too; Java's SSL_
// spelling of the old ones and OpenSSL-style lower case are accepted) to
// Go's TLS 1.2 suites, and says whether TLS 1.3 suites were listed. An
// unknown name, an insecure suite Go does not offer by default, or a part
// of the TLS 1.3 suites is an error.
func suites(ciphers []string, prop string) (ids []uint16, tls13 bool, err error) {
	known := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		known[s.Name] = s.ID
	}
	insecure := map[string]bool{}
	for _, s := range tls.InsecureCipherSuites() {
		insecure[s.Name] = true
	}
	n13 := 0
	for _, c := range ciphers {
		name := strings.ToUpper(strings.TrimSpace(c))
		if name == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(name, "SSL_"); ok {
			name = "TLS_" + rest
		}
		if slices.Contains(tls13Suites, name) {
			n13++
			continue
		}
		id, ok := known[name]
		switch {
		case ok:
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		case insecure[name]:
			return nil, false, problem(prop, "cipher %s is insecure; goreka does not offer it", c)
		default:
			return nil, false, problem(prop, "unknown cipher %q (give IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", c)
		}
	}
	if n13 > 0 && n13 < len(tls13Suites) {
		return nil, false, problem(prop, "Go enables all TLS 1.3 suites or none; list all of %s or none of them", strings.Join(tls13Suites, ", "))
	}
	return ids, n13 > 0, nil
}

// protocolConfig applies enabled-protocols and ciphers to c.
func protocolConfig(c *tls.Config, protocols, ciphers []string, protoProp, cipherProp string) error {
	lo, hi, err := versions(protocols, protoProp)
	if err != nil {
		return err
	}
	c.MinVersion, c.MaxVersion = lo, hi
	if len(slices.DeleteFunc(slices.Clone(ciphers), func(s string) bool { return strings.TrimSpace(s) == "" })) == 0 {
		return nil
	}
	ids, tls13, err := suites(ciphers, cipherProp)
	if err != nil {
		return err
	}
	c.CipherSuites = ids
	switch {
	case !tls13 && hi == tls.VersionTLS13:
		if len(protocols) > 0 && lo == tls.VersionTLS13 {
			return problem(cipherProp, "no TLS 1.3 suite listed, but the only enabled protocol is TLSv1.3")
		}
		if len(protocols) > 0 {
			return problem(cipherProp, "no TLS 1.3 suite listed while TLSv1.3 is enabled: list TLS 1.3's suites or drop TLSv1.3 from %s", protoProp)
		}
		c.MaxVersion = tls.VersionTLS12 // the ciphers name TLS 1.2 suites only
	case len(ids) == 0 && lo < tls.VersionTLS13:
		if len(protocols) > 0 {
			return problem(cipherProp, "only TLS 1.3 suites listed while %s enables versions before TLSv1.3", protoProp)
		}
		c.MinVersion = tls.VersionTLS13
	}
	return nil
}
