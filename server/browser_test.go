//go:build browser

// The browser test builds goreka, starts it on a free loopback port
// (internal/proctest), registers a few dozen instances over HTTP (two of
// them hostile), and drives headless Chromium through the dashboard:
//
//	go test -tags browser -run Browser -v ./server
//
// It needs Chromium (apt-get install chromium; or set GOREKA_CHROMIUM) and
// saves dashboard.png under $GOREKA_TEST_OUT (default: out/browser at the
// module root, which git ignores).
package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/internal/proctest"
)

const (
	evilApp  = `evil"><img src=x onerror=window.__pwned=5><script>window.__pwned=6`
	evilMeta = `<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=2;document.title='pwned'">`
)

func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GOREKA_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: apt-get install chromium, or set GOREKA_CHROMIUM")
	return ""
}

// startGoreka builds and runs the goreka binary; it returns its base URL.
func startGoreka(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := proctest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	port := proctest.Port(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	args = append([]string{
		"--server.port=" + strconv.Itoa(port), "--server.address=127.0.0.1",
		"--eureka.client.register-with-eureka=false", "--eureka.client.fetch-registry=false",
		// A peer that refuses connections, to show replication health.
		"--eureka.client.service-url.defaultZone=http://127.0.0.1:9/eureka/",
		"--eureka.environment=browser-test",
	}, args...)
	var logs proctest.Log
	p, err := proctest.Start(proctest.Options{Name: "goreka", Path: bin, Args: args, Stdout: &logs, Stderr: &logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Stop(syscall.SIGKILL, 10*time.Second)
		if t.Failed() {
			t.Logf("goreka logs:\n%s", logs.String())
		}
	})
	if err := p.WaitHTTP(nil, base+"/actuator/health", 20*time.Second); err != nil {
		t.Fatalf("timed out waiting for goreka to serve: %v", err)
	}
	return base
}

// waitUntil polls cond: the browser and the server run on their own
// clocks, so this test has to wait for them.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

type reg struct {
	app, id, status, statusPage string
	metadata                    map[string]string
}

func register(t *testing.T, base string, r reg) {
	t.Helper()
	host := strings.ToLower(r.id) + ".svc.local"
	body := map[string]any{"instance": map[string]any{
		"instanceId": r.id, "hostName": host, "app": r.app, "ipAddr": "10.1.0." + strconv.Itoa(len(r.id)),
		"status": r.status, "overriddenStatus": "UNKNOWN",
		"port":           map[string]any{"$": 8080, "@enabled": "true"},
		"securePort":     map[string]any{"$": 443, "@enabled": "false"},
		"dataCenterInfo": map[string]any{"@class": "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo", "name": "MyOwn"},
		"leaseInfo":      map[string]any{"renewalIntervalInSecs": 30, "durationInSecs": 90},
		"metadata":       r.metadata,
		"statusPageUrl":  r.statusPage, "homePageUrl": "http://" + host + ":8080/", "healthCheckUrl": "http://" + host + ":8080/actuator/health",
		"vipAddress": strings.ToLower(r.app), "secureVipAddress": strings.ToLower(r.app),
	}}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, base+"/eureka/apps/"+url.PathEscape(r.app), bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("register %s/%s = %d", r.app, r.id, resp.StatusCode)
	}
}

// fleet is 40 instances in 6 applications: mostly UP, some DOWN and
// STARTING, one with a javascript: status page and one whose application
// name and metadata carry markup.
func fleet() []reg {
	var out []reg
	apps := []struct {
		name string
		n    int
	}{{"ORDERS", 9}, {"PAYMENTS", 6}, {"INVENTORY", 10}, {"GATEWAY", 4}, {"USERS", 10}}
	for _, a := range apps {
		for i := 1; i <= a.n; i++ {
			id := fmt.Sprintf("%s-%d", strings.ToLower(a.name), i)
			st := "UP"
			switch {
			case a.name == "INVENTORY" && i == 7:
				st = "DOWN"
			case a.name == "USERS" && i == 10:
				st = "STARTING"
			}
			sp := "http://" + id + ".svc.local:8080/actuator/info"
			if a.name == "GATEWAY" && i == 4 {
				sp = "javascript:window.__pwned=3"
			}
			out = append(out, reg{app: a.name, id: id, status: st, statusPage: sp,
				metadata: map[string]string{"zone": "zone-" + string(rune('a'+i%3)), "version": "1." + strconv.Itoa(i%4)}})
		}
	}
	out = append(out, reg{app: evilApp, id: "evil-1", status: "UP", statusPage: "http://evil-1.svc.local/",
		metadata: map[string]string{"note": evilMeta, `"><svg onload=window.__pwned=4>`: "key"}})
	return out
}

