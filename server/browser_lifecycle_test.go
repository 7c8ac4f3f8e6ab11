//go:build browser

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// switchable is a health endpoint whose answer the test sets.
type switchable struct{ code atomic.Int32 }

func (s *switchable) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	c := int(s.code.Load())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(c)
	if c == http.StatusOK {
		io.WriteString(w, `{"status":"UP"}`)
	} else {
		io.WriteString(w, `{"status":"DOWN"}`)
	}
}

// TestBrowserLifecycle: goreka probes three heartbeating instances
// (periodic mode, 1 s); the dashboard, loaded once and never reloaded,
// follows through its live refresh: the counts (one instance stops
// heartbeating: suspect), the DOWN-by-probe reason of one whose health
// check answers 503, and the guard's banner when every probe fails, gone
// again when they succeed.
func TestBrowserLifecycle(t *testing.T) {
	browser := chromium(t)
	base := startGoreka(t,
		"--goreka.health.probe.enabled=true", "--goreka.health.probe.mode=periodic",
		"--goreka.health.probe.interval=1s", "--goreka.health.probe.jitter=0s", "--goreka.health.probe.timeout=1s",
		// A short guard window, so that the guard trips and clears within seconds.
		"--goreka.health.probe.window=6s")

	names := []string{"alpha", "bravo", "charlie"}
	hc := map[string]*switchable{}
	for _, n := range names {
		s := &switchable{}
		s.code.Store(http.StatusOK)
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		hc[n] = s
		registerProbed(t, base, "LIFE", n, srv.URL+"/actuator/health")
	}
	// Heartbeats, as the instances' own clients (every 300 ms, renewal
	// interval 1 s); charlie's stop when told.
	var stopCharlie atomic.Bool
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, n := range names {
		wg.Go(func() {
			tick := time.NewTicker(300 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if n == "charlie" && stopCharlie.Load() {
					continue
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPut, base+"/eureka/apps/LIFE/"+n, nil)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		})
	}

	c := startBrowser(t, browser, t.TempDir())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	state := func() string {
		var s string
		_ = c.eval(ctx, `document.getElementById('lifecycleCounts').textContent + ' | ' +
			[...document.querySelectorAll('#lifecycleInstances tbody tr')].map(r => r.textContent).join(' / ') +
			' | alert: ' + document.getElementById('healthAlert').textContent`, &s)
		return s
	}
	waitJS := func(what, expr string, d time.Duration) {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			var ok bool
			if c.eval(ctx, expr, &ok) == nil && ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; the page shows: %s", what, state())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	must(c.call(ctx, "Page.navigate", map[string]any{"url": base + "/"}, nil))
	waitJS("the page and its first live refresh", `document.readyState === 'complete' && !!document.querySelector('#live.ok')`, 15*time.Second)
	// A mark that a reload would wipe: every change below must come from the live refresh.
	must(c.eval(ctx, `window.__noReload = 1, true`, nil))
	waitJS("three instances up, each probed healthy", `(() => {
		const rows = [...document.querySelectorAll('#lifecycleInstances tbody tr')].filter(r => r.cells[0].textContent === 'LIFE');
		return document.getElementById('lifecycleCounts').textContent.includes('up 3') && rows.length === 3 &&
			rows.every(r => r.cells[2].textContent === 'up' && r.cells[5].textContent.includes('HTTP 200'));
	})()`, 30*time.Second)
	var alert string
	must(c.eval(ctx, `document.getElementById('healthAlert').textContent`, &alert))
	if alert != "" {
		t.Fatalf("guard banner before any failure: %q", alert)
	}

	// bravo's health check answers 503; charlie stops heartbeating.
	hc["bravo"].code.Store(http.StatusServiceUnavailable)
	stopCharlie.Store(true)
	row := func(id string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('#lifecycleInstances tbody tr')].find(r => r.cells[1].textContent === %q)`, id)
	}
	waitJS("bravo DOWN by probe with its reason, charlie suspect, the counts", fmt.Sprintf(`(() => {
		const b = %s, c = %s;
		return !!b && b.cells[3].textContent === 'DOWN' && b.cells[6].textContent === 'DOWN by probe: 3 failures, HTTP 503' &&
			!!c && c.cells[2].textContent === 'suspect' &&
			document.getElementById('lifecycleCounts').textContent.includes('up 2') &&
			document.getElementById('lifecycleCounts').textContent.includes('suspect 1');
	})()`, row("bravo"), row("charlie")), 30*time.Second)
	if st := instanceStatus(t, base, "LIFE", "bravo"); st != "DOWN" {
		t.Errorf("REST API says bravo is %s, the dashboard DOWN", st)
	}
	// The reason is text, not markup: the cell holds no element.
	var kids int
	must(c.eval(ctx, row("bravo")+`.cells[6].children.length`, &kids))
	if kids != 0 {
		t.Errorf("the reason cell has %d child elements, want text only", kids)
	}

	// Every probe fails: the guard trips, the banner shows, the DOWN verdict is lifted.
	hc["alpha"].code.Store(http.StatusServiceUnavailable)
	hc["charlie"].code.Store(http.StatusServiceUnavailable)
	waitJS("the guard banner", `document.getElementById('healthAlert').textContent.startsWith('HEALTH PROBES SUSPENDED')`, 30*time.Second)
	waitJS("bravo UP again (the guard lifts verdicts)", row("bravo")+`.cells[3].textContent === 'UP'`, 15*time.Second)

	// Probes succeed again: the banner goes.
	for _, n := range names {
		hc[n].code.Store(http.StatusOK)
	}
	waitJS("the guard banner gone", `document.getElementById('healthAlert').textContent === ''`, 30*time.Second)

	var mark int
	must(c.eval(ctx, `window.__noReload || 0`, &mark))
	if mark != 1 {
		t.Errorf("the page was reloaded: the checks above did not test the live refresh")
	}
	if ex := c.exceptions(); len(ex) > 0 {
		t.Errorf("page threw: %v", ex)
	}
}

// registerProbed registers app/id with a health check URL and a 1 s
// renewal interval (90 s lease: missed heartbeats make it suspect, never
// expired, within the test).
func registerProbed(t *testing.T, base, app, id, health string) {
	t.Helper()
	body := map[string]any{"instance": map[string]any{
		"instanceId": id, "hostName": "127.0.0.1", "app": app, "ipAddr": "127.0.0.1",
		"status": "UP", "overriddenStatus": "UNKNOWN",
		"port":           map[string]any{"$": 8080, "@enabled": "true"},
		"securePort":     map[string]any{"$": 443, "@enabled": "false"},
		"dataCenterInfo": map[string]any{"@class": "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo", "name": "MyOwn"},
		"leaseInfo":      map[string]any{"renewalIntervalInSecs": 1, "durationInSecs": 90},
		"healthCheckUrl": health, "vipAddress": strings.ToLower(app),
	}}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, base+"/eureka/apps/"+app, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("register %s/%s = %d", app, id, resp.StatusCode)
	}
}
