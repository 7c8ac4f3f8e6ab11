package compat

import (
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

const hexUpper = "0123456789ABCDEF"

// jsonSafe[b] is true for ASCII bytes Jackson writes unescaped inside a string.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// appendJSONString appends s as a JSON string the way Jackson writes it:
// `"` and `\` escaped, \b \t \n \f \r short escapes, other control
// characters as \u00XX (upper-case hex), everything else (including `/`,
// DEL and non-ASCII) as UTF-8. Invalid UTF-8 becomes U+FFFD, since a Java
// string cannot hold it.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\r':
				dst = append(dst, '\\', 'r')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexUpper[b>>4], hexUpper[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendXMLText appends s escaped as XStream's PrettyPrintWriter does in its
// default XML_QUIRKS mode: & < > " ' as entities, \r as &#xd;, NUL as
// &#x0;, other ISO control characters and undefined BMP code points as
// &#x<lower-case hex>; (tab and newline are kept in text and escaped in
// attributes). Invalid UTF-8 becomes U+FFFD.
func appendXMLText(dst []byte, s string, attr bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			var esc string
			switch {
			case b == '&':
				esc = "&amp;"
			case b == '<':
				esc = "&lt;"
			case b == '>':
				esc = "&gt;"
			case b == '"':
				esc = "&quot;"
			case b == '\'':
				esc = "&apos;"
			case b == '\r':
				esc = "&#xd;"
			case b == 0:
				esc = "&#x0;"
			case (b == '\t' || b == '\n') && !attr:
			case b < 0x20 || b == 0x7f:
				dst = append(dst, s[start:i]...)
				dst = appendCharRef(dst, rune(b))
				i++
				start = i
				continue
			}
			if esc != "" {
				dst = append(dst, s[start:i]...)
				dst = append(dst, esc...)
				start = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			start = i + 1
		case r <= 0xffff && !xstreamPlain(r):
			dst = append(dst, s[start:i]...)
			dst = appendCharRef(dst, r)
			start = i + size
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// xstreamPlain mirrors Character.isDefined(c) && !Character.isISOControl(c)
// for a BMP rune. Supplementary runes are UTF-16 surrogate pairs in Java,
// which count as defined, so they are always written as they are.
func xstreamPlain(r rune) bool {
	if r <= 0x9f && (r < 0x20 || r >= 0x7f) {
		return false
	}
	return !unicode.Is(unassigned, r)
}

// unassigned is the Unicode category Cn (not Character.isDefined).
var unassigned = unicode.Categories["Cn"]

func appendCharRef(dst []byte, r rune) []byte {
	dst = append(dst, "&#x"...)
	dst = strconv.AppendInt(dst, int64(r), 16)
	return append(dst, ';')
}

// millis is t in epoch milliseconds, 0 for the zero time (Java's "unset").
func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMillis is the inverse of millis: 0 is the zero time.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// secs is d in whole seconds, as leaseInfo writes it.
func secs(d time.Duration) int64 { return int64(d / time.Second) }
