package compat

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
)

// oldStatus is how server/status.go wrote /eureka/status before compat did:
// json.Marshal for the pairs, < > & escaped in XML, the instance document
// indented line by line. For ordinary names and values AppendStatus must
// write the same bytes.
func oldStatus(f Format, st *Status) []byte {
	var b bytes.Buffer
	jsonPairs := func(pairs [][2]string) {
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
	esc := strings.NewReplacer("<", "&lt;", ">", "&gt;", "&", "&amp;")
	xmlPairs := func(name string, pairs [][2]string) {
		b.WriteString("  <" + name + ">\n")
		for _, p := range pairs {
			b.WriteString("    <entry>\n      <string>" + esc.Replace(p[0]) + "</string>\n      <string>" + esc.Replace(p[1]) + "</string>\n    </entry>\n")
		}
		b.WriteString("  </" + name + ">\n")
	}
	if f == JSON {
		b.WriteString(`{"generalStats":`)
		jsonPairs(st.General)
		b.WriteString(`,"applicationStats":`)
		jsonPairs(st.Application)
		if st.Instance != nil {
			b.WriteString(`,"instanceInfo":`)
			b.Write(AppendInstanceBody(nil, st.Instance))
		}
		if st.Healthy != nil {
			b.WriteString(`,"isHealthy":` + strconv.FormatBool(*st.Healthy))
		}
		b.WriteString("}")
		return b.Bytes()
	}
	b.WriteString("<status>\n")
	xmlPairs("generalStats", st.General)
	xmlPairs("applicationStats", st.Application)
	if st.Instance != nil {
		for _, line := range bytes.Split(bytes.TrimRight(AppendInstance(nil, XML, st.Instance), "\n"), []byte("\n")) {
			b.WriteString("  ")
			b.Write(line)
			b.WriteString("\n")
		}
	}
	if st.Healthy != nil {
		b.WriteString("  <isHealthy>" + strconv.FormatBool(*st.Healthy) + "</isHealthy>\n")
	}
	b.WriteString("</status>")
	return b.Bytes()
}

func TestAppendStatusAsBefore(t *testing.T) {
	healthy := false
	in := &registry.Instance{InstanceID: "peer1:eureka-server:8761", HostName: "peer1", App: "EUREKA-SERVER", IPAddr: "10.0.0.1",
		Status: registry.StatusUp, Port: registry.Port{Number: 8761, Enabled: true}, VIPAddress: "eureka-server",
		Metadata:           map[string]string{"management.port": "8761", "zone": "eu-1a"},
		DataCenterInfo:     registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		LastDirtyTimestamp: time.UnixMilli(1_764_500_000_000), LastUpdatedTimestamp: time.UnixMilli(1_764_500_000_100)}
	v := &registry.LeaseView{Instance: in, RenewalInterval: 30 * time.Second, Duration: 90 * time.Second,
		RegistrationTimestamp: time.UnixMilli(1_764_500_000_000)}
	general := [][2]string{{"environment", "test"}, {"num-of-cpus", "2"}, {"total-avail-memory", "3957mb"},
		{"current-memory-usage", "123mb (3%)"}, {"server-uptime", "00:05"}}
	application := [][2]string{{"registered-replicas", "http://peer2:8762/eureka/, http://peer3:8763/eureka/"},
		{"available-replicas", "http://peer2:8762/eureka/,"}, {"unavailable-replicas", ""}}
	for _, st := range []*Status{
		{General: general, Application: application},
		{General: general, Application: application, Instance: v, Healthy: &healthy},
		{},
	} {
		for _, f := range []Format{JSON, XML} {
			if got, want := AppendStatus(nil, f, st), oldStatus(f, st); !bytes.Equal(got, want) {
				t.Errorf("format %v:\n got %s\nwant %s", f, got, want)
			}
		}
	}
}

// TestAppendStatusEscapes: a name or value that needs escaping is written
// as Jackson and XStream write it (the old encoder's json.Marshal wrote
// \u003c for < and kept ' and " raw in XML, unlike the Java server).
func TestAppendStatusEscapes(t *testing.T) {
	odd := "a\"b\\c<d>&e'f\x01g\th\xffi"
	st := &Status{General: [][2]string{{"k<&>", odd}}}
	wantJSON := `{"generalStats":{"k<&>":"a\"b\\c<d>&e'f\u0001g\th` + "\uFFFD" + `i"},"applicationStats":{}}`
	if got := AppendStatus(nil, JSON, st); string(got) != wantJSON {
		t.Errorf("JSON:\n got %s\nwant %s", got, wantJSON)
	}
	if !json.Valid([]byte(wantJSON)) {
		t.Error("want is not JSON")
	}
	wantXML := "<status>\n  <generalStats>\n    <entry>\n      <string>k&lt;&amp;&gt;</string>\n" +
		"      <string>a&quot;b\\c&lt;d&gt;&amp;e&apos;f&#x1;g\th\uFFFDi</string>\n    </entry>\n  </generalStats>\n" +
		"  <applicationStats>\n  </applicationStats>\n</status>"
	if got := AppendStatus(nil, XML, st); string(got) != wantXML {
		t.Errorf("XML:\n got %s\nwant %s", got, wantXML)
	}
}
