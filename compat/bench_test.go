package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
)

// registry10k is 500 applications of 20 instances each, shaped like a
// Spring Cloud fleet (three metadata keys, URLs, VIPs).
func registry10k() *registry.Applications {
	apps := &registry.Applications{VersionDelta: 1}
	for a := range 500 {
		name := fmt.Sprintf("SERVICE-%03d", a)
		app := registry.Application{Name: name}
		for i := range 20 {
			host := fmt.Sprintf("host-%03d-%02d", a, i)
			in := &registry.Instance{
				InstanceID: host + ":" + name + ":8080", HostName: host, App: name, IPAddr: "10.0.0.1",
				Status: registry.StatusUp, OverriddenStatus: registry.StatusUnknown,
				Port: registry.Port{Number: 8080, Enabled: true}, SecurePort: registry.Port{Number: 443},
				CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
				Metadata:    map[string]string{"management.port": "8080", "zone": "z1", "version": "1.2.3"},
				HomePageURL: "http://" + host + ":8080/", StatusPageURL: "http://" + host + ":8080/actuator/info",
				HealthCheckURL: "http://" + host + ":8080/actuator/health", VIPAddress: "service",
				SecureVIPAddress: "service", LastUpdatedTimestamp: fixedNow, LastDirtyTimestamp: fixedNow,
				ActionType: registry.ActionAdded,
			}
			app.Instances = append(app.Instances, registry.LeaseView{
				Instance: in, RegistrationTimestamp: fixedNow, LastRenewalTimestamp: fixedNow.Add(90 * time.Second),
				ServiceUpTimestamp: fixedNow, RenewalInterval: 30 * time.Second, Duration: 90 * time.Second,
			})
		}
		apps.Apps = append(apps.Apps, app)
	}
	apps.HashCode = apps.ReconcileHashCode()
	return apps
}

func benchmarkApplications(b *testing.B, f Format, compact bool) {
	apps := registry10k()
	buf := AppendApplications(nil, f, compact, apps)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendApplications(buf[:0], f, compact, apps)
	}
}

func BenchmarkAppendApplications10kJSON(b *testing.B)        { benchmarkApplications(b, JSON, false) }
func BenchmarkAppendApplications10kXML(b *testing.B)         { benchmarkApplications(b, XML, false) }
func BenchmarkAppendApplications10kJSONCompact(b *testing.B) { benchmarkApplications(b, JSON, true) }

func BenchmarkDecodeApplications10kJSON(b *testing.B) {
	body := AppendApplications(nil, JSON, false, registry10k())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeApplications(body, JSON); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHashCode10k(b *testing.B) {
	apps := registry10k()
	b.ReportAllocs()
	for b.Loop() {
		_ = apps.ReconcileHashCode()
	}
}

// BenchmarkDecodeApplicationsJSON is a joining node's start-up sync read:
// "fast" is DecodeApplications, "encoding-json" the encoding/json reading it
// replaces (same interpretation), for the ratio in one run.
func BenchmarkDecodeApplicationsJSON(b *testing.B) {
	for _, n := range []int{10, 100} {
		apps := &registry.Applications{VersionDelta: 1}
		for range n / 10 {
			apps.Apps = append(apps.Apps, registry10k().Apps...)
		}
		for i := range apps.Apps {
			apps.Apps[i].Name = fmt.Sprintf("SERVICE-%05d", i)
		}
		body := AppendApplications(nil, JSON, false, apps)
		b.Run(fmt.Sprintf("%dk/fast", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeApplications(body, JSON); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dk/encoding-json", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				doc, err := slowApplications(body)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := interpretApplications(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeInstanceJSON(b *testing.B) {
	body := AppendInstance(nil, JSON, &registry10k().Apps[0].Instances[0])
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeInstance(body, JSON); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w, err := slowInstance(body)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := w.toLeaseView(JSON); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// replicationBatch250 is a full peer batch of registrations: the items a
// restart storm sends.
func replicationBatch250() []ReplicationItem {
	apps := registry10k()
	var items []ReplicationItem
	for i := range apps.Apps {
		for j := range apps.Apps[i].Instances {
			v := &apps.Apps[i].Instances[j]
			items = append(items, ReplicationItem{AppName: v.Instance.App, ID: v.Instance.InstanceID,
				Action: ActionRegister, Status: string(v.Instance.Status), Instance: v,
				LastDirtyTimestamp: v.Instance.LastDirtyTimestamp.UnixMilli(), HasLastDirty: true})
			if len(items) == 250 {
				return items
			}
		}
	}
	return items
}

func BenchmarkDecodeReplicationList250(b *testing.B) {
	body := AppendReplicationList(nil, replicationBatch250())
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := DecodeReplicationList(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := slowReplicationList(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
