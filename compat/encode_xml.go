package compat

import (
	"strconv"

	"github.com/goreka/goreka/registry"
)

// xmlWriter writes XStream's pretty-printed XML: two-space indentation, a
// newline before every element except the root, no XML declaration and no
// trailing newline; or, when flat, the same elements on one line (the
// compact documents, which the Java server writes with Jackson XML). Names
// given to it are already XML-safe.
type xmlWriter struct {
	buf   []byte
	depth int
	flat  bool
}

func (w *xmlWriter) indent() {
	if w.flat {
		return
	}
	if w.depth > 0 {
		w.buf = append(w.buf, '\n')
	}
	for range w.depth {
		w.buf = append(w.buf, ' ', ' ')
	}
}

func (w *xmlWriter) open(name string) {
	w.indent()
	w.buf = append(w.buf, '<')
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '>')
	w.depth++
}

func (w *xmlWriter) openClass(name, class string) {
	w.indent()
	w.buf = append(w.buf, '<')
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, ` class="`...)
	w.buf = appendXMLText(w.buf, class, true)
	w.buf = append(w.buf, `">`...)
	w.depth++
}

func (w *xmlWriter) close(name string) {
	w.depth--
	if !w.flat {
		w.buf = append(w.buf, '\n')
		for range w.depth {
			w.buf = append(w.buf, ' ', ' ')
		}
	}
	w.buf = append(w.buf, "</"...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '>')
}

// empty writes <name/> or <name class="..."/>.
func (w *xmlWriter) empty(name, class string) {
	w.indent()
	w.buf = append(w.buf, '<')
	w.buf = append(w.buf, name...)
	if class != "" {
		w.buf = append(w.buf, ` class="`...)
		w.buf = appendXMLText(w.buf, class, true)
		w.buf = append(w.buf, '"')
	}
	w.buf = append(w.buf, "/>"...)
}

func (w *xmlWriter) leaf(name, text string) {
	w.indent()
	w.buf = append(w.buf, '<')
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '>')
	w.buf = appendXMLText(w.buf, text, false)
	w.buf = append(w.buf, "</"...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '>')
}

func (w *xmlWriter) optLeaf(name, text string) {
	if text != "" {
		w.leaf(name, text)
	}
}

func (w *xmlWriter) intLeaf(name string, n int64) {
	w.indent()
	w.buf = append(w.buf, '<')
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '>')
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.buf = append(w.buf, "</"...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '>')
}

func (w *xmlWriter) port(name string, p registry.Port) {
	w.indent()
	w.buf = append(w.buf, '<')
	w.buf = append(w.buf, name...)
	if p.Enabled {
		w.buf = append(w.buf, ` enabled="true">`...)
	} else {
		w.buf = append(w.buf, ` enabled="false">`...)
	}
	w.buf = strconv.AppendInt(w.buf, int64(p.Number), 10)
	w.buf = append(w.buf, "</"...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '>')
}

func appendApplicationsXML(dst []byte, compact bool, apps *registry.Applications, fl *flusher) []byte {
	w := xmlWriter{buf: dst, flat: compact}
	w.open("applications")
	if !compact {
		w.intLeaf("versions__delta", apps.VersionDelta)
		w.leaf("apps__hashcode", apps.HashCode)
	}
	for i := range apps.Apps {
		w.application(compact, &apps.Apps[i])
		w.buf = fl.flush(w.buf)
	}
	if compact {
		w.intLeaf("versions__delta", apps.VersionDelta)
		w.leaf("apps__hashcode", apps.HashCode)
	}
	w.close("applications")
	return w.buf
}

func (w *xmlWriter) application(compact bool, app *registry.Application) {
	w.open("application")
	w.leaf("name", app.Name)
	for i := range app.Instances {
		if app.Instances[i].Instance != nil {
			w.instance(compact, &app.Instances[i])
		}
	}
	w.close("application")
}

func (w *xmlWriter) instance(compact bool, v *registry.LeaseView) {
	w.instanceStatus(compact, v, "")
}

