package eviction

import (
	"fmt"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
)

// report-held-as-down: held leases are served DOWN and stay registered;
// the partition heals, their heartbeats make them UP again. Without the
// option they stay UP (Eureka's behaviour).
func TestReportHeldAsDown(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, true)
			e.ev.cfg.ReportHeldAsDown = on
			e.ev.OpenForTraffic(1)
			ids := e.fleet("svc", 100)
			e.simulate(5*time.Minute, "svc", func(string) bool { return true }, ids)
			half := func(id string) bool {
				var n int
				fmt.Sscanf(id, "svc-%d", &n)
				return n%2 == 0
			}
			e.simulate(10*time.Minute, "svc", half, ids)
			if e.reg.Size() != 100 {
				t.Fatalf("size %d", e.reg.Size())
			}
			want := registry.StatusUp
			if on {
				want = registry.StatusDown
			}
			if got := e.reg.HashCode(); got != fmt.Sprintf("%s_50_UP_50_", want) && !(want == registry.StatusUp && got == "UP_100_") {
				t.Fatalf("hash %s", got)
			}
			e.simulate(90*time.Second, "svc", func(string) bool { return true }, ids)
			if got := e.reg.HashCode(); got != "UP_100_" {
				t.Fatalf("after recovery: hash %s", got)
			}
		})
	}
}
