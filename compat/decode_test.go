package compat

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
)

func readWire(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "wire", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTripApplications(t *testing.T) {
	for _, f := range []Format{JSON, XML} {
		t.Run(f.String(), func(t *testing.T) {
			apps, fresh := fixtureApps, fixtureApps
			if f == XML {
				apps, fresh = xmlFixtureApps, xmlFixtureApps
			}
			for _, compact := range []bool{false, true} {
				if _, err := DecodeApplications(AppendApplications(nil, f, compact, apps()), f); err != nil {
					t.Fatalf("compact=%v: %v", compact, err)
				}
			}
			got, err := DecodeApplications(AppendApplications(nil, f, false, apps()), f)
			if err != nil {
				t.Fatal(err)
			}
			want := fresh()
			// The encoder leaves "@class" out; every other field survives.
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip differs:\ngot  %s\nwant %s", AppendApplications(nil, JSON, false, got), AppendApplications(nil, JSON, false, want))
			}
		})
	}
}

func TestRoundTripInstance(t *testing.T) {
	for _, f := range []Format{JSON, XML} {
		apps := fixtureApps()
		if f == XML {
			apps = xmlFixtureApps()
		}
		for _, app := range apps.Apps {
			for _, v := range app.Instances {
				t.Run(f.String()+"/"+v.Instance.ID(), func(t *testing.T) {
					got, err := DecodeInstance(AppendInstance(nil, f, &v), f)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, v.Instance) {
						t.Errorf("got  %+v\nwant %+v", got, v.Instance)
					}
				})
			}
		}
	}
}

func TestDecodeLegacyFixtures(t *testing.T) {
	tests := []struct {
		file      string
		apps      int
		instances int
	}{
		{"apps-sample-1-1.json", 1, 1},
		{"apps-sample-1-1-post-v122.json", 1, 1},
		{"apps-sample-1-2.json", 1, 2},
		{"apps-sample-2-2.json", 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			apps, err := DecodeApplications(readWire(t, tt.file), JSON)
			if err != nil {
				t.Fatal(err)
			}
			if apps.VersionDelta != 1 || apps.HashCode != "UP_24_" || len(apps.Apps) != tt.apps {
				t.Fatalf("header: delta %d hash %q apps %d", apps.VersionDelta, apps.HashCode, len(apps.Apps))
			}
			n := 0
			for _, a := range apps.Apps {
				n += len(a.Instances)
			}
			if n != tt.instances {
				t.Fatalf("got %d instances, want %d", n, tt.instances)
			}
			// The METRICSD instance appears in three files; pin its fields.
			for _, a := range apps.Apps {
				if a.Name != "TESTENG.METRICSD" {
					continue
				}
				v := a.Instances[0]
				in := v.Instance
				want := &registry.Instance{
					HostName: "192.168.40.94:7101", App: "TESTENG.METRICSD", IPAddr: "192.168.40.94",
					Status: registry.StatusUp, OverriddenStatus: registry.StatusUp,
					Port: registry.Port{Number: 7101, Enabled: true}, SecurePort: registry.Port{Number: 7101, Enabled: true},
					CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: "MyOwn"},
					LeaseInfo: registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second},
					Metadata: map[string]string{
						"service-query-uri": "https://192.168.40.94:7101", "base-uri": "https://192.168.40.94:7101",
						"swagger-api-docs": "https://192.168.40.94:7101/api-docs",
					},
					VIPAddress: "[]", LastUpdatedTimestamp: time.UnixMilli(1402450388774).UTC(),
					LastDirtyTimestamp: time.UnixMilli(1402450388774).UTC(), ActionType: registry.ActionModified,
				}
				if !reflect.DeepEqual(in, want) {
					t.Errorf("instance:\ngot  %+v\nwant %+v", in, want)
				}
				if v.RegistrationTimestamp.UnixMilli() != 1402450388650 || v.LastRenewalTimestamp.UnixMilli() != 1402552694257 ||
					!v.EvictionTimestamp.IsZero() || v.ServiceUpTimestamp.UnixMilli() != 1402450388774 ||
					v.RenewalInterval != 30*time.Second || v.Duration != 90*time.Second {
					t.Errorf("lease: %+v", v)
				}
			}
			// Re-encoding in both formats gives the same value back.
			for _, f := range []Format{JSON, XML} {
				again, err := DecodeApplications(AppendApplications(nil, f, false, apps), f)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(again, apps) {
					t.Errorf("%v re-encode differs", f)
				}
			}
		})
	}
}

