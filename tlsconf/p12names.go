package tlsconf

import (
	"encoding/asn1"
	"unicode/utf16"
)

// The PKCS #12 structures (RFC 7292) that carry the names of key entries.
var (
	oidP12Data         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidP12KeyBag       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 1}
	oidP12ShroudedKey  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 2}
	oidP12FriendlyName = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 20}
)

type p12ContentInfo struct {
	Type    asn1.ObjectIdentifier
	Content asn1.RawValue `asn1:"tag:0,explicit,optional"`
}

type p12PFX struct {
	Version  int
	AuthSafe p12ContentInfo
	MacData  asn1.RawValue `asn1:"optional"`
}

type p12Bag struct {
	Type       asn1.ObjectIdentifier
	Value      asn1.RawValue  `asn1:"tag:0,explicit"`
	Attributes []p12Attribute `asn1:"set,optional"`
}

type p12Attribute struct {
	Type   asn1.ObjectIdentifier
	Values asn1.RawValue `asn1:"set"`
}

// pkcs12KeyAliases are the friendly names (keytool's aliases) of a PKCS12
// file's key entries, read from the key bags that are not inside an
// encrypted part: keytool and openssl keep each key bag encrypted on its
// own and its attributes in the clear. go-pkcs12 reads the keys and
// certificates but shows the names only through ToPEM, which refuses the
// attribute Java marks trusted certificate entries with; a keytool keystore
// that holds its CA beside its key (the usual one) could then not be
// opened by key-alias. ok is false when no key bag was found in the clear
// (the caller asks ToPEM then). The file's MAC is the library's to check,
// before this is called.
func pkcs12KeyAliases(data []byte) (aliases []string, ok bool) {
	var pfx p12PFX
	if _, err := asn1.Unmarshal(data, &pfx); err != nil || !pfx.AuthSafe.Type.Equal(oidP12Data) {
		return nil, false
	}
	var safe []byte
	if _, err := asn1.Unmarshal(pfx.AuthSafe.Content.Bytes, &safe); err != nil {
		return nil, false
	}
	var parts []p12ContentInfo
	if _, err := asn1.Unmarshal(safe, &parts); err != nil {
		return nil, false
	}
	for _, p := range parts {
		if !p.Type.Equal(oidP12Data) {
			continue // encrypted: the certificates, in keytool's files
		}
		var contents []byte
		if _, err := asn1.Unmarshal(p.Content.Bytes, &contents); err != nil {
			return nil, false
		}
		var bags []p12Bag
		if _, err := asn1.Unmarshal(contents, &bags); err != nil {
			return nil, false
		}
		for _, b := range bags {
			if !b.Type.Equal(oidP12ShroudedKey) && !b.Type.Equal(oidP12KeyBag) {
				continue
			}
			ok = true
			for _, a := range b.Attributes {
				if name, named := friendlyName(a); named {
					aliases = append(aliases, name)
				}
			}
		}
	}
	return aliases, ok
}

// friendlyName decodes a friendlyName attribute: a BMPString (UTF-16BE).
func friendlyName(a p12Attribute) (string, bool) {
	if !a.Type.Equal(oidP12FriendlyName) {
		return "", false
	}
	var v asn1.RawValue
	if _, err := asn1.Unmarshal(a.Values.Bytes, &v); err != nil || v.Tag != asn1.TagBMPString || len(v.Bytes)%2 != 0 {
		return "", false
	}
	u := make([]uint16, 0, len(v.Bytes)/2)
	for i := 0; i < len(v.Bytes); i += 2 {
		u = append(u, uint16(v.Bytes[i])<<8|uint16(v.Bytes[i+1]))
	}
	for len(u) > 0 && u[len(u)-1] == 0 {
		u = u[:len(u)-1]
	}
	return string(utf16.Decode(u)), true
}
