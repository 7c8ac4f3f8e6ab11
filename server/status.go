package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// StatusInfo is the data of GET /eureka/status (Eureka's StatusInfo):
// general and application stats as ordered name/value pairs, and this
// server's own instance.
type StatusInfo struct {
	General     [][2]string
	Application [][2]string
	Instance    *registry.LeaseView
	// Healthy is set only when min-available-instances-for-peer-replication > -1.
	Healthy *bool
}

// ReplicaStats are the replica rows of /eureka/status and the dashboard's
// General Info, spelled as Eureka's StatusResource writes them: registered
// replicas joined by ", ", available and unavailable ones each followed by
// a comma (StatusUtil).
func ReplicaStats(registered, available, unavailable []string) [][2]string {
	trailing := func(urls []string) string {
		var b strings.Builder
		for _, u := range urls {
			b.WriteString(u)
			b.WriteByte(',')
		}
		return b.String()
	}
	return [][2]string{
		{"registered-replicas", strings.Join(registered, ", ")},
		{"available-replicas", trailing(available)},
		{"unavailable-replicas", trailing(unavailable)},
	}
}

// StatusSource supplies StatusInfo.
type StatusSource interface{ StatusInfo() StatusInfo }

func (s *Server) getStatus(c *gin.Context) {
	if s.status == nil {
		c.Status(http.StatusNotFound)
		return
	}
	st := s.status.StatusInfo()
	f := compat.FormatFromAccept(c.GetHeader("Accept"))
	var b bytes.Buffer
	if f == compat.JSON {
		b.WriteString(`{"generalStats":`)
		writeJSONPairs(&b, st.General)
		b.WriteString(`,"applicationStats":`)
		writeJSONPairs(&b, st.Application)
		if st.Instance != nil {
			b.WriteString(`,"instanceInfo":`)
			b.Write(compat.AppendInstanceBody(nil, st.Instance))
		}
		if st.Healthy != nil {
			b.WriteString(`,"isHealthy":` + strconv.FormatBool(*st.Healthy))
		}
		b.WriteString("}")
	} else {
		b.WriteString("<status>\n")
		writeXMLPairs(&b, "generalStats", st.General)
		writeXMLPairs(&b, "applicationStats", st.Application)
		if st.Instance != nil {
			inst := compat.AppendInstance(nil, compat.XML, st.Instance)
			for _, line := range bytes.Split(bytes.TrimRight(inst, "\n"), []byte("\n")) {
				b.WriteString("  ")
				b.Write(line)
				b.WriteString("\n")
			}
		}
		if st.Healthy != nil {
			b.WriteString("  <isHealthy>" + strconv.FormatBool(*st.Healthy) + "</isHealthy>\n")
		}
		b.WriteString("</status>")
	}
	c.Data(http.StatusOK, f.ContentType(), b.Bytes())
}

func writeJSONPairs(b *bytes.Buffer, pairs [][2]string) {
	b.WriteByte('{')
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p[0])
		v, _ := json.Marshal(p[1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
}

func writeXMLPairs(b *bytes.Buffer, name string, pairs [][2]string) {
	b.WriteString("  <" + name + ">\n")
	for _, p := range pairs {
		b.WriteString("    <entry>\n      <string>")
		xmlEscape(b, p[0])
		b.WriteString("</string>\n      <string>")
		xmlEscape(b, p[1])
		b.WriteString("</string>\n    </entry>\n")
	}
	b.WriteString("  </" + name + ">\n")
}
