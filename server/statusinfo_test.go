package server

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/health"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication"
)

// fakeReplication is the replication the status page and the dashboard
// read.
type fakeReplication struct{ peers []replication.PeerStatus }

func (fakeReplication) Replicas() (registered, available, unavailable []string) {
	return []string{"http://p1:8761/eureka/", "http://p2:8761/eureka/"}, []string{"http://p1:8761/eureka/"}, []string{"http://p2:8761/eureka/"}
}

func (f fakeReplication) Status() []replication.PeerStatus { return f.peers }

// countingReplication counts the calls of Replicas.
type countingReplication struct {
	fakeReplication
	calls *int
}

func (c countingReplication) Replicas() (registered, available, unavailable []string) {
	*c.calls++
	return c.fakeReplication.Replicas()
}

type fakeEviction struct{ st eviction.Status }

func (f fakeEviction) Status() eviction.Status { return f.st }

type fakeHealth struct{ lc health.Lifecycle }

func (fakeHealth) Status() health.Status { return health.Status{Alert: "ALERT"} }

func (f fakeHealth) Lifecycle(limit int) health.Lifecycle {
	if limit != lifecycleRows {
		panic("lifecycle limit")
	}
	return f.lc
}

func selfInstance() *registry.Instance {
	return &registry.Instance{InstanceID: "me", App: "EUREKA-SERVER", HostName: "me.local", IPAddr: "10.0.0.9", Status: registry.StatusUp,
		LeaseInfo: registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second}}
}

// /eureka/status's figures: the general stats in Eureka's order, the
// replica rows, and this server as the coordinating discovery server with
// its lease's timings.
func TestProcessStatus(t *testing.T) {
	started := dashNow.Add(-(49*time.Hour + 7*time.Minute))
	self := selfInstance()
	p := &ProcessStatus{Environment: "prod", Started: started, Self: self, Replicas: fakeReplication{}, Now: func() time.Time { return dashNow }}
	st := p.StatusInfo()
	var keys []string
	for _, kv := range st.General {
		keys = append(keys, kv[0])
	}
	if strings.Join(keys, ",") != "environment,num-of-cpus,total-avail-memory,current-memory-usage,server-uptime" ||
		st.General[0][1] != "prod" || st.General[4][1] != "2 days 01:07" || !strings.HasSuffix(st.General[2][1], "mb") {
		t.Errorf("general stats %v", st.General)
	}
	if st.Application[0][1] != "http://p1:8761/eureka/, http://p2:8761/eureka/" || st.Application[2][1] != "http://p2:8761/eureka/," {
		t.Errorf("application stats %v", st.Application)
	}
	in := st.Instance
	if in == nil || !in.Instance.IsCoordinatingDiscoveryServer || self.IsCoordinatingDiscoveryServer ||
		in.RegistrationTimestamp != started || in.LastRenewalTimestamp != dashNow || in.Duration != 90*time.Second {
		t.Errorf("instance %+v (own copy changed: %v)", in, self.IsCoordinatingDiscoveryServer)
	}
	if st := (&ProcessStatus{}).StatusInfo(); st.Instance != nil || len(st.Application) != 3 {
		t.Errorf("no self, no replicas: %+v", st)
	}
}

func TestPercent(t *testing.T) {
	if percent(1, 0) != 0 || percent(50, 200) != 25 {
		t.Error("percent")
	}
}

// DashboardState reads each package's own state: self-preservation,
// peers with their hosts, replicas, General Info without the environment,
// the health alert and lifecycle, and the namespace selector.
func TestDashboardState(t *testing.T) {
	ev := eviction.Status{Threshold: 5, RenewsLastMinute: 2, Banner: "B"}
	peers := []replication.PeerStatus{{URL: "http://p1:8761/eureka/", Host: "p1", State: "up"}}
	lc := health.Lifecycle{Counts: map[health.State]int{health.Up: 3}}
	d := &DashboardState{
		Environment: "prod", Datacenter: "dc1",
		Status:   &ProcessStatus{Environment: "prod", Started: dashNow.Add(-time.Hour), Self: selfInstance(), Replicas: fakeReplication{}, Now: func() time.Time { return dashNow }},
		Eviction: fakeEviction{ev}, Replication: fakeReplication{peers}, Health: fakeHealth{lc},
		Namespace: "dev", Namespaces: func() []string { return []string{"default", "dev"} }, DefaultPath: "/dashboard/",
	}
	data := d.DashboardData()
	if data.Environment != "prod" || data.Datacenter != "dc1" || data.Now != dashNow || data.Uptime != time.Hour ||
		data.SelfPreservation.Threshold != 5 || data.SelfPreservation.Banner != "B" || len(data.Peers) != 1 || data.Peers[0].Host != "p1" ||
		len(data.ReplicaInfo) != 3 || data.ReplicaInfo[0] != [2]string{"registered-replicas", "http://p1:8761/eureka/, http://p2:8761/eureka/"} || data.Health.Alert != "ALERT" || data.Lifecycle == nil || data.Lifecycle.Counts[health.Up] != 3 {
		t.Errorf("data %+v", data)
	}
	for _, kv := range data.GeneralInfo {
		if kv[0] == "environment" {
			t.Errorf("General Info has the environment row")
		}
	}
	if len(data.GeneralInfo) != 4 || len(data.InstanceInfo) != 2 || data.InstanceInfo[0] != [2]string{"ipAddr", "10.0.0.9"} {
		t.Errorf("general %v, instance %v", data.GeneralInfo, data.InstanceInfo)
	}
	if data.PathPrefix != "/ns/dev" || len(data.Namespaces) != 2 ||
		data.Namespaces[0] != (DashboardNamespace{Name: "default", Href: "/dashboard"}) ||
		data.Namespaces[1] != (DashboardNamespace{Name: "dev", Href: "/ns/dev/", Current: true}) {
		t.Errorf("namespaces: prefix %q, %+v", data.PathPrefix, data.Namespaces)
	}
	d.Namespace, d.Namespaces = "default", nil
	if data := d.DashboardData(); data.PathPrefix != "" || data.Namespaces != nil {
		t.Errorf("default namespace: prefix %q, %+v", data.PathPrefix, data.Namespaces)
	}
	// One page view reads the replicas once: the rows of StatusInfo.
	calls := 0
	repl := countingReplication{fakeReplication{peers}, &calls}
	d.Status.Replicas, d.Replication = repl, repl
	if data := d.DashboardData(); calls != 1 || !slices.Equal(data.ReplicaInfo, d.Status.StatusInfo().Application) {
		t.Errorf("Replicas called %d times for one view, want 1; replica rows %v", calls, data.ReplicaInfo)
	}
	// "" is the default namespace too, as DashboardData.Namespace says.
	d.Namespace, d.Namespaces = "", func() []string { return []string{"default", "dev"} }
	if data := d.DashboardData(); data.PathPrefix != "" || len(data.Namespaces) != 2 || !data.Namespaces[0].Current || data.Namespaces[1].Current {
		t.Errorf(`namespace "": prefix %q, %+v`, data.PathPrefix, data.Namespaces)
	}
}
