package interop

import (
	"net/url"
	"slices"
	"testing"
	"time"

	consul "github.com/hashicorp/consul/api"
)

// TestConsulCatalogWithTheOfficialClient reads the catalog with
// github.com/hashicorp/consul/api: services, a service's instances, health
// with ?passing, agent/self, and a blocking query woken by a registration.
func TestConsulCatalogWithTheOfficialClient(t *testing.T) {
	f := newConsulFixture(t)

	u, _ := url.Parse(f.srv.URL)
	cfg := consul.DefaultConfig()
	cfg.Address = u.Host
	client, err := consul.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}

	services, meta, err := client.Catalog().Services(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(services) != 2 || !slices.Equal(services["orders"], []string{"zone=a"}) || services["billing"] == nil {
		t.Errorf("services %v", services)
	}
	if meta.LastIndex != uint64(f.reg.Revision()) || !meta.KnownLeader {
		t.Errorf("meta %+v, revision %d", meta, f.reg.Revision())
	}

	cs, _, err := client.Catalog().Service("orders", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].ServiceID != "o1" || cs[0].ServiceAddress != "10.0.0.1" || cs[0].ServicePort != 8080 ||
		cs[0].ServiceName != "orders" || cs[0].ServiceMeta["zone"] != "a" || cs[0].Datacenter != "dc1" {
		t.Errorf("catalog service %+v", cs)
	}
	if tagged, _, err := client.Catalog().Service("orders", "zone=a", nil); err != nil || len(tagged) != 1 {
		t.Errorf("by tag: %v %v", tagged, err)
	}

	all, _, err := client.Health().Service("orders", "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Checks.AggregatedStatus() != consul.HealthPassing || all[1].Checks.AggregatedStatus() != consul.HealthCritical {
		t.Errorf("health %+v", all)
	}
	passing, meta, err := client.Health().Service("orders", "", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(passing) != 1 || passing[0].Service.ID != "o1" || passing[0].Node.Address != "10.0.0.1" {
		t.Errorf("passing %+v", passing)
	}

	self, err := client.Agent().Self()
	if err != nil || self["Config"]["Datacenter"] != "dc1" {
		t.Errorf("agent/self %v %v", self, err)
	}

	// A blocking query at the current index returns when the registry changes.
	type answer struct {
		entries []*consul.ServiceEntry
		meta    *consul.QueryMeta
		err     error
	}
	res := make(chan answer)
	go func() {
		e, m, err := client.Health().Service("orders", "", true, &consul.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: time.Minute})
		res <- answer{e, m, err}
	}()
	f.register(inst("ORDERS", "o3"))
	got := <-res
	if got.err != nil || len(got.entries) != 2 || got.meta.LastIndex <= meta.LastIndex {
		t.Errorf("blocking query: %+v", got)
	}
	// A blocking query with nothing changing ends after its wait with the same index.
	_, m, err := client.Catalog().Services(&consul.QueryOptions{WaitIndex: got.meta.LastIndex, WaitTime: 50 * time.Millisecond})
	if err != nil || m.LastIndex != got.meta.LastIndex {
		t.Errorf("timed-out blocking query: %+v %v", m, err)
	}
}