// instanceStatus writes one instance; a non-empty status is written in
// place of the instance's own (the single-instance document's V1 rule).
func (w *xmlWriter) instanceStatus(compact bool, v *registry.LeaseView, status registry.Status) {
	in, v := instanceOf(v)
	if status == "" {
		status = in.Status
	}
	w.open("instance")
	w.optLeaf("instanceId", in.InstanceID)
	if compact {
		w.leaf("app", in.App)
		w.leaf("ipAddr", in.IPAddr)
		w.optLeaf("vipAddress", in.VIPAddress)
		w.optLeaf("secureVipAddress", in.SecureVIPAddress)
		w.dataCenter(true, in.DataCenterInfo)
		w.leaf("hostName", in.HostName)
		w.leaf("status", string(status))
		w.intLeaf("lastUpdatedTimestamp", millis(in.LastUpdatedTimestamp))
		w.optLeaf("actionType", string(in.ActionType))
		w.optLeaf("asgName", in.ASGName)
		w.port("port", in.Port)
		w.port("securePort", in.SecurePort)
		w.close("instance")
		return
	}
	w.leaf("hostName", in.HostName)
	w.leaf("app", in.App)
	w.leaf("ipAddr", in.IPAddr)
	if writtenSID(in.SID) {
		w.leaf("sid", in.SID)
	}
	w.leaf("status", string(status))
	w.leaf("overriddenstatus", string(in.OverriddenStatus))
	w.port("port", in.Port)
	w.port("securePort", in.SecurePort)
	w.intLeaf("countryId", int64(in.CountryID))
	w.dataCenter(false, in.DataCenterInfo)
	w.open("leaseInfo")
	w.intLeaf("renewalIntervalInSecs", secs(v.RenewalInterval))
	w.intLeaf("durationInSecs", secs(v.Duration))
	w.intLeaf("registrationTimestamp", millis(v.RegistrationTimestamp))
	w.intLeaf("lastRenewalTimestamp", millis(v.LastRenewalTimestamp))
	w.intLeaf("evictionTimestamp", millis(v.EvictionTimestamp))
	w.intLeaf("serviceUpTimestamp", millis(v.ServiceUpTimestamp))
	w.close("leaseInfo")
	w.metadata(in.Metadata, true)
	w.optLeaf("appGroupName", in.AppGroupName)
	w.optLeaf("homePageUrl", in.HomePageURL)
	w.optLeaf("statusPageUrl", in.StatusPageURL)
	w.optLeaf("healthCheckUrl", in.HealthCheckURL)
	w.optLeaf("secureHealthCheckUrl", in.SecureHealthCheckURL)
	w.optLeaf("vipAddress", in.VIPAddress)
	w.optLeaf("secureVipAddress", in.SecureVIPAddress)
	w.leaf("isCoordinatingDiscoveryServer", strconv.FormatBool(in.IsCoordinatingDiscoveryServer))
	w.intLeaf("lastUpdatedTimestamp", millis(in.LastUpdatedTimestamp))
	w.intLeaf("lastDirtyTimestamp", millis(in.LastDirtyTimestamp))
	w.optLeaf("actionType", string(in.ActionType))
	w.optLeaf("asgName", in.ASGName)
	w.close("instance")
}

func (w *xmlWriter) dataCenter(compact bool, dc registry.DataCenterInfo) {
	w.openClass("dataCenterInfo", dataCenterClass(dc.Name))
	w.leaf("name", dc.Name)
	if dc.Name == registry.DataCenterAmazon {
		md := dc.Metadata
		if compact {
			md = filterCompactAmazon(md)
		}
		w.metadata(md, false)
	}
	w.close("dataCenterInfo")
}

// hasXMLKey reports whether keys hold one an XML writer can write: the
// empty key cannot be an element name and is left out.
func hasXMLKey(keys []string) bool {
	for _, k := range keys {
		if k != "" {
			return true
		}
	}
	return false
}

// metadata writes <metadata> with one element per key, sorted. Keys are
// encoded by xmlElementName; the empty key cannot be written and is left out.
func (w *xmlWriter) metadata(md map[string]string, emptyMapClass bool) {
	var buf [16]string
	keys := sortedKeys(buf[:], md)
	if !hasXMLKey(keys) {
		if emptyMapClass {
			w.empty("metadata", classEmptyMap)
		} else {
			w.empty("metadata", "")
		}
		return
	}
	w.open("metadata")
	for _, k := range keys {
		name, ok := xmlElementName(k)
		if !ok {
			continue
		}
		w.leaf(name, md[k])
	}
	w.close("metadata")
}
