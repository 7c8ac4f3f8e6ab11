package compat

import (
	"io"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/goreka/goreka/registry"
)

// Java class names written as type ids.
const (
	classDefaultDataCenter = "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo"
	classAmazonInfo        = "com.netflix.appinfo.AmazonInfo"
	classEmptyMap          = "java.util.Collections$EmptyMap"
)

// compactAmazonKeys are the Amazon metadata keys the compact format keeps
// (MiniInstanceInfoMixIn).
var compactAmazonKeys = []string{"instance-id", "public-ipv4", "public-hostname", "local-ipv4", "availability-zone"}

// AppendApplications appends the document of apps (the body of GET /apps,
// /apps/delta, /vips/{vip}) in format f, full or compact. A nil apps is
// written as an empty document.
func AppendApplications(dst []byte, f Format, compact bool, apps *registry.Applications) []byte {
	if apps == nil {
		apps = &registry.Applications{}
	}
	if f == JSON {
		return appendApplicationsJSON(dst, compact, apps, nil)
	}
	return appendApplicationsXML(dst, compact, apps, nil)
}

// WriteApplications writes to w exactly the bytes AppendApplications
// appends, in pieces of about 32 KiB cut between applications, so that a
// large registry (about 90 MB of JSON at 100k instances) is never held
// whole: the response cache gzips it as it comes.
func WriteApplications(w io.Writer, f Format, compact bool, apps *registry.Applications) error {
	if apps == nil {
		apps = &registry.Applications{}
	}
	fl := &flusher{w: w, limit: 32 << 10}
	buf := make([]byte, 0, 48<<10)
	if f == JSON {
		buf = appendApplicationsJSON(buf, compact, apps, fl)
	} else {
		buf = appendApplicationsXML(buf, compact, apps, fl)
	}
	fl.limit = 0
	fl.flush(buf)
	return fl.err
}

// flusher hands a buffer's bytes to a writer once it holds limit bytes; the
// first write error sticks and later writes are skipped.
type flusher struct {
	w     io.Writer
	limit int
	err   error
}

// flush writes buf out if it is large enough (or always, when fl.limit is
// 0) and returns the buffer to keep appending to. A nil fl keeps buf.
func (fl *flusher) flush(buf []byte) []byte {
	if fl == nil || len(buf) < fl.limit {
		return buf
	}
	if fl.err == nil {
		_, fl.err = fl.w.Write(buf)
	}
	return buf[:0]
}

// AppendApplication appends the document of one application (GET
// /apps/{app}) in format f, full or compact, with root "application".
func AppendApplication(dst []byte, f Format, compact bool, app *registry.Application) []byte {
	if app == nil {
		app = &registry.Application{}
	}
	if f == JSON {
		dst = append(dst, `{"application":`...)
		dst = appendApplicationJSON(dst, compact, app)
		return append(dst, '}')
	}
	w := xmlWriter{buf: dst, flat: compact}
	w.application(compact, app)
	return w.buf
}

// AppendInstance appends the document of one instance with root
// "instance", always in the full format, as a client sends it (register
// bodies, replication). The single-instance reads answer
// AppendInstanceResponse, which differs in two details.
func AppendInstance(dst []byte, f Format, v *registry.LeaseView) []byte {
	if f == JSON {
		dst = append(dst, `{"instance":`...)
		dst = AppendInstanceBody(dst, v)
		return append(dst, '}')
	}
	var w xmlWriter
	w.buf = dst
	w.instance(false, v)
	return w.buf
}

// AppendInstanceResponse appends the answer of the single-instance reads
// (GET /apps/{app}/{id}, /instances/{id}) exactly as the Java server writes
// it, which is not quite AppendInstance (captured in
// testdata/stock/*/instance-*):
//
//   - XML goes through eureka-core's V1AwareInstanceInfoConverter with no
//     request version on these endpoints, so a status other than UP, DOWN or
//     STARTING (OUT_OF_SERVICE, UNKNOWN) is written as DOWN; the
//     overriddenstatus element keeps the real value.
//   - JSON is written by Jackson's UTF-8 generator straight to the
//     response, which writes a character outside the BMP as its two
//     surrogates (\uD83D\uDE42); the registry documents are written through a
//     Java string and keep such characters as UTF-8.
//
// X-Eureka-Accept: compact is ignored there, as by the Java server.
func AppendInstanceResponse(dst []byte, f Format, v *registry.LeaseView) []byte {
	if f == JSON {
		start := len(dst)
		dst = AppendInstance(dst, JSON, v)
		return escapeSupplementary(dst, start)
	}
	in, _ := instanceOf(v)
	status := in.Status
	switch status {
	case registry.StatusUp, registry.StatusDown, registry.StatusStarting:
	default:
		status = registry.StatusDown
	}
	w := xmlWriter{buf: dst}
	w.instanceStatus(false, v, status)
	return w.buf
}