func TestDecodeRegisterBodies(t *testing.T) {
	lu, ld := time.UnixMilli(1764540000200).UTC(), time.UnixMilli(1764540000000).UTC()
	tests := []struct {
		file string
		f    Format
		want *registry.Instance
	}{
		{"register-spring-cloud.json", JSON, &registry.Instance{
			InstanceID: "localhost:svc-a:8081", HostName: "localhost", App: "SVC-A", IPAddr: "127.0.0.1",
			Status: registry.StatusUp, OverriddenStatus: registry.StatusUnknown,
			Port: registry.Port{Number: 8081, Enabled: true}, SecurePort: registry.Port{Number: 443},
			CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: "MyOwn"},
			LeaseInfo:   registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second},
			Metadata:    map[string]string{"instanceId": "svc-a:8081", "management.port": "8081"},
			HomePageURL: "http://localhost:8081/", StatusPageURL: "http://localhost:8081/actuator/info",
			HealthCheckURL: "http://localhost:8081/actuator/health", VIPAddress: "svc-a", SecureVIPAddress: "svc-a",
			LastUpdatedTimestamp: lu, LastDirtyTimestamp: ld,
		}},
		{"register-spring-cloud-emptymeta.json", JSON, &registry.Instance{
			InstanceID: "localhost:svc-b:8082", HostName: "localhost", App: "SVC-B", IPAddr: "127.0.0.1",
			Status: registry.StatusStarting, OverriddenStatus: registry.StatusUnknown,
			Port: registry.Port{Number: 8082, Enabled: true}, SecurePort: registry.Port{Number: 443},
			CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: "MyOwn"},
			LeaseInfo:   registry.LeaseInfo{RenewalInterval: 5 * time.Second, Duration: 15 * time.Second},
			HomePageURL: "http://localhost:8082/", StatusPageURL: "http://localhost:8082/actuator/info",
			HealthCheckURL: "http://localhost:8082/actuator/health", VIPAddress: "svc-b", SecureVIPAddress: "svc-b",
			LastUpdatedTimestamp: lu, LastDirtyTimestamp: ld,
		}},
		{"register-netflix-legacy.json", JSON, &registry.Instance{
			InstanceID: "host-a:order-service:8080", HostName: "host-a", App: "ORDER-SERVICE", IPAddr: "10.0.0.11",
			Status: registry.StatusUp, OverriddenStatus: registry.StatusUnknown,
			Port: registry.Port{Number: 8080, Enabled: true}, SecurePort: registry.Port{Number: 443},
			CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: "MyOwn"},
			LeaseInfo:   registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second},
			Metadata:    map[string]string{"management.port": "8080"},
			HomePageURL: "http://host-a:8080/", StatusPageURL: "http://host-a:8080/actuator/info",
			HealthCheckURL: "http://host-a:8080/actuator/health", VIPAddress: "order-service", SecureVIPAddress: "order-service",
			LastUpdatedTimestamp: time.UnixMilli(1700000000120).UTC(), LastDirtyTimestamp: time.UnixMilli(1699999999000).UTC(),
		}},
		{"register-netflix.xml", XML, &registry.Instance{
			InstanceID: "host-x:inventory:9090", HostName: "host-x", App: "INVENTORY", IPAddr: "10.0.0.31",
			Status: registry.StatusUp, OverriddenStatus: registry.StatusUnknown,
			Port: registry.Port{Number: 9090, Enabled: true}, SecurePort: registry.Port{Number: 9443},
			CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: "Amazon", Metadata: map[string]string{
				"instance-id": "i-123", "availability-zone": "eu-west-1b"}},
			LeaseInfo:  registry.LeaseInfo{RenewalInterval: 10 * time.Second},
			VIPAddress: "inventory", LastUpdatedTimestamp: time.UnixMilli(1700000000120).UTC(),
			LastDirtyTimestamp: time.UnixMilli(1699999999000).UTC(),
		}},
		{"register-node.json", JSON, &registry.Instance{
			InstanceID: "svc-n:28802", HostName: "localhost", App: "SVC-N", IPAddr: "127.0.0.1",
			Status: registry.StatusUp, OverriddenStatus: registry.StatusUnknown,
			Port: registry.Port{Number: 28802, Enabled: true}, SecurePort: registry.Port{Number: 7002},
			CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: "MyOwn"},
			LeaseInfo: registry.LeaseInfo{RenewalInterval: time.Second, Duration: 3 * time.Second},
			Metadata:  map[string]string{"k1": "v1"}, VIPAddress: "svc-n",
			HomePageURL: "http://localhost:28802/", StatusPageURL: "http://localhost:28802/health",
			HealthCheckURL: "http://localhost:28802/health",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := DecodeInstance(readWire(t, tt.file), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("\ngot  %+v\nwant %+v", got, tt.want)
			}
		})
	}
	// Every captured body decodes (others add them over time).
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "wire", "register-*"))
	for _, p := range files {
		f := JSON
		if strings.HasSuffix(p, ".xml") {
			f = XML
		}
		t.Run("any/"+filepath.Base(p), func(t *testing.T) {
			if _, err := DecodeInstance(readWire(t, filepath.Base(p)), f); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestDecodeLeniency(t *testing.T) {
	base := func(extra string) string {
		return `{"instance":{"hostName":"h","app":"a","ipAddr":"1.2.3.4"` + extra + `}}`
	}
	tests := []struct {
		name  string
		f     Format
		body  string
		check func(*registry.Instance) bool
	}{
		{"defaults", JSON, base(``), func(in *registry.Instance) bool {
			return in.Status == "UP" && in.OverriddenStatus == "UNKNOWN" && in.CountryID == 1 &&
				in.Port == registry.Port{Number: 7001, Enabled: true} && in.SecurePort == registry.Port{Number: 7002} &&
				in.LastDirtyTimestamp.IsZero() && in.Metadata == nil && in.App == "A"
		}},
		{"json status is case-sensitive", JSON, base(`,"status":"up"`), func(in *registry.Instance) bool { return in.Status == "UNKNOWN" }},
		{"xml status is upper-cased", XML, `<instance><status>down</status></instance>`, func(in *registry.Instance) bool { return in.Status == "DOWN" }},
		{"legacy overriddenstatus", JSON, base(`,"overriddenstatus":"DOWN"`), func(in *registry.Instance) bool { return in.OverriddenStatus == "DOWN" }},
		{"camel overriddenStatus wins", JSON, base(`,"overriddenstatus":"DOWN","overriddenStatus":"UP"`), func(in *registry.Instance) bool { return in.OverriddenStatus == "UP" }},
		{"xml overriddenStatus", XML, `<instance><overriddenStatus>OUT_OF_SERVICE</overriddenStatus></instance>`, func(in *registry.Instance) bool { return in.OverriddenStatus == "OUT_OF_SERVICE" }},
		{"port as strings", JSON, base(`,"port":{"$":"81","@enabled":"false"},"securePort":{"@enabled":true,"$":444}`), func(in *registry.Instance) bool {
			return in.Port == registry.Port{Number: 81} && in.SecurePort == registry.Port{Number: 444, Enabled: true}
		}},
		{"xml port defaults", XML, `<instance><port enabled="no">1</port><securePort>2</securePort></instance>`, func(in *registry.Instance) bool {
			return in.Port == registry.Port{Number: 1, Enabled: true} && in.SecurePort == registry.Port{Number: 2}
		}},
		{"numbers as strings", JSON, base(`,"countryId":"3","lastDirtyTimestamp":"5","leaseInfo":{"durationInSecs":"7","renewalIntervalInSecs":0}`), func(in *registry.Instance) bool {
			return in.CountryID == 3 && in.LastDirtyTimestamp.UnixMilli() == 5 && in.LeaseInfo.Duration == 7*time.Second && in.LeaseInfo.RenewalInterval == 0
		}},
		{"nulls are absent", JSON, base(`,"status":null,"port":null,"metadata":null,"leaseInfo":null,"countryId":null`), func(in *registry.Instance) bool {
			return in.Status == "UP" && in.Port.Number == 7001 && in.CountryID == 1
		}},
		{"metadata drops @class", JSON, base(`,"metadata":{"@class":"java.util.Collections$EmptyMap","k":1,"n":null}`), func(in *registry.Instance) bool {
			return reflect.DeepEqual(in.Metadata, map[string]string{"k": "1"})
		}},
		{"xml metadata names unescaped", XML, `<instance><metadata><a__b>1</a__b><_-x>2</_-x></metadata></instance>`, func(in *registry.Instance) bool {
			return reflect.DeepEqual(in.Metadata, map[string]string{"a_b": "1", "$x": "2"})
		}},
		{"dataCenterInfo without @class", JSON, base(`,"dataCenterInfo":{"name":"MyOwn"}`), func(in *registry.Instance) bool { return in.DataCenterInfo.Name == "MyOwn" }},
		{"unknown fields ignored", JSON, base(`,"foo":{"bar":[1,2]},"identifyingAttribute":"EC2_InstanceId"`), func(in *registry.Instance) bool { return in.HostName == "h" }},
		{"bad actionType dropped", JSON, base(`,"actionType":"EXPLODED"`), func(in *registry.Instance) bool { return in.ActionType == "" }},
		{"sid na is default", JSON, base(`,"sid":"na"`), func(in *registry.Instance) bool { return in.SID == "" }},
		{"spring id already prefixed", JSON, base(`,"metadata":{"instanceId":"h:1"}`), func(in *registry.Instance) bool { return in.InstanceID == "h:1" }},
		{"spring id prefixed", JSON, base(`,"metadata":{"instanceId":"x:1"}`), func(in *registry.Instance) bool { return in.InstanceID == "h:x:1" }},
		{"explicit id wins over metadata", JSON, base(`,"instanceId":"id","metadata":{"instanceId":"x"}`), func(in *registry.Instance) bool { return in.InstanceID == "id" }},
		{"fractional number truncated", JSON, base(`,"countryId":2.9`), func(in *registry.Instance) bool { return in.CountryID == 2 }},
		{"isCoordinating bool", JSON, base(`,"isCoordinatingDiscoveryServer":true`), func(in *registry.Instance) bool { return in.IsCoordinatingDiscoveryServer }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := DecodeInstance([]byte(tt.body), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(in) {
				t.Errorf("unexpected result %+v", in)
			}
		})
	}
}

func TestDecodeBadInput(t *testing.T) {
	tests := []struct {
		name string
		f    Format
		body string
	}{
		{"empty json", JSON, ``},
		{"not json", JSON, `hello`},
		{"array root", JSON, `[]`},
		{"wrong root", JSON, `{"application":{}}`},
		{"null root", JSON, `{"instance":null}`},
		{"truncated", JSON, `{"instance":{"hostName":"h"`},
		{"trailing garbage", JSON, `{"instance":{}} x`},
		{"port as number", JSON, `{"instance":{"port":8080}}`},
		{"port not a number", JSON, `{"instance":{"port":{"$":"http"}}}`},
		{"object as string", JSON, `{"instance":{"hostName":{"a":1}}}`},
		{"bad timestamp", JSON, `{"instance":{"lastDirtyTimestamp":"yesterday"}}`},
		{"huge number", JSON, `{"instance":{"countryId":1e300}}`},
		{"metadata array", JSON, `{"instance":{"metadata":[1]}}`},
		{"empty xml", XML, ``},
		{"wrong xml root", XML, `<application/>`},
		{"unclosed xml", XML, `<instance><hostName>h</hostName>`},
		{"mismatched xml", XML, `<instance><a></b></instance>`},
		{"two roots", XML, `<instance/><instance/>`},
		{"text after root", XML, `<instance/>junk`},
		{"doctype", XML, `<!DOCTYPE instance [<!ENTITY x "y">]><instance><hostName>&x;</hostName></instance>`},
		{"undefined entity", XML, `<instance><hostName>&x;</hostName></instance>`},
		{"external entity", XML, `<!DOCTYPE i [<!ENTITY e SYSTEM "file:///etc/passwd">]><instance>&e;</instance>`},
		{"billion laughs", XML, `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]><instance>&lol2;</instance>`},
		{"utf-16 declared", XML, `<?xml version="1.0" encoding="UTF-16"?><instance/>`},
		{"too deep", XML, strings.Repeat("<instance>", 100) + strings.Repeat("</instance>", 100)},
		{"bad xml number", XML, `<instance><port>eighty</port></instance>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeInstance([]byte(tt.body), tt.f)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, want a *DecodeError", err)
			}
			if de.Format != tt.f || !strings.HasPrefix(de.Error(), "cannot parse "+tt.f.String()+" body: ") {
				t.Errorf("message %q", de.Error())
			}
		})
	}
	for _, b := range []string{`{}`, `{"applications":{"application":[{"instance":{"port":1}}]}}`, `{"applications":{"versions__delta":"x"}}`, `<instance/>`} {
		if _, err := DecodeApplications([]byte(b), FormatFromAccept(map[bool]string{true: "json"}[b[0] == '{'])); err == nil {
			t.Errorf("DecodeApplications(%s): no error", b)
		}
	}
}

// TestXMLCharacterReferences checks what encoding/xml does expand: the five
// predefined entities and character references, nothing else.
func TestXMLCharacterReferences(t *testing.T) {
	in, err := DecodeInstance([]byte(`<instance><hostName>a&amp;b&lt;&#x41;&#66;&quot;&apos;&gt;</hostName></instance>`), XML)
	if err != nil {
		t.Fatal(err)
	}
	if in.HostName != `a&b<AB"'>` {
		t.Errorf("got %q", in.HostName)
	}
}

func TestDecodeDataCenterNameAndLeaseRange(t *testing.T) {
	body := func(dc, dur string) []byte {
		return []byte(`{"instance":{"instanceId":"i","hostName":"h","app":"A","ipAddr":"1.2.3.4",` +
			`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"` + dc + `"},` +
			`"leaseInfo":{"durationInSecs":` + dur + `}}}`)
	}
	in, err := DecodeInstance(body("myown", "90"), JSON)
	if err != nil || in.DataCenterInfo.Name != "MyOwn" {
		t.Fatalf("case-corrected name: %v %+v", err, in)
	}
	var de *DecodeError
	if _, err := DecodeInstance(body("Default", "90"), JSON); !errors.As(err, &de) {
		t.Fatalf("unknown data-center name must not decode: %v", err)
	}
	if _, err := DecodeInstance(body("MyOwn", "4000000000"), JSON); !errors.As(err, &de) {
		t.Fatalf("durationInSecs beyond Java's int must not decode: %v", err)
	}
}

// TestRoundTripJackson: the Jackson codec's documents read back to the same
// registry, so a goreka fetching from a server with
// json-codec-name=JacksonJson or xml-codec-name=JacksonXml sees every field.
func TestRoundTripJackson(t *testing.T) {
	c := Codecs{JSON: Jackson, XML: Jackson}
	for _, f := range []Format{JSON, XML} {
		t.Run(f.String(), func(t *testing.T) {
			apps := fixtureApps
			if f == XML {
				apps = xmlFixtureApps
			}
			got, err := DecodeApplications(c.AppendApplications(nil, f, false, apps()), f)
			if err != nil {
				t.Fatal(err)
			}
			if want := apps(); !reflect.DeepEqual(got, want) {
				t.Errorf("round trip differs:\ngot  %s\nwant %s", AppendApplications(nil, JSON, false, got), AppendApplications(nil, JSON, false, want))
			}
		})
	}
}
