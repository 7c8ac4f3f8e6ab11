package compat

import (
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/goreka/goreka/registry"
)

// Codec is the Java server's codec for the full registry documents (GET
// /apps, /apps/{app}, /apps/delta, /vips, /svips), chosen there by
// eureka.server.json-codec-name and eureka.server.xml-codec-name. Compact
// documents and single-instance reads do not depend on it (captured:
// testdata/stock/eureka-2.0.4-jackson).
type Codec uint8

const (
	// Legacy is the default: LegacyJacksonJson for JSON, XStreamXml for XML.
	Legacy Codec = iota
	// Jackson is JacksonJson or JacksonXml: plain Jackson data binding of
	// InstanceInfo, whose shape differs from the legacy codec (see
	// appendInstanceJackson).
	Jackson
)

// ParseJSONCodec maps eureka.server.json-codec-name to a Codec: empty or
// LegacyJacksonJson is Legacy, JacksonJson is Jackson. The Java server's
// other names (XStreamJson, JacksonJsonMini) are not implemented and are an
// error, as is any unknown name.
func ParseJSONCodec(name string) (Codec, error) {
	switch name {
	case "", "LegacyJacksonJson":
		return Legacy, nil
	case "JacksonJson":
		return Jackson, nil
	}
	return Legacy, fmt.Errorf("unsupported JSON codec %q (goreka implements LegacyJacksonJson and JacksonJson)", name)
}

// ParseXMLCodec maps eureka.server.xml-codec-name to a Codec: empty or
// XStreamXml is Legacy, JacksonXml is Jackson; anything else (JacksonXmlMini
// included) is an error.
func ParseXMLCodec(name string) (Codec, error) {
	switch name {
	case "", "XStreamXml":
		return Legacy, nil
	case "JacksonXml":
		return Jackson, nil
	}
	return Legacy, fmt.Errorf("unsupported XML codec %q (goreka implements XStreamXml and JacksonXml)", name)
}

// Codecs selects the codec of each format; the zero value is the Java
// server's default.
type Codecs struct {
	JSON, XML Codec
}

func (c Codecs) of(f Format) Codec {
	if f == JSON {
		return c.JSON
	}
	return c.XML
}

// AppendApplications is the package's AppendApplications with c's codecs.
func (c Codecs) AppendApplications(dst []byte, f Format, compact bool, apps *registry.Applications) []byte {
	if compact || c.of(f) == Legacy {
		return AppendApplications(dst, f, compact, apps)
	}
	if apps == nil {
		apps = &registry.Applications{}
	}
	return appendApplicationsJackson(dst, f, apps, nil)
}

// WriteApplications is the package's WriteApplications with c's codecs.
func (c Codecs) WriteApplications(w io.Writer, f Format, compact bool, apps *registry.Applications) error {
	if compact || c.of(f) == Legacy {
		return WriteApplications(w, f, compact, apps)
	}
	if apps == nil {
		apps = &registry.Applications{}
	}
	fl := &flusher{w: w, limit: 32 << 10}
	buf := appendApplicationsJackson(make([]byte, 0, 48<<10), f, apps, fl)
	fl.limit = 0
	fl.flush(buf)
	return fl.err
}

// AppendApplication is the package's AppendApplication with c's codecs.
func (c Codecs) AppendApplication(dst []byte, f Format, compact bool, app *registry.Application) []byte {
	if compact || c.of(f) == Legacy {
		return AppendApplication(dst, f, compact, app)
	}
	if app == nil {
		app = &registry.Application{}
	}
	if f == JSON {
		dst = append(dst, `{"application":`...)
		dst = appendApplicationJackson(dst, f, app)
		return append(dst, '}')
	}
	return appendApplicationJackson(dst, f, app)
}

// appendApplicationsJackson writes the Jackson shape of a registry
// document: the applications first, then versions__delta and
// apps__hashcode, XML on one line.
func appendApplicationsJackson(dst []byte, f Format, apps *registry.Applications, fl *flusher) []byte {
	if f == JSON {
		dst = append(dst, `{"applications":{"application":[`...)
		for i := range apps.Apps {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendApplicationJackson(dst, f, &apps.Apps[i])
			dst = fl.flush(dst)
		}
		dst = append(dst, "],"...)
		dst = appendVersionHashJSON(dst, apps)
		return append(dst, "}}"...)
	}
	dst = append(dst, "<applications>"...)
	for i := range apps.Apps {
		dst = appendApplicationJackson(dst, f, &apps.Apps[i])
		dst = fl.flush(dst)
	}
	dst = append(dst, "<versions__delta>"...)
	dst = strconv.AppendInt(dst, apps.VersionDelta, 10)
	dst = append(dst, "</versions__delta>"...)
	dst = appendJacksonLeaf(dst, "apps__hashcode", apps.HashCode)
	return append(dst, "</applications>"...)
}

