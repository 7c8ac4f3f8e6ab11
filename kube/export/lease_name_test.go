package export

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// A cluster id is a label value; the Lease named after it must still be a
// valid object name (an upper-case or '_' id made the Lease 422 forever, and
// nothing was exported), and two ids differing in case get two Leases.
func TestLeaseNameIsAnObjectNameForEveryClusterID(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"default", "east", "East", "eu_1.a", "A-b.C"} {
		n := LeaseName(id)
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			t.Errorf("LeaseName(%q) = %q: %v", id, n, errs)
		}
		if prev, dup := seen[n]; dup {
			t.Errorf("LeaseName(%q) = LeaseName(%q) = %q", id, prev, n)
		}
		seen[n] = id
	}
	if got := LeaseName("east"); got != "goreka-export-east" {
		t.Errorf("LeaseName(east) = %q, want goreka-export-east (the chart's RBAC names it)", got)
	}
}
