package compat

// Format is a wire format: Eureka's legacy JSON or XStream XML.
type Format uint8

// The two formats a Eureka server speaks.
const (
	JSON Format = iota
	XML
)

// Content types of the two formats. The Java client only reads bodies whose
// charset is absent, UTF-8 or ISO-8859-1, so no charset parameter is added.
const (
	ContentTypeJSON = "application/json"
	ContentTypeXML  = "application/xml"
)

// String returns "json" or "xml".
func (f Format) String() string {
	if f == JSON {
		return "json"
	}
	return "xml"
}

// ContentType returns the media type of f.
func (f Format) ContentType() string {
	if f == JSON {
		return ContentTypeJSON
	}
	return ContentTypeXML
}

// FormatFromAccept picks the response format as the Java server does: JSON
// iff the Accept header contains "json" (any case), else XML. So "*/*" and a
// missing header mean XML.
func FormatFromAccept(accept string) Format {
	if containsFold(accept, "json") {
		return JSON
	}
	return XML
}

// CompactFromHeader reports whether an X-Eureka-Accept header asks for the
// compact format (it contains "compact", any case).
func CompactFromHeader(xEurekaAccept string) bool {
	return containsFold(xEurekaAccept, "compact")
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// ignoring ASCII case, without allocating.
func containsFold(s, sub string) bool {
	n := len(sub)
outer:
	for i := 0; i+n <= len(s); i++ {
		for j := range n {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				continue outer
			}
		}
		return true
	}
	return false
}
