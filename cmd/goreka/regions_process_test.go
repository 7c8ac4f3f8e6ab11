package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
)

// regionApps is GET path on n as sorted "APP/id" entries and the
// document's apps__hashcode.
func regionApps(n *node, path string) ([]string, string, int, error) {
	code, body, err := do("GET", n.base()+path, "")
	if err != nil || code != http.StatusOK {
		return nil, "", code, err
	}
	all, err := compat.DecodeApplications(body, compat.JSON)
	if err != nil {
		return nil, "", code, fmt.Errorf("%v: %s", err, body)
	}
	var out []string
	for _, a := range all.Apps {
		for _, v := range a.Instances {
			out = append(out, a.Name+"/"+v.Instance.ID())
		}
	}
	slices.Sort(out)
	return out, all.HashCode, code, nil
}

// TestRemoteRegionIsAnotherGoreka runs goreka L whose remote region
// "west" is goreka W: ?regions=west merges W's registry, the plain read
// does too (transparent fallback), the whitelist holds, a change on W
// arrives by delta, and when W goes away L keeps serving its last copy and
// its local reads without waiting on W.
func TestRemoteRegionIsAnotherGoreka(t *testing.T) {
	ip := "127.0.0.1"
	wp, lp := freePort(t, ip), freePort(t, ip)
	w := processNode(t, "west", ip, wp, standaloneArgs(ip, wp, "--eureka.server.response-cache-update-interval-ms=100")...)
	l := processNode(t, "local", ip, lp, standaloneArgs(ip, lp,
		"--eureka.server.remote-region-urls-with-name.west=http://"+hostPort(ip, wp)+"/eureka/",
		"--eureka.server.remote-region-registry-fetch-interval=1",
		"--eureka.server.remote-region-app-whitelist.west=WEB,API",
		"--eureka.server.response-cache-update-interval-ms=100")...)
	// L first, while W is not there: ?regions= is refused, local reads are not.
	l.start()
	register(t, l, "LOCALAPP", "l1", 30, 90)
	if code, _, _ := do("GET", l.base()+"/apps?regions=west", ""); code != http.StatusForbidden {
		t.Fatalf("GET apps?regions=west before west answered: %d, want 403", code)
	}
	if code, _, _ := do("GET", l.base()+"/apps/delta?regions=west", ""); code != http.StatusForbidden {
		t.Fatalf("GET apps/delta?regions=west before west answered: %d, want 403", code)
	}
	must(t, "GET", l.base()+"/apps", "", http.StatusOK)

	w.start()
	register(t, w, "WEB", "w1", 30, 90)
	register(t, w, "SECRET", "s1", 30, 90) // not whitelisted
	want := []string{"LOCALAPP/l1", "WEB/w1"}
	waitUntil(t, "L serves west's WEB with ?regions=west", 20*time.Second, func() (bool, string) {
		got, hash, _, err := regionApps(l, "/apps?regions=west")
		return err == nil && slices.Equal(got, want) && hash == "UP_2_", fmt.Sprint(got, hash, err)
	})
	// Plain /apps: transparent fallback merges every region.
	waitUntil(t, "plain GET apps merges west (transparent fallback)", 5*time.Second, func() (bool, string) {
		got, hash, _, err := regionApps(l, "/apps")
		return err == nil && slices.Equal(got, want) && hash == "UP_2_", fmt.Sprint(got, hash, err)
	})
	// Unknown region: local only, 200.
	if got, _, _, err := regionApps(l, "/apps?regions=nowhere"); err != nil || !slices.Equal(got, []string{"LOCALAPP/l1"}) {
		t.Fatalf("GET apps?regions=nowhere: %v %v", got, err)
	}
	// Single reads fall back to the region.
	must(t, "GET", l.base()+"/apps/WEB", "", http.StatusOK)
	must(t, "GET", l.base()+"/apps/WEB/w1", "", http.StatusOK)
	must(t, "GET", l.base()+"/instances/w1", "", http.StatusOK)

	// A change on W arrives (by delta: W's copy is not empty).
	register(t, w, "API", "a1", 30, 90)
	want = []string{"API/a1", "LOCALAPP/l1", "WEB/w1"}
	waitUntil(t, "L serves west's new API instance", 20*time.Second, func() (bool, string) {
		got, hash, _, err := regionApps(l, "/apps?regions=west")
		return err == nil && slices.Equal(got, want) && hash == "UP_3_", fmt.Sprint(got, hash, err)
	})
	deltaGot, deltaHash, _, err := regionApps(l, "/apps/delta?regions=west")
	if err != nil || deltaHash != "UP_3_" {
		t.Fatalf("GET apps/delta?regions=west: %v %s %v, want hash UP_3_", deltaGot, deltaHash, err)
	}

	// W goes away: L's reads stay quick and keep the last copy.
	w.kill()
	time.Sleep(3 * time.Second) // three fetch intervals fail meanwhile
	for _, path := range []string{"/apps", "/apps?regions=west", "/apps/delta?regions=west", "/apps/LOCALAPP"} {
		start := time.Now()
		code, _, err := do("GET", l.base()+path, "")
		if took := time.Since(start); err != nil || code != http.StatusOK || took > time.Second {
			t.Fatalf("GET %s with west gone: %d %v in %v", path, code, err, took)
		}
	}
	if got, _, _, err := regionApps(l, "/apps?regions=west"); err != nil || !slices.Equal(got, want) {
		t.Fatalf("last good copy with west gone: %v %v, want %v", got, err, want)
	}
	register(t, l, "LOCALAPP", "l2", 30, 90)
	waitUntil(t, "a local change is served with west gone", 10*time.Second, func() (bool, string) {
		got, _, _, err := regionApps(l, "/apps")
		return err == nil && slices.Contains(got, "LOCALAPP/l2"), fmt.Sprint(got, err)
	})
	metrics := scrape(t, l)
	var failures float64
	for k, v := range metrics {
		if strings.HasPrefix(k, "goreka_remote_region_fetch_failures_total") && strings.Contains(k, `region="west"`) {
			failures = v
		}
	}
	if failures < 1 {
		t.Errorf("goreka_remote_region_fetch_failures_total{region=\"west\"} = %v after west went away, want >= 1", failures)
	}
}

func hostPort(ip string, port int) string { return fmt.Sprintf("%s:%d", ip, port) }
