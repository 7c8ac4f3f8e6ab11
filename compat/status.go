package compat

import (
	"strconv"

	"github.com/goreka/goreka/registry"
)

// Status is the content of GET /eureka/status (Eureka's StatusResource
// writing a StatusInfo): the general and the application stats as ordered
// name/value pairs, this server's own instance, and isHealthy.
type Status struct {
	General     [][2]string
	Application [][2]string
	Instance    *registry.LeaseView // nil: no instanceInfo
	Healthy     *bool               // nil: no isHealthy
}

// AppendStatus appends the status document as the Java server writes it:
// JSON {"generalStats":{...},"applicationStats":{...},"instanceInfo":{...},
// "isHealthy":b} on one line, or XStream XML (<status>, each map as
// <entry><string>name</string><string>value</string></entry>, the instance
// as in the registry documents). Names and values are escaped as every
// other string of the wire formats (Jackson's and XStream's rules).
func AppendStatus(dst []byte, f Format, st *Status) []byte {
	if f == JSON {
		dst = append(dst, `{"generalStats":`...)
		dst = appendJSONPairs(dst, st.General)
		dst = append(dst, `,"applicationStats":`...)
		dst = appendJSONPairs(dst, st.Application)
		if st.Instance != nil {
			dst = append(dst, `,"instanceInfo":`...)
			dst = AppendInstanceBody(dst, st.Instance)
		}
		if st.Healthy != nil {
			dst = append(dst, `,"isHealthy":`...)
			dst = strconv.AppendBool(dst, *st.Healthy)
		}
		return append(dst, '}')
	}
	w := xmlWriter{buf: dst}
	w.open("status")
	w.xmlPairs("generalStats", st.General)
	w.xmlPairs("applicationStats", st.Application)
	if st.Instance != nil {
		w.instance(false, st.Instance)
	}
	if st.Healthy != nil {
		w.leaf("isHealthy", strconv.FormatBool(*st.Healthy))
	}
	w.close("status")
	return w.buf
}

func appendJSONPairs(dst []byte, pairs [][2]string) []byte {
	dst = append(dst, '{')
	for i, p := range pairs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, p[0])
		dst = append(dst, ':')
		dst = appendJSONString(dst, p[1])
	}
	return append(dst, '}')
}

func (w *xmlWriter) xmlPairs(name string, pairs [][2]string) {
	w.open(name)
	for _, p := range pairs {
		w.open("entry")
		w.leaf("string", p[0])
		w.leaf("string", p[1])
		w.close("entry")
	}
	w.close(name)
}
