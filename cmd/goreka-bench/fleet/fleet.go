// Package fleet describes the synthetic fleet that goreka-bench registers and
// goreka-baseline serves: instance i of a fleet of n in m applications looks
// like a Spring Boot service (ports, actuator URLs, a few metadata keys), so
// that payload sizes match a real registry of the same size.
package fleet

import (
	"fmt"
	"strconv"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// DirtyMillis is the lastDirtyTimestamp every synthetic instance registers
// with; renews send it back, as a client does, so the server answers 200.
const DirtyMillis int64 = 1764500000000

// Fleet names n instances spread over apps applications. Prefix keeps
// separate fleets (the main one, a burst, a convergence batch) apart.
type Fleet struct {
	Prefix string
	N      int
	Apps   int
}

// App is the (upper-case) application name of instance i.
func (f Fleet) App(i int) string {
	return fmt.Sprintf("%s-SERVICE-%03d", upper(f.Prefix), i%max(f.Apps, 1))
}

// ID is the instance id of instance i, unique across fleets with distinct
// prefixes.
func (f Fleet) ID(i int) string {
	return fmt.Sprintf("%s-host-%06d.bench.local:%s:8080", f.Prefix, i, lower(f.App(i)))
}

// Instance builds instance i.
func (f Fleet) Instance(i int) *registry.Instance {
	app := f.App(i)
	host := fmt.Sprintf("%s-host-%06d.bench.local", f.Prefix, i)
	ip := fmt.Sprintf("10.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255)
	base := "http://" + host + ":8080"
	vip := lower(app)
	dirty := time.UnixMilli(DirtyMillis)
	return &registry.Instance{
		InstanceID:       f.ID(i),
		HostName:         host,
		App:              app,
		IPAddr:           ip,
		Status:           registry.StatusUp,
		OverriddenStatus: registry.StatusUnknown,
		Port:             registry.Port{Number: 8080, Enabled: true},
		SecurePort:       registry.Port{Number: 443, Enabled: false},
		CountryID:        1,
		DataCenterInfo:   registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		LeaseInfo:        registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second},
		Metadata: map[string]string{
			"management.port": "8080",
			"zone":            "zone" + strconv.Itoa(i%3+1),
			"version":         "1.4." + strconv.Itoa(i%10),
			"git.commit":      fmt.Sprintf("%07x", i*2654435761%(1<<28)),
		},
		HomePageURL:          base + "/",
		StatusPageURL:        base + "/actuator/info",
		HealthCheckURL:       base + "/actuator/health",
		VIPAddress:           vip,
		SecureVIPAddress:     vip,
		LastUpdatedTimestamp: dirty,
		LastDirtyTimestamp:   dirty,
		ActionType:           registry.ActionAdded,
	}
}

// RegisterBody is the JSON body a client POSTs to /eureka/apps/{app} for
// instance i.
func (f Fleet) RegisterBody(i int) []byte {
	in := f.Instance(i)
	return compat.AppendInstance(nil, compat.JSON, &registry.LeaseView{
		Instance:        in,
		RenewalInterval: in.LeaseInfo.RenewalInterval,
		Duration:        in.LeaseInfo.Duration,
	})
}

// RenewPath is the heartbeat path (below the service URL) of instance i,
// with the query a Spring client sends.
func (f Fleet) RenewPath(i int) string {
	return "apps/" + f.App(i) + "/" + f.ID(i) + "?status=UP&lastDirtyTimestamp=" + strconv.FormatInt(DirtyMillis, 10)
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}