func appendApplicationJackson(dst []byte, f Format, app *registry.Application) []byte {
	if f == JSON {
		dst = append(dst, `{"name":`...)
		dst = appendJSONString(dst, app.Name)
		dst = append(dst, `,"instance":[`...)
	} else {
		dst = append(dst, "<application>"...)
		dst = appendJacksonLeaf(dst, "name", app.Name)
	}
	first := true
	for i := range app.Instances {
		if app.Instances[i].Instance == nil {
			continue
		}
		if f == JSON && !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendInstanceJackson(dst, f, &app.Instances[i])
	}
	if f == JSON {
		return append(dst, "]}"...)
	}
	return append(dst, "</application>"...)
}

// jacksonOut writes one instance in JSON or in Jackson XML; key names are
// bare, as in the XML elements.
type jacksonOut struct {
	f     Format
	dst   []byte
	first bool
}

// sep writes the comma before a JSON member but the first.
func (o *jacksonOut) sep() {
	if !o.first {
		o.dst = append(o.dst, ',')
	}
	o.first = false
}

func (o *jacksonOut) key(k string) {
	o.sep()
	o.dst = append(o.dst, '"')
	o.dst = append(o.dst, k...)
	o.dst = append(o.dst, `":`...)
}

func (o *jacksonOut) str(k, v string) {
	if o.f == JSON {
		o.key(k)
		o.dst = appendJSONString(o.dst, v)
		return
	}
	o.dst = appendJacksonLeaf(o.dst, k, v)
}