func TestBrowserDashboard(t *testing.T) {
	browser := chromium(t)
	base := startGoreka(t)
	regs := fleet()
	for _, r := range regs {
		register(t, base, r)
	}

	c := startBrowser(t, browser, t.TempDir())
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	eval := func(expr string, out any) {
		t.Helper()
		must(c.eval(ctx, expr, out))
	}
	waitJS := func(what, expr string) {
		t.Helper()
		defer func() {
			if t.Failed() {
				var dbg string
				_ = c.eval(ctx, `document.getElementById('search') ? document.getElementById('search').value + ' | ' + (document.getElementById('matchCount') || {}).textContent : document.title`, &dbg)
				t.Logf("while waiting for %s: %s", what, dbg)
			}
		}()
		waitUntil(t, 15*time.Second, what, func() bool {
			var ok bool
			return c.eval(ctx, expr, &ok) == nil && ok
		})
	}
	click := func(selector string) {
		t.Helper()
		var box struct{ X, Y float64 }
		eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) throw new Error('no element %s');
			e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();
			return {X: r.left + r.width / 2, Y: r.top + r.height / 2}; })()`, selector, strings.ReplaceAll(selector, "'", "")), &box)
		for _, typ := range []string{"mousePressed", "mouseReleased"} {
			must(c.call(ctx, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": box.X, "y": box.Y, "button": "left", "clickCount": 1}, nil))
		}
	}
	typeInto := func(selector, text string) {
		t.Helper()
		eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.focus(); e.select(); return true; })()`, selector), nil)
		must(c.call(ctx, "Input.insertText", map[string]any{"text": text}, nil))
	}
	visibleApps := func() (names []string) {
		t.Helper()
		eval(`[...document.querySelectorAll('#instances tr.app')].map(r => r.querySelector('b').textContent)`, &names)
		return names
	}

	must(c.call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil))
	must(c.call(ctx, "Page.navigate", map[string]any{"url": base + "/"}, nil))
	waitJS("the page and its first live refresh", `document.readyState === 'complete' && !!document.querySelector('#live.ok')`)

	// Spring's sections, ids and texts.
	var h1 []string
	eval(`[...document.querySelectorAll('h1')].map(h => h.textContent)`, &h1)
	want := []string{"System Status", "DS Replicas", "Instances currently registered with Eureka", "General Info", "Instance Info"}
	if strings.Join(h1, "|") != strings.Join(want, "|") {
		t.Errorf("h1 = %q, want %q", h1, want)
	}
	var page struct {
		Title, Env, Threshold, LeaseExp string
		Tables                          []string
		GeneralRows                     []string
		Replicas                        []string
		Nav                             []string
	}
	eval(`({
		Title: document.title,
		Env: document.getElementById('environment').textContent,
		Threshold: document.getElementById('renewsThreshold').textContent,
		LeaseExp: document.getElementById('leaseExpirationEnabled').textContent,
		Tables: ['instances', 'generalInfo', 'instanceInfo'].filter(id => document.querySelector('table#' + id)),
		GeneralRows: [...document.querySelectorAll('#generalInfo tbody tr td:first-child')].map(td => td.textContent),
		Replicas: [...document.querySelectorAll('#replicas a')].map(a => a.textContent),
		Nav: [...document.querySelectorAll('a.nav-link')].map(a => a.textContent + '=' + a.getAttribute('href')),
	})`, &page)
	if page.Title != "Eureka" || page.Env != "browser-test" || page.Threshold == "" || (page.LeaseExp != "true" && page.LeaseExp != "false") {
		t.Errorf("system status: %+v", page)
	}
	if len(page.Tables) != 3 {
		t.Errorf("tables present: %v", page.Tables)
	}
	for _, row := range []string{"registered-replicas", "available-replicas", "unavailable-replicas", "server-uptime"} {
		if !strings.Contains(strings.Join(page.GeneralRows, ","), row) {
			t.Errorf("General Info lacks %s: %v", row, page.GeneralRows)
		}
	}
	if strings.Join(page.Replicas, ",") != "127.0.0.1" {
		t.Errorf("DS Replicas = %v", page.Replicas)
	}
	if strings.Join(page.Nav, ",") != "Home=/,Last 1000 since startup=/lastn" {
		t.Errorf("navbar = %v", page.Nav)
	}
	apps := visibleApps()
	if len(apps) != 6 || apps[0] != strings.ToUpper(evilApp) || apps[5] != "USERS" {
		t.Errorf("applications = %q", apps)
	}
	var links int
	eval(`document.querySelectorAll('#instances a[target=_blank]').length`, &links)
	if links != len(regs)-1 {
		t.Errorf("%d status page links, want %d (all but the javascript: one)", links, len(regs)-1)
	}

	// Search: by application, then by metadata.
	typeInto("#search", "payments")
	waitJS("the filter by application", `document.querySelectorAll('#instances tr.app').length === 1 && document.querySelectorAll('#instances tr.inst-row').length === 6`)
	if a := visibleApps(); len(a) != 1 || a[0] != "PAYMENTS" {
		t.Errorf("filter payments: %v", a)
	}
	var n int
	eval(`document.querySelectorAll('#instances tr.inst-row').length`, &n)
	if n != 6 {
		t.Errorf("filter payments shows %d instances, want 6", n)
	}
	typeInto("#search", "version=1.3 zone-a")
	wantN := 0
	for _, r := range regs {
		if r.metadata["version"] == "1.3" && r.metadata["zone"] == "zone-a" {
			wantN++
		}
	}
	// Each wait names what only the new filter shows: the list re-renders
	// on the next animation frame, not synchronously.
	waitJS("the filter by metadata", fmt.Sprintf(`document.getElementById('matchCount').textContent.endsWith(', %d of %d instances match')
		&& document.querySelectorAll('#instances tr.inst-row').length === %d`, wantN, len(regs), wantN))

	// The hostile registrant: its markup shows as text once expanded.
	typeInto("#search", "evil-1")
	waitJS("the evil instance", `document.querySelectorAll('#instances tr.inst-row').length === 1 && !!document.querySelector('#instances tr.inst-row[data-id="evil-1"]')`)
	click(`#instances tr.inst-row button[data-act=inst]`)
	waitJS("the instance details", `!!document.querySelector('#instances .metadata')`)
	var meta string
	eval(`document.querySelector('#instances .metadata').textContent`, &meta)
	if !strings.Contains(meta, evilMeta) || !strings.Contains(meta, `"><svg onload=window.__pwned=4>`) {
		t.Errorf("metadata shown as %q, want the markup as text", meta)
	}

	// Take an instance out of service through the page.
	typeInto("#search", "orders-3")
	waitJS("orders-3", `document.querySelectorAll('#instances tr.inst-row').length === 1 && !!document.querySelector('#instances tr.inst-row[data-id="orders-3"]')`)
	click(`#instances tr.inst-row button[data-act=oos]`)
	waitJS("orders-3 to be OUT_OF_SERVICE", `(document.querySelector('#instances tr.inst-row .status') || {}).textContent === 'OUT_OF_SERVICE'`)
	var flash string
	eval(`document.getElementById('flash').textContent`, &flash)
	if !strings.Contains(flash, "ORDERS / orders-3 taken out of service") {
		t.Errorf("flash = %q", flash)
	}
	if st := instanceStatus(t, base, "ORDERS", "orders-3"); st != "OUT_OF_SERVICE" {
		t.Errorf("REST API says orders-3 is %s", st)
	}
	var springCell string
	eval(`document.querySelector('#instances tr.app td:last-child').textContent`, &springCell)
	if !strings.Contains(springCell, "OUT_OF_SERVICE (1) - orders-3") || !strings.Contains(springCell, "UP (8) - ") {
		t.Errorf("status cell = %q", springCell)
	}

	// Screenshot: the filter cleared, the evil instance and orders-3 expanded.
	eval(`(() => { const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input')); return true; })()`, nil)
	waitJS("the full list", `document.querySelectorAll('#instances tr.app').length === 6`)
	click(`#instances tr.app[data-app="ORDERS"] button[data-act=app]`)
	click(`#instances tr.app:first-child button[data-act=app]`)
	waitJS("two expanded applications", `document.querySelectorAll('#instances tr.detail').length === 2`)
	var height float64
	eval(`document.documentElement.scrollHeight`, &height)
	must(c.call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": int(height), "deviceScaleFactor": 1, "mobile": false}, nil))
	eval(`window.scrollTo(0, 0), true`, nil)
	var shot struct {
		Data string `json:"data"`
	}
	must(c.call(ctx, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot))
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	must(err)
	out := os.Getenv("GOREKA_TEST_OUT")
	if out == "" {
		out = filepath.Join("..", "out", "browser")
	}
	must(os.MkdirAll(out, 0o755))
	path := filepath.Join(out, "dashboard.png")
	must(os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s (%d bytes)", path, len(png))

	noInjection(t, c, ctx, "Eureka")

	// The last-N page.
	must(c.call(ctx, "Page.navigate", map[string]any{"url": base + "/lastn"}, nil))
	waitJS("the last-N page", `document.readyState === 'complete' && document.title === 'Eureka - Last N events' && !!document.querySelector('#live.ok')`)
	var lastn struct {
		Registered int
		First      string
		Tabs       []string
	}
	eval(`({Registered: document.querySelectorAll('#lastNRegistered tbody tr').length,
		First: document.querySelector('#lastNRegistered tbody tr td:last-child').textContent,
		Tabs: [...document.querySelectorAll('.tab')].map(a => a.textContent)})`, &lastn)
	if lastn.Registered != len(regs) || lastn.First != strings.ToUpper(evilApp)+"(evil-1)" ||
		strings.Join(lastn.Tabs, "|") != "Last 1000 cancelled leases|Last 1000 newly registered leases" {
		t.Errorf("last-N page: %+v", lastn)
	}

	noInjection(t, c, ctx, "Eureka - Last N events")

	// The live view: the page watches the registry's changes, so a new
	// instance (and a cancelled one) shows without a reload and long before
	// the next poll (30 s while the watch is open, 5 s without it).
	must(c.call(ctx, "Page.navigate", map[string]any{"url": base + "/"}, nil))
	waitJS("the page watching changes", `document.readyState === 'complete' && !!document.querySelector('#live.ok[data-mode=watch]')`)
	var before string
	eval(`document.getElementById('currentTime').textContent`, &before)
	start := time.Now()
	register(t, base, reg{app: "LIVE", id: "live-1", status: "UP", statusPage: "http://live-1.svc.local/"})
	waitJS("the new instance on the page", `!!document.querySelector('#instances tr.app[data-app="LIVE"]')`)
	appeared := time.Since(start)
	start = time.Now()
	req, _ := http.NewRequest(http.MethodDelete, base+"/eureka/apps/LIVE/live-1", nil)
	resp, err := http.DefaultClient.Do(req)
	must(err)
	resp.Body.Close()
	waitJS("the cancelled instance gone from the page", `!document.querySelector('#instances tr.app[data-app="LIVE"]')`)
	gone := time.Since(start)
	t.Logf("live view: registration shown after %v, cancel after %v", appeared, gone)
	if appeared > 2500*time.Millisecond || gone > 2500*time.Millisecond {
		t.Errorf("live view took %v / %v: not faster than the 5 s poll", appeared, gone)
	}
	noInjection(t, c, ctx, "Eureka")

	// Without EventSource the page falls back to the 5 s poll.
	must(c.call(ctx, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": "delete window.EventSource;"}, nil))
	must(c.call(ctx, "Page.navigate", map[string]any{"url": base + "/"}, nil))
	waitJS("the page polling", `document.readyState === 'complete' && !window.EventSource && !!document.querySelector('#live.ok[data-mode=poll]')`)
	start = time.Now()
	register(t, base, reg{app: "POLLED", id: "polled-1", status: "UP", statusPage: "http://polled-1.svc.local/"})
	waitJS("the new instance by the poll", `!!document.querySelector('#instances tr.app[data-app="POLLED"]')`)
	t.Logf("without EventSource: registration shown after %v (poll)", time.Since(start))
	noInjection(t, c, ctx, "Eureka")
}

// noInjection fails if a registrant's markup became live in the page: a
// script set window.__pwned or the title, or an element with an event
// handler or a javascript: link exists. goreka's own script must not have
// thrown either.
func noInjection(t *testing.T, c *cdp, ctx context.Context, title string) {
	t.Helper()
	var p struct {
		Pwned   any
		Title   string
		Scripts int
		Inject  int
	}
	if err := c.eval(ctx, `({Pwned: window.__pwned === undefined ? null : window.__pwned, Title: document.title,
		Scripts: document.scripts.length,
		Inject: document.querySelectorAll('img[onerror], svg[onload], [onload], [onerror], a[href^="javascript:" i]').length})`, &p); err != nil {
		t.Fatal(err)
	}
	if p.Pwned != nil || p.Title != title || p.Scripts != 1 || p.Inject != 0 {
		t.Errorf("injected markup took effect: %+v", p)
	}
	if ex := c.exceptions(); len(ex) > 0 {
		t.Errorf("page threw: %v", ex)
	}
}

func instanceStatus(t *testing.T, base, app, id string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/eureka/apps/"+app+"/"+id, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Instance struct {
			Status string `json:"status"`
		} `json:"instance"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v.Instance.Status
}
