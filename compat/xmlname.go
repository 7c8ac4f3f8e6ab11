package compat

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// xmlElementName returns the element name XStream's XmlFriendlyNameCoder
// (dollar "_-", escape "__", hex prefix "_.") writes for a metadata key, and
// false when the key cannot be written at all (the empty key).
//
// XStream has a fast path: a name with no '$', '_' or character outside
// 28..126 is written as it is, even when it is not a valid XML name (a
// leading digit, a space, '<'), which yields broken XML. Only then do we
// differ from the Java server: such a name is written with XStream's own
// slow-path escaping instead (every invalid character as "_." and four hex
// digits), which XStream's reader and ours turn back into the key.
func xmlElementName(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	fast := true
	for i := 0; i < len(key); i++ {
		if c := key[i]; c == '$' || c == '_' || c <= 27 || c >= 127 {
			fast = false
			break
		}
	}
	if fast && validXMLName(key) {
		return key, true
	}
	return xstreamEscapeName(key), true
}

// xstreamEscapeName is XStream's slow path, over UTF-16 units as in Java.
func xstreamEscapeName(key string) string {
	var b strings.Builder
	b.Grow(len(key) + 8)
	first := true
	emit := func(c rune) {
		switch {
		case c == '$':
			b.WriteString("_-")
		case c == '_':
			b.WriteString("__")
		case first && !isXMLNameStart(c) || !first && !isXMLNameChar(c):
			const hex = "0123456789abcdef"
			b.WriteString("_.")
			b.WriteByte(hex[c>>12&0xf])
			b.WriteByte(hex[c>>8&0xf])
			b.WriteByte(hex[c>>4&0xf])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteRune(c)
		}
		first = false
	}
	for _, r := range key {
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			emit(r1)
			emit(r2)
			continue
		}
		emit(r)
	}
	return b.String()
}

// decodeXMLName undoes XmlFriendlyNameCoder: "_-" -> '$', "_.XXXX" -> the
// UTF-16 unit XXXX (pairs are joined), "__" -> '_'. Anything else is kept.
func decodeXMLName(name string) string {
	if !strings.Contains(name, "_") {
		return name
	}
	var units []uint16
	for i := 0; i < len(name); {
		if name[i] == '_' && i+1 < len(name) {
			switch name[i+1] {
			case '-':
				units = append(units, '$')
				i += 2
				continue
			case '.':
				if i+6 <= len(name) {
					if v, ok := parseHex4(name[i+2 : i+6]); ok {
						units = append(units, v)
						i += 6
						continue
					}
				}
			case '_':
				units = append(units, '_')
				i += 2
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(name[i:])
		units = utf16.AppendRune(units, r)
		i += size
	}
	return string(utf16.Decode(units))
}

func parseHex4(s string) (uint16, bool) {
	var v uint16
	for i := 0; i < 4; i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint16(c)
	}
	return v, true
}

// validXMLName reports whether s is an XML 1.0 (fifth edition) Name.
func validXMLName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == utf8.RuneError {
			return false
		}
		if i == 0 && !isXMLNameStart(r) || i > 0 && !isXMLNameChar(r) {
			return false
		}
	}
	return true
}

func isXMLNameStart(r rune) bool {
	switch {
	case r == ':' || r == '_' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z':
		return true
	case r < 0xC0:
		return false
	}
	return 0xC0 <= r && r <= 0xD6 || 0xD8 <= r && r <= 0xF6 || 0xF8 <= r && r <= 0x2FF ||
		0x370 <= r && r <= 0x37D || 0x37F <= r && r <= 0x1FFF || 0x200C <= r && r <= 0x200D ||
		0x2070 <= r && r <= 0x218F || 0x2C00 <= r && r <= 0x2FEF || 0x3001 <= r && r <= 0xD7FF ||
		0xF900 <= r && r <= 0xFDCF || 0xFDF0 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0xEFFFF
}

func isXMLNameChar(r rune) bool {
	return isXMLNameStart(r) || r == '-' || r == '.' || '0' <= r && r <= '9' || r == 0xB7 ||
		0x300 <= r && r <= 0x36F || 0x203F <= r && r <= 0x2040
}