func (o *jacksonOut) optStr(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

// num writes a number (JSON) or its text (XML).
func (o *jacksonOut) num(k string, n int64) {
	if o.f == JSON {
		o.key(k)
		o.dst = strconv.AppendInt(o.dst, n, 10)
		return
	}
	o.dst = append(o.dst, '<')
	o.dst = append(o.dst, k...)
	o.dst = append(o.dst, '>')
	o.dst = strconv.AppendInt(o.dst, n, 10)
	o.dst = append(o.dst, "</"...)
	o.dst = append(o.dst, k...)
	o.dst = append(o.dst, '>')
}

func (o *jacksonOut) boolean(k string, b bool) {
	if o.f == JSON {
		o.key(k)
		o.dst = strconv.AppendBool(o.dst, b)
		return
	}
	o.dst = appendJacksonLeaf(o.dst, k, strconv.FormatBool(b))
}

func (o *jacksonOut) port(k string, p registry.Port) {
	if o.f == JSON {
		o.key(k)
		o.dst = appendPortJSON(o.dst, "", p)
		return
	}
	w := xmlWriter{buf: o.dst, flat: true}
	w.port(k, p)
	o.dst = w.buf
}

func (o *jacksonOut) open(k string) {
	if o.f == JSON {
		o.key(k)
		o.dst = append(o.dst, '{')
		o.first = true
		return
	}
	o.dst = append(o.dst, '<')
	o.dst = append(o.dst, k...)
	o.dst = append(o.dst, '>')
}

func (o *jacksonOut) close(k string) {
	if o.f == JSON {
		o.dst = append(o.dst, '}')
		o.first = false
		return
	}
	o.dst = append(o.dst, "</"...)
	o.dst = append(o.dst, k...)
	o.dst = append(o.dst, '>')
}

// appendInstanceJackson writes an instance as Jackson data binding of
// InstanceInfo does (captured with JacksonJson / JacksonXml): instanceId,
// app, appGroupName, ipAddr, sid (always, "na" when unset), the four URLs,
// vipAddress, secureVipAddress, countryId, dataCenterInfo, hostName,
// status, overriddenStatus (camel case in XML too), leaseInfo,
// isCoordinatingDiscoveryServer (a boolean), lastUpdatedTimestamp and
// lastDirtyTimestamp (numbers), actionType, asgName, port, securePort;
// metadata comes last in JSON and after isCoordinatingDiscoveryServer in
// XML, where an empty map is <metadata/>.
func appendInstanceJackson(dst []byte, f Format, v *registry.LeaseView) []byte {
	in, v := instanceOf(v)
	o := &jacksonOut{f: f, dst: dst, first: true}
	if f == JSON {
		o.dst = append(o.dst, '{')
	} else {
		o.dst = append(o.dst, "<instance>"...)
	}
	o.optStr("instanceId", in.InstanceID)
	o.str("app", in.App)
	o.optStr("appGroupName", in.AppGroupName)
	o.str("ipAddr", in.IPAddr)
	sid := in.SID
	if sid == "" {
		sid = "na"
	}
	o.str("sid", sid)
	o.optStr("homePageUrl", in.HomePageURL)
	o.optStr("statusPageUrl", in.StatusPageURL)
	o.optStr("healthCheckUrl", in.HealthCheckURL)
	o.optStr("secureHealthCheckUrl", in.SecureHealthCheckURL)
	o.optStr("vipAddress", in.VIPAddress)
	o.optStr("secureVipAddress", in.SecureVIPAddress)
	o.num("countryId", int64(in.CountryID))
	if f == JSON {
		// appendDataCenterJSON writes its own leading comma.
		o.dst = appendDataCenterJSON(o.dst, false, in.DataCenterInfo)
	} else {
		o.dst = appendDataCenterJacksonXML(o.dst, in.DataCenterInfo)
	}
	o.str("hostName", in.HostName)
	o.str("status", string(in.Status))
	o.str("overriddenStatus", string(in.OverriddenStatus))
	o.open("leaseInfo")
	o.num("renewalIntervalInSecs", secs(v.RenewalInterval))
	o.num("durationInSecs", secs(v.Duration))
	o.num("registrationTimestamp", millis(v.RegistrationTimestamp))
	o.num("lastRenewalTimestamp", millis(v.LastRenewalTimestamp))
	o.num("evictionTimestamp", millis(v.EvictionTimestamp))
	o.num("serviceUpTimestamp", millis(v.ServiceUpTimestamp))
	o.close("leaseInfo")
	o.boolean("isCoordinatingDiscoveryServer", in.IsCoordinatingDiscoveryServer)
	if f == XML {
		o.dst = appendMetadataJacksonXML(o.dst, in.Metadata)
	}
	o.num("lastUpdatedTimestamp", millis(in.LastUpdatedTimestamp))
	o.num("lastDirtyTimestamp", millis(in.LastDirtyTimestamp))
	o.optStr("actionType", string(in.ActionType))
	o.optStr("asgName", in.ASGName)
	o.port("port", in.Port)
	o.port("securePort", in.SecurePort)
	if f == JSON {
		o.dst = append(o.dst, `,"metadata":`...)
		o.dst = appendMetadataJSON(o.dst, in.Metadata, true)
		return append(o.dst, '}')
	}
	return append(o.dst, "</instance>"...)
}

func appendDataCenterJacksonXML(dst []byte, dc registry.DataCenterInfo) []byte {
	dst = append(dst, `<dataCenterInfo class="`...)
	dst = append(dst, dataCenterClass(dc.Name)...)
	dst = append(dst, `">`...)
	dst = appendJacksonLeaf(dst, "name", dc.Name)
	if dc.Name == registry.DataCenterAmazon {
		dst = appendMetadataJacksonXML(dst, dc.Metadata)
	}
	return append(dst, "</dataCenterInfo>"...)
}

// appendMetadataJacksonXML writes a map as Jackson XML does: one element
// per key named by the key itself, <metadata/> when empty. Jackson writes
// a key that is not an XML name ("$dollar", "1st") as it is, which no
// parser reads; goreka writes such a key with XStream's escape instead
// (xmlElementName), and leaves out the empty key.
func appendMetadataJacksonXML(dst []byte, md map[string]string) []byte {
	var buf [16]string
	keys := sortedKeys(buf[:], md)
	if !hasXMLKey(keys) {
		return append(dst, "<metadata/>"...)
	}
	dst = append(dst, "<metadata>"...)
	for _, k := range keys {
		if k == "" {
			continue
		}
		name := k
		if !validXMLName(k) {
			name, _ = xmlElementName(k)
		}
		dst = appendJacksonLeaf(dst, name, md[k])
	}
	return append(dst, "</metadata>"...)
}

func appendJacksonLeaf(dst []byte, name, text string) []byte {
	dst = append(dst, '<')
	dst = append(dst, name...)
	dst = append(dst, '>')
	dst = appendWoodstoxText(dst, text)
	dst = append(dst, "</"...)
	dst = append(dst, name...)
	return append(dst, '>')
}

// appendWoodstoxText escapes text content as Woodstox (Jackson XML's
// writer) does: & and < as entities, > only after "]]", \r as &#xd;
// (captured). Other characters XML 1.0 cannot hold (control characters but
// tab and newline) make Woodstox fail; goreka writes them as character
// references as XStream does. Invalid UTF-8 becomes U+FFFD.
func appendWoodstoxText(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\uFFFD"...)
				start = i + 1
			}
			i += size
			continue
		}
		var esc string
		switch {
		case b == '&':
			esc = "&amp;"
		case b == '<':
			esc = "&lt;"
		case b == '>' && i >= 2 && s[i-1] == ']' && s[i-2] == ']':
			esc = "&gt;"
		case b == '\r':
			esc = "&#xd;"
		case b < 0x20 && b != '\t' && b != '\n':
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
	}
	return append(dst, s[start:]...)
}
