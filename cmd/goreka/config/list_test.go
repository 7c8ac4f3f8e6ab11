package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/goreka/goreka/registry"
)

const staticYAML = `
goreka:
  static-instances:
    - app: postgres
      host-name: db.internal
      ip-addr: 10.0.0.5
      port: 5432
      metadata:
        zoneName: a
        prometheus.port: "9187"
    - app: payments-api
      instance-id: stripe
      hostName: api.stripe.com
      secure-port: 443
      status: out_of_service
      vip-address: payments
`

func TestStaticInstancesFromYAML(t *testing.T) {
	c := mustLoad(t, nil, nil, map[string]string{"application.yml": staticYAML})
	want := []StaticInstance{
		{App: "postgres", InstanceID: "db.internal:postgres:5432", HostName: "db.internal", IPAddr: "10.0.0.5", Port: 5432, Status: "UP",
			VIPAddress: "postgres", SecureVIPAddress: "postgres", Metadata: map[string]string{"zoneName": "a", "prometheus.port": "9187"}},
		{App: "payments-api", InstanceID: "stripe", HostName: "api.stripe.com", IPAddr: "api.stripe.com", SecurePort: 443, Status: "OUT_OF_SERVICE",
			VIPAddress: "payments", SecureVIPAddress: "payments-api"},
	}
	got := c.Goreka.StaticInstances
	for i := range got {
		got[i].Source = ""
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, "static") {
			t.Errorf("warning %q", w)
		}
	}
	if r := c.Render(); !strings.Contains(r, "goreka.static-instances[0].metadata.zoneName=a") {
		t.Errorf("print-config lacks the entries:\n%s", r)
	}
	if u := Usage(); !strings.Contains(u, "goreka.static-instances[N].metadata.<key>") {
		t.Errorf("--help lacks the list")
	}
}

// A static instance registers with the app upper-cased, data center
// MyOwn and the ports it sets enabled.
func TestStaticInstanceRegistration(t *testing.T) {
	c := mustLoad(t, nil, nil, map[string]string{"application.yml": staticYAML})
	db, api := c.Goreka.StaticInstances[0].Instance(), c.Goreka.StaticInstances[1].Instance()
	if db.App != "POSTGRES" || db.InstanceID != "db.internal:postgres:5432" || !db.Port.Enabled || db.Port.Number != 5432 ||
		db.SecurePort.Enabled || db.Status != registry.StatusUp || db.DataCenterInfo.Name != registry.DataCenterMyOwn ||
		db.Metadata["zoneName"] != "a" {
		t.Errorf("postgres: %+v", db)
	}
	if api.App != "PAYMENTS-API" || api.Port.Enabled || !api.SecurePort.Enabled || api.Status != registry.StatusOutOfService ||
		api.Metadata == nil || api.VIPAddress != "payments" {
		t.Errorf("payments-api: %+v", api)
	}
}

// The same list from a properties file, the command line and the
// environment; the highest source's list replaces the lower ones whole.
func TestStaticInstancesSources(t *testing.T) {
	props := "goreka.static-instances[0].app=cache\ngoreka.static-instances[0].ip-addr=10.0.0.9\n" +
		"goreka.static-instances[1].app=mq\ngoreka.static-instances[1].host-name=mq.internal\n"
	c := mustLoad(t, nil, nil, map[string]string{"application.properties": props})
	if n := len(c.Goreka.StaticInstances); n != 2 || c.Goreka.StaticInstances[1].HostName != "mq.internal" {
		t.Fatalf("properties: %+v", c.Goreka.StaticInstances)
	}
	c = mustLoad(t, []string{"--goreka.static-instances[0].app=only", "--goreka.static-instances[0].ip-addr=10.1.1.1"}, nil,
		map[string]string{"application.properties": props})
	if n := len(c.Goreka.StaticInstances); n != 1 || c.Goreka.StaticInstances[0].App != "only" {
		t.Fatalf("command line over file: %+v", c.Goreka.StaticInstances)
	}
	c = mustLoad(t, nil, []string{"GOREKA_STATICINSTANCES_0_APP=envapp", "GOREKA_STATICINSTANCES_0_IPADDR=10.2.2.2"}, nil)
	if n := len(c.Goreka.StaticInstances); n != 1 || c.Goreka.StaticInstances[0].IPAddr != "10.2.2.2" {
		t.Fatalf("environment: %+v", c.Goreka.StaticInstances)
	}
	c = mustLoad(t, nil, nil, map[string]string{"application.yml": "goreka:\n  static-instances: []\n"})
	if len(c.Goreka.StaticInstances) != 0 {
		t.Fatalf("empty list: %+v", c.Goreka.StaticInstances)
	}
}

func TestStaticInstancesErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"goreka:\n  static-instances:\n    - host-name: h\n", "goreka.static-instances[0] (application.yml): app is required"},
		{"goreka:\n  static-instances:\n    - app: a\n", "goreka.static-instances[0] (application.yml): host-name or ip-addr is required"},
		{"goreka:\n  static-instances:\n    - {app: a, ip-addr: x}\n    - {app: b, ip-addr: x, port: http}\n", `goreka.static-instances[1].port="http" (application.yml): not a port`},
		{"goreka:\n  static-instances:\n    - {app: a, ip-addr: x, status: sleeping}\n", `goreka.static-instances[0].status="sleeping" (application.yml): not a status`},
		{"goreka:\n  static-instances:\n    - {app: a, ip-addr: x, colour: red}\n", `unknown field "colour" of goreka.static-instances[0]`},
		{"goreka:\n  static-instances:\n    - {app: a, ip-addr: x}\n    - {app: A, ip-addr: x}\n", "goreka.static-instances[1] (application.yml): the same app and instance-id as goreka.static-instances[0]"},
		{"goreka:\n  static-instances: db\n", "a list of records is expected"},
		{"goreka:\n  static-instances:\n    - db\n", "expected goreka.static-instances[N].field"},
	}
	for _, tc := range cases {
		_, err := load(nil, nil, setup(t, map[string]string{"application.yml": tc.yaml}), fakeHost)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
	_, err := load([]string{"--goreka.static-instances[1].app=x", "--goreka.static-instances[1].ip-addr=y"}, nil, t.TempDir(), fakeHost)
	if err == nil || !strings.Contains(err.Error(), "goreka.static-instances[0] (command line): missing") {
		t.Errorf("gap: %v", err)
	}
}
