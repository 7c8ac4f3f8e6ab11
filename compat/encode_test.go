package compat

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixedNow is the fake clock all fixtures are built from.
var fixedNow = time.UnixMilli(1700000000000).UTC()

func at(ms int64) time.Time { return fixedNow.Add(time.Duration(ms) * time.Millisecond) }

// fixtureApps is a small registry at fixedNow covering every encoding rule:
// optional fields present and absent, sid, Amazon data center, empty and
// tricky metadata, text that needs escaping in both formats.
func fixtureApps() *registry.Applications { return fixture(false) }

// xmlFixtureApps is fixtureApps without the control characters that
// XStream escapes as character references XML 1.0 parsers reject.
func xmlFixtureApps() *registry.Applications { return fixture(true) }

func fixture(xmlSafe bool) *registry.Applications {
	ctl := "ctl\x01\x1f del\x7f é 日本 🙂"
	if xmlSafe {
		ctl = "ctl del\x7f é 日本 🙂"
	}
	a := &registry.Instance{
		InstanceID: "host-a:order-service:8080", HostName: "host-a", App: "ORDER-SERVICE",
		IPAddr: "10.0.0.11", Status: registry.StatusUp, OverriddenStatus: registry.StatusUnknown,
		Port: registry.Port{Number: 8080, Enabled: true}, SecurePort: registry.Port{Number: 443},
		CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		LeaseInfo:   registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second},
		Metadata:    map[string]string{"management.port": "8080", "zone": "z1"},
		HomePageURL: "http://host-a:8080/", StatusPageURL: "http://host-a:8080/actuator/info",
		HealthCheckURL: "http://host-a:8080/actuator/health", VIPAddress: "order-service",
		SecureVIPAddress: "order-service", LastUpdatedTimestamp: at(120), LastDirtyTimestamp: at(-1000),
		ActionType: registry.ActionAdded,
	}
	b := &registry.Instance{
		HostName: "host-b", App: "ORDER-SERVICE", AppGroupName: "SHOP", IPAddr: "10.0.0.12",
		SID: "sid-7", Status: registry.StatusOutOfService, OverriddenStatus: registry.StatusOutOfService,
		Port: registry.Port{Number: 8081, Enabled: true}, SecurePort: registry.Port{Number: 8443, Enabled: true},
		CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterNetflix},
		LeaseInfo: registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second},
		Metadata: map[string]string{
			"a_b":         `quote " amp & lt < gt > apos ' slash / back \`,
			"$dollar":     "tab\tnl\ncr\r",
			"1st":         ctl,
			"with space":  "",
			"version":     "x",
			"ünïcode-key": "v",
		},
		SecureHealthCheckURL: "https://host-b:8443/health", ASGName: "asg-1",
		IsCoordinatingDiscoveryServer: true, LastUpdatedTimestamp: at(200), LastDirtyTimestamp: at(100),
		ActionType: registry.ActionModified,
	}
	c := &registry.Instance{
		InstanceID: "i-0abc", HostName: "ip-10-1-2-3.ec2.internal", App: "BILLING", IPAddr: "10.1.2.3",
		Status: registry.StatusStarting, OverriddenStatus: registry.StatusUnknown,
		Port: registry.Port{Number: 7001, Enabled: true}, SecurePort: registry.Port{Number: 7002},
		CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterAmazon, Metadata: map[string]string{
			"instance-id": "i-0abc", "availability-zone": "us-east-1a", "public-ipv4": "54.1.2.3",
			"local-ipv4": "10.1.2.3", "ami-id": "ami-1", "instance-type": "m5.large",
		}},
		LeaseInfo:  registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second},
		VIPAddress: "billing", LastUpdatedTimestamp: at(300), LastDirtyTimestamp: at(300),
	}
	view := func(in *registry.Instance, reg, renew int64) registry.LeaseView {
		return registry.LeaseView{
			Instance: in, RegistrationTimestamp: at(reg), LastRenewalTimestamp: at(renew),
			ServiceUpTimestamp: at(reg + 120), RenewalInterval: 30 * time.Second, Duration: 90 * time.Second,
		}
	}
	apps := &registry.Applications{
		VersionDelta: 1,
		Apps: []registry.Application{
			{Name: "BILLING", Instances: []registry.LeaseView{view(c, 0, 390000)}},
			{Name: "ORDER-SERVICE", Instances: []registry.LeaseView{view(a, 0, 390000), view(b, 5000, 395000)}},
		},
	}
	apps.HashCode = apps.ReconcileHashCode()
	return apps
}

// checkGolden compares got with testdata/golden/name, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./compat -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file (run go test ./compat -update after review)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	apps := fixtureApps()
	order := &apps.Apps[1]
	empty := &registry.Applications{VersionDelta: 1}
	resp := []ReplicationResponse{{StatusCode: 200}, {StatusCode: 409, Entity: &order.Instances[1]}, {StatusCode: 404}}
	type enc struct {
		name string
		out  []byte
	}
	var cases []enc
	for _, f := range []Format{JSON, XML} {
		for _, compact := range []bool{false, true} {
			kind := "full"
			if compact {
				kind = "compact"
			}
			cases = append(cases,
				enc{"apps." + kind + "." + f.String(), AppendApplications(nil, f, compact, apps)},
				enc{"apps-empty." + kind + "." + f.String(), AppendApplications(nil, f, compact, empty)},
				enc{"app." + kind + "." + f.String(), AppendApplication(nil, f, compact, order)},
			)
		}
		jackson := Codecs{JSON: Jackson, XML: Jackson}
		cases = append(cases,
			enc{"apps.jackson." + f.String(), jackson.AppendApplications(nil, f, false, apps)},
			enc{"apps-empty.jackson." + f.String(), jackson.AppendApplications(nil, f, false, empty)},
			enc{"app.jackson." + f.String(), jackson.AppendApplication(nil, f, false, order)},
			enc{"instance-b.response." + f.String(), AppendInstanceResponse(nil, f, &order.Instances[1])},
			enc{"instance-a." + f.String(), AppendInstance(nil, f, &order.Instances[0])},
			enc{"instance-b." + f.String(), AppendInstance(nil, f, &order.Instances[1])},
			enc{"instance-amazon." + f.String(), AppendInstance(nil, f, &apps.Apps[0].Instances[0])},
		)
	}
	cases = append(cases,
		enc{"instance-body.json", AppendInstanceBody(nil, &order.Instances[0])},
		enc{"replication-list.json", AppendReplicationList(nil, nf27Items(order))},
		enc{"replication-responses.json", AppendReplicationResponses(nil, resp)},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkGolden(t, c.name, c.out) })
	}
}

// TestInstanceJSONShape pins the exact bytes of NF §2.1's example instance.
func TestInstanceJSONShape(t *testing.T) {
	in := &registry.Instance{
		InstanceID: "host-a:order-service:8080", HostName: "host-a", App: "ORDER-SERVICE",
		IPAddr: "10.0.0.11", Status: registry.StatusUp, OverriddenStatus: registry.StatusUnknown,
		Port: registry.Port{Number: 8080, Enabled: true}, SecurePort: registry.Port{Number: 443},
		CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		Metadata:    map[string]string{"management.port": "8080"},
		HomePageURL: "http://host-a:8080/", StatusPageURL: "http://host-a:8080/actuator/info",
		HealthCheckURL: "http://host-a:8080/actuator/health", VIPAddress: "order-service",
		SecureVIPAddress: "order-service", LastUpdatedTimestamp: time.UnixMilli(1700000000120),
		LastDirtyTimestamp: time.UnixMilli(1699999999000), ActionType: registry.ActionAdded,
	}
	v := &registry.LeaseView{
		Instance: in, RegistrationTimestamp: time.UnixMilli(1700000000000),
		LastRenewalTimestamp: time.UnixMilli(1700000390000), ServiceUpTimestamp: time.UnixMilli(1700000000120),
		RenewalInterval: 30 * time.Second, Duration: 90 * time.Second,
	}
	want := `{"instance":{"instanceId":"host-a:order-service:8080","hostName":"host-a","app":"ORDER-SERVICE",` +
		`"ipAddr":"10.0.0.11","status":"UP","overriddenStatus":"UNKNOWN","port":{"$":8080,"@enabled":"true"},` +
		`"securePort":{"$":443,"@enabled":"false"},"countryId":1,` +
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},` +
		`"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90,"registrationTimestamp":1700000000000,` +
		`"lastRenewalTimestamp":1700000390000,"evictionTimestamp":0,"serviceUpTimestamp":1700000000120},` +
		`"metadata":{"management.port":"8080"},"homePageUrl":"http://host-a:8080/",` +
		`"statusPageUrl":"http://host-a:8080/actuator/info","healthCheckUrl":"http://host-a:8080/actuator/health",` +
		`"vipAddress":"order-service","secureVipAddress":"order-service","isCoordinatingDiscoveryServer":"false",` +
		`"lastUpdatedTimestamp":"1700000000120","lastDirtyTimestamp":"1699999999000","actionType":"ADDED"}}`
	if got := string(AppendInstance(nil, JSON, v)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestEmptyApplications(t *testing.T) {
	tests := []struct {
		name string
		f    Format
		want string
	}{
		{"json", JSON, `{"applications":{"versions__delta":"1","apps__hashcode":"","application":[]}}`},
		{"xml", XML, "<applications>\n  <versions__delta>1</versions__delta>\n  <apps__hashcode></apps__hashcode>\n</applications>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendApplications(nil, tt.f, false, &registry.Applications{VersionDelta: 1}))
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAppendReusesBuffer(t *testing.T) {
	apps := fixtureApps()
	buf := AppendApplications(nil, JSON, false, apps)
	prefix := []byte("PREFIX")
	got := AppendApplications(append(buf[:0], prefix...), JSON, false, apps)
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], AppendApplications(nil, JSON, false, apps)) {
		t.Errorf("appending after a prefix changed the output")
	}
}

func TestNilInputsDoNotPanic(t *testing.T) {
	for _, f := range []Format{JSON, XML} {
		_ = AppendApplications(nil, f, false, nil)
		_ = AppendApplication(nil, f, true, nil)
		_ = AppendInstance(nil, f, nil)
		_ = AppendInstance(nil, f, &registry.LeaseView{})
	}
	_ = AppendApplications(nil, JSON, false, &registry.Applications{Apps: []registry.Application{{Name: "X", Instances: []registry.LeaseView{{}}}}})
	if got := string(AppendApplication(nil, JSON, false, &registry.Application{Name: "X", Instances: []registry.LeaseView{{}}})); got != `{"application":{"name":"X","instance":[]}}` {
		t.Errorf("nil instance written: %s", got)
	}
}

func TestEscaping(t *testing.T) {
	tests := []struct {
		in, json, xmlText, xmlAttr string
	}{
		{`a"b\c/d`, `"a\"b\\c/d"`, "a&quot;b\\c/d", "a&quot;b\\c/d"},
		{"t\tn\nr\rb\bf\f", `"t\tn\nr\rb\bf\f"`, "t\tn\nr&#xd;b&#x8;f&#xc;", "t&#x9;n&#xa;r&#xd;b&#x8;f&#xc;"},
		{"\x00\x01\x1f\x7f", `"\u0000\u0001\u001F` + "\x7f\"", "&#x0;&#x1;&#x1f;&#x7f;", "&#x0;&#x1;&#x1f;&#x7f;"},
		{"<&>'", `"<&>'"`, "&lt;&amp;&gt;&apos;", "&lt;&amp;&gt;&apos;"},
		{"é日🙂\u0085\u0378", "\"é日🙂\u0085\u0378\"", "é日🙂&#x85;&#x378;", "é日🙂&#x85;&#x378;"},
		{"bad\xffutf8", "\"bad\uFFFDutf8\"", "bad\uFFFDutf8", "bad\uFFFDutf8"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := string(appendJSONString(nil, tt.in)); got != tt.json {
				t.Errorf("json: got %q, want %q", got, tt.json)
			}
			if got := string(appendXMLText(nil, tt.in, false)); got != tt.xmlText {
				t.Errorf("xml text: got %q, want %q", got, tt.xmlText)
			}
			if got := string(appendXMLText(nil, tt.in, true)); got != tt.xmlAttr {
				t.Errorf("xml attr: got %q, want %q", got, tt.xmlAttr)
			}
		})
	}
}

func TestXMLElementName(t *testing.T) {
	tests := []struct {
		key, name string
		ok        bool
	}{
		{"management.port", "management.port", true},
		{"a_b", "a__b", true},
		{"$x_y", "_-x__y", true},
		{"1st", "_.0031st", true},               // XStream would write <1st>
		{"with space", "with_.0020space", true}, // XStream would write <with space>
		{"a_ b", "a___.0020b", true},            // XStream's own slow path
		{"é", "é", true},
		{"🙂", "_.d83d_.de42", true},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			name, ok := xmlElementName(tt.key)
			if name != tt.name || ok != tt.ok {
				t.Fatalf("xmlElementName(%q) = %q, %v; want %q, %v", tt.key, name, ok, tt.name, tt.ok)
			}
			if ok {
				if !validXMLName(name) {
					t.Errorf("%q is not a valid XML name", name)
				}
				if back := decodeXMLName(name); back != tt.key {
					t.Errorf("decodeXMLName(%q) = %q, want %q", name, back, tt.key)
				}
			}
		})
	}
}

func TestFormatNegotiation(t *testing.T) {
	tests := []struct {
		accept string
		want   Format
	}{
		{"application/json", JSON},
		{"Application/JSON;charset=UTF-8", JSON},
		{"application/xml, application/json;q=0.1", JSON},
		{"*/*", XML},
		{"", XML},
		{"application/xml", XML},
		{"text/html", XML},
	}
	for _, tt := range tests {
		t.Run(tt.accept, func(t *testing.T) {
			if got := FormatFromAccept(tt.accept); got != tt.want {
				t.Errorf("FormatFromAccept(%q) = %v, want %v", tt.accept, got, tt.want)
			}
		})
	}
	if !CompactFromHeader("Compact") || !CompactFromHeader("full, COMPACT") || CompactFromHeader("full") || CompactFromHeader("") {
		t.Error("CompactFromHeader")
	}
	if JSON.ContentType() != "application/json" || XML.ContentType() != "application/xml" {
		t.Error("content types")
	}
}