// escapeSupplementary rewrites every 4-byte UTF-8 sequence in b[from:] as
// Jackson's UTF8JsonGenerator writes it: two \uXXXX escapes of its UTF-16
// surrogates, upper-case hex. Such sequences only occur inside JSON strings.
func escapeSupplementary(b []byte, from int) []byte {
	i := from
	for i < len(b) && b[i] < 0xF0 {
		i++
	}
	if i == len(b) {
		return b
	}
	out := append([]byte(nil), b[:i]...)
	for i < len(b) {
		c := b[i]
		if c < 0xF0 {
			out = append(out, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if size != 4 {
			out = append(out, c)
			i++
			continue
		}
		hi, lo := utf16.EncodeRune(r)
		for _, u := range [2]rune{hi, lo} {
			out = append(out, '\\', 'u', hexUpper[u>>12&0xf], hexUpper[u>>8&0xf], hexUpper[u>>4&0xf], hexUpper[u&0xf])
		}
		i += size
	}
	return out
}

// AppendInstanceBody appends the full JSON instance object without the
// root wrapper, as embedded in replication batches. A nil v or a nil
// v.Instance is written as an empty instance.
func AppendInstanceBody(dst []byte, v *registry.LeaseView) []byte {
	return appendInstanceJSON(dst, false, v)
}

func appendApplicationsJSON(dst []byte, compact bool, apps *registry.Applications, fl *flusher) []byte {
	dst = append(dst, `{"applications":{`...)
	if !compact {
		dst = appendVersionHashJSON(dst, apps)
		dst = append(dst, ',')
	}
	dst = append(dst, `"application":[`...)
	for i := range apps.Apps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendApplicationJSON(dst, compact, &apps.Apps[i])
		dst = fl.flush(dst)
	}
	dst = append(dst, ']')
	if compact {
		dst = append(dst, ',')
		dst = appendVersionHashJSON(dst, apps)
	}
	return append(dst, "}}"...)
}

func appendVersionHashJSON(dst []byte, apps *registry.Applications) []byte {
	dst = append(dst, `"versions__delta":"`...)
	dst = strconv.AppendInt(dst, apps.VersionDelta, 10)
	dst = append(dst, `","apps__hashcode":`...)
	return appendJSONString(dst, apps.HashCode)
}

func appendApplicationJSON(dst []byte, compact bool, app *registry.Application) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendJSONString(dst, app.Name)
	dst = append(dst, `,"instance":[`...)
	first := true
	for i := range app.Instances {
		if app.Instances[i].Instance == nil {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendInstanceJSON(dst, compact, &app.Instances[i])
	}
	return append(dst, "]}"...)
}

var emptyInstance registry.Instance

func instanceOf(v *registry.LeaseView) (*registry.Instance, *registry.LeaseView) {
	if v == nil {
		v = &registry.LeaseView{}
	}
	if v.Instance == nil {
		return &emptyInstance, v
	}
	return v.Instance, v
}

// writtenSID reports whether the sid is written (not empty, "na" or "unknown").
func writtenSID(sid string) bool { return sid != "" && sid != "na" && sid != "unknown" }

func dataCenterClass(name string) string {
	if name == registry.DataCenterAmazon {
		return classAmazonInfo
	}
	return classDefaultDataCenter
}

func appendKeyString(dst []byte, key, val string) []byte {
	dst = append(dst, key...)
	return appendJSONString(dst, val)
}

func appendOptKeyString(dst []byte, key, val string) []byte {
	if val == "" {
		return dst
	}
	return appendKeyString(dst, key, val)
}

func appendPortJSON(dst []byte, key string, p registry.Port) []byte {
	dst = append(dst, key...)
	dst = append(dst, `{"$":`...)
	dst = strconv.AppendInt(dst, int64(p.Number), 10)
	if p.Enabled {
		return append(dst, `,"@enabled":"true"}`...)
	}
	return append(dst, `,"@enabled":"false"}`...)
}

func appendInstanceJSON(dst []byte, compact bool, v *registry.LeaseView) []byte {
	in, v := instanceOf(v)
	dst = append(dst, '{')
	if in.InstanceID != "" {
		dst = appendKeyString(dst, `"instanceId":`, in.InstanceID)
		dst = append(dst, ',')
	}
	if compact {
		dst = appendKeyString(dst, `"app":`, in.App)
		dst = appendKeyString(dst, `,"ipAddr":`, in.IPAddr)
		dst = appendOptKeyString(dst, `,"vipAddress":`, in.VIPAddress)
		dst = appendOptKeyString(dst, `,"secureVipAddress":`, in.SecureVIPAddress)
		dst = appendDataCenterJSON(dst, true, in.DataCenterInfo)
		dst = appendKeyString(dst, `,"hostName":`, in.HostName)
		dst = appendKeyString(dst, `,"status":`, string(in.Status))
		dst = append(dst, `,"lastUpdatedTimestamp":`...)
		dst = strconv.AppendInt(dst, millis(in.LastUpdatedTimestamp), 10)
		dst = appendOptKeyString(dst, `,"actionType":`, string(in.ActionType))
		dst = appendOptKeyString(dst, `,"asgName":`, in.ASGName)
		dst = appendPortJSON(dst, `,"port":`, in.Port)
		dst = appendPortJSON(dst, `,"securePort":`, in.SecurePort)
		return append(dst, '}')
	}
	dst = appendKeyString(dst, `"hostName":`, in.HostName)
	dst = appendKeyString(dst, `,"app":`, in.App)
	dst = appendKeyString(dst, `,"ipAddr":`, in.IPAddr)
	if writtenSID(in.SID) {
		dst = appendKeyString(dst, `,"sid":`, in.SID)
	}
	dst = appendKeyString(dst, `,"status":`, string(in.Status))
	dst = appendKeyString(dst, `,"overriddenStatus":`, string(in.OverriddenStatus))
	dst = appendPortJSON(dst, `,"port":`, in.Port)
	dst = appendPortJSON(dst, `,"securePort":`, in.SecurePort)
	dst = append(dst, `,"countryId":`...)
	dst = strconv.AppendInt(dst, int64(in.CountryID), 10)
	dst = appendDataCenterJSON(dst, false, in.DataCenterInfo)
	dst = append(dst, `,"leaseInfo":{"renewalIntervalInSecs":`...)
	dst = strconv.AppendInt(dst, secs(v.RenewalInterval), 10)
	dst = append(dst, `,"durationInSecs":`...)
	dst = strconv.AppendInt(dst, secs(v.Duration), 10)
	dst = append(dst, `,"registrationTimestamp":`...)
	dst = strconv.AppendInt(dst, millis(v.RegistrationTimestamp), 10)
	dst = append(dst, `,"lastRenewalTimestamp":`...)
	dst = strconv.AppendInt(dst, millis(v.LastRenewalTimestamp), 10)
	dst = append(dst, `,"evictionTimestamp":`...)
	dst = strconv.AppendInt(dst, millis(v.EvictionTimestamp), 10)
	dst = append(dst, `,"serviceUpTimestamp":`...)
	dst = strconv.AppendInt(dst, millis(v.ServiceUpTimestamp), 10)
	dst = append(dst, `},"metadata":`...)
	dst = appendMetadataJSON(dst, in.Metadata, true)
	dst = appendOptKeyString(dst, `,"appGroupName":`, in.AppGroupName)
	dst = appendOptKeyString(dst, `,"homePageUrl":`, in.HomePageURL)
	dst = appendOptKeyString(dst, `,"statusPageUrl":`, in.StatusPageURL)
	dst = appendOptKeyString(dst, `,"healthCheckUrl":`, in.HealthCheckURL)
	dst = appendOptKeyString(dst, `,"secureHealthCheckUrl":`, in.SecureHealthCheckURL)
	dst = appendOptKeyString(dst, `,"vipAddress":`, in.VIPAddress)
	dst = appendOptKeyString(dst, `,"secureVipAddress":`, in.SecureVIPAddress)
	if in.IsCoordinatingDiscoveryServer {
		dst = append(dst, `,"isCoordinatingDiscoveryServer":"true"`...)
	} else {
		dst = append(dst, `,"isCoordinatingDiscoveryServer":"false"`...)
	}
	dst = append(dst, `,"lastUpdatedTimestamp":"`...)
	dst = strconv.AppendInt(dst, millis(in.LastUpdatedTimestamp), 10)
	dst = append(dst, `","lastDirtyTimestamp":"`...)
	dst = strconv.AppendInt(dst, millis(in.LastDirtyTimestamp), 10)
	dst = append(dst, '"')
	dst = appendOptKeyString(dst, `,"actionType":`, string(in.ActionType))
	dst = appendOptKeyString(dst, `,"asgName":`, in.ASGName)
	return append(dst, '}')
}

func appendDataCenterJSON(dst []byte, compact bool, dc registry.DataCenterInfo) []byte {
	dst = append(dst, `,"dataCenterInfo":{"@class":"`...)
	dst = append(dst, dataCenterClass(dc.Name)...)
	dst = appendKeyString(dst, `","name":`, dc.Name)
	if dc.Name == registry.DataCenterAmazon {
		dst = append(dst, `,"metadata":`...)
		md := dc.Metadata
		if compact {
			md = filterCompactAmazon(md)
		}
		dst = appendMetadataJSON(dst, md, false)
	}
	return append(dst, '}')
}

func filterCompactAmazon(md map[string]string) map[string]string {
	out := make(map[string]string, len(compactAmazonKeys))
	for _, k := range compactAmazonKeys {
		if v, ok := md[k]; ok {
			out[k] = v
		}
	}
	return out
}

// sortedKeys returns the keys of md in byte order, leaving out "@class"
// (a type marker, never a real entry). buf is reused when large enough.
func sortedKeys(buf []string, md map[string]string) []string {
	keys := buf[:0]
	for k := range md {
		if k != "@class" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func appendMetadataJSON(dst []byte, md map[string]string, emptyMapClass bool) []byte {
	var buf [16]string
	keys := sortedKeys(buf[:], md)
	if len(keys) == 0 {
		if emptyMapClass {
			return append(dst, `{"@class":"`+classEmptyMap+`"}`...)
		}
		return append(dst, "{}"...)
	}
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendJSONString(dst, md[k])
	}
	return append(dst, '}')
}
