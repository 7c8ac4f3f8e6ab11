package tlsconf

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"

	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// FuzzPKCS12KeyAliases feeds pkcs12KeyAliases, which parses the ASN.1 of a
// keystore on its own (beside go-pkcs12, after its MAC check, but a
// keystore's MAC is no proof its structure is sane), with mutations of
// keytool's keystores (testdata: one with a trusted CA entry, one with two
// keys) and of go-pkcs12's: it must never panic, report no alias without a
// key bag, and name only valid UTF-8 aliases. That the names are the right
// ones is TestPKCS12KeyAliasesAgreeWithGoPKCS12's (the MAC check that
// comparison needs would make every execution cost a key derivation).
func FuzzPKCS12KeyAliases(f *testing.F) {
	for _, b := range p12Seeds(f) {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x30, 0x03, 0x02, 0x01, 0x03})
	f.Fuzz(func(t *testing.T, data []byte) {
		aliases, ok := pkcs12KeyAliases(data)
		if !ok && len(aliases) > 0 {
			t.Fatalf("no key bag found, yet aliases %q", aliases)
		}
		for _, a := range aliases {
			if !utf8.ValidString(a) {
				t.Fatalf("alias %q is not UTF-8", a)
			}
		}
	})
}

// p12Seeds are keytool's keystores of testdata and go-pkcs12's (modern and
// legacy encryption), all under the password changeit.
func p12Seeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, name := range []string{"keytool-with-ca.p12", "keytool-two-keys.p12"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	ca := newCA(t, "fuzz-ca")
	c, k := ca.valid(t, "fuzz")
	for _, enc := range []*pkcs12.Encoder{pkcs12.Modern, pkcs12.LegacyRC2} {
		b, err := enc.Encode(k, c, []*x509.Certificate{ca.cert}, "changeit")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// The key entries' names read beside go-pkcs12 are the ones its ToPEM
// gives, on every seed ToPEM can read (not keytool-with-ca.p12: ToPEM
// refuses its trusted entry, the reason p12names.go exists).
func TestPKCS12KeyAliasesAgreeWithGoPKCS12(t *testing.T) {
	compared := 0
	for i, data := range p12Seeds(t) {
		aliases, ok := pkcs12KeyAliases(data)
		blocks, err := pkcs12.ToPEM(data, "changeit")
		if err != nil {
			continue
		}
		if !ok {
			t.Errorf("seed %d: no key bag found in the clear", i)
			continue
		}
		var want []string
		for _, b := range blocks {
			if name, named := b.Headers["friendlyName"]; b.Type == "PRIVATE KEY" && named {
				want = append(want, name)
			}
		}
		slices.Sort(want)
		if got := slices.Sorted(slices.Values(aliases)); !slices.Equal(got, want) {
			t.Errorf("seed %d: aliases %q, go-pkcs12's ToPEM names %q", i, got, want)
		}
		compared++
	}
	if compared < 2 {
		t.Fatalf("compared %d seeds, want keytool-two-keys.p12 and go-pkcs12's at least", compared)
	}
}
