package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/health"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication"
)

var dashNow = time.Date(2026, 11, 30, 21, 14, 38, 0, time.UTC)

const evilMeta = `<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=2">`

// fixedRegistry is a small registry at a fixed clock: two UP instances of
// APP-A (one with a javascript: status page), a DOWN one of APP-B, and an
// application whose name and metadata carry markup.
func fixedRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	now := dashNow
	reg := registry.New(registry.Options{Now: func() time.Time { return now }})
	add := func(app, id string, st registry.Status, statusURL string, md map[string]string) {
		t.Helper()
		in := &registry.Instance{
			InstanceID: id, HostName: id + ".local", App: app, IPAddr: "10.0.0.1", Status: st,
			Port: registry.Port{Number: 8080, Enabled: true}, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
			StatusPageURL: statusURL, Metadata: md, VIPAddress: strings.ToLower(app),
		}
		if _, err := reg.Register(in, false); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
	}
	add("app-a", "a1", registry.StatusUp, "http://a1.local:8080/actuator/info", map[string]string{"zone": "z1"})
	add("app-a", "a2", registry.StatusUp, "javascript:window.__pwned=3", nil)
	add("app-b", "b1", registry.StatusDown, "https://b1.local/info", nil)
	add(`evil<script>x</script>`, "e1", registry.StatusUp, "http://e1.local/", map[string]string{"note": evilMeta})
	if err := reg.Cancel("APP-B", "gone", false); err == nil {
		t.Fatal("cancel of a missing lease succeeded")
	}
	return reg
}

func fixedData() DashboardData {
	return DashboardData{
		Environment: "test", Datacenter: "default", Now: dashNow, Uptime: 26*time.Hour + 5*time.Minute,
		SelfPreservation: eviction.Status{
			SelfPreservationEnabled: true, LeaseExpirationEnabled: false, Threshold: 5, RenewsLastMinute: 2,
			ExpectedClients: 3,
			Banner:          "EMERGENCY! EUREKA MAY BE INCORRECTLY CLAIMING INSTANCES ARE UP WHEN THEY'RE NOT. RENEWALS ARE LESSER THAN THRESHOLD AND HENCE THE INSTANCES ARE NOT BEING EXPIRED JUST TO BE SAFE.",
			RenewsHistory:   []registry.MinuteCount{{Minute: dashNow.Add(-2 * time.Minute), Count: 6}, {Minute: dashNow.Add(-time.Minute), Count: 2}},
		},
		Peers: []replication.PeerStatus{
			{URL: "http://peer1:8761/eureka/", Host: "peer1", State: "up", LastSuccess: dashNow.Add(-3 * time.Second)},
			{URL: "http://peer2:8762/eureka/", Host: "peer2", State: "failing", QueueDepth: 4, Lag: 12 * time.Second,
				LastError: "connection refused", LastErrorAt: dashNow.Add(-time.Second)},
		},
		ReplicaInfo: ReplicaStats([]string{"http://peer1:8761/eureka/", "http://peer2:8762/eureka/"},
			[]string{"http://peer1:8761/eureka/"}, []string{"http://peer2:8762/eureka/"}),
		GeneralInfo:  [][2]string{{"num-of-cpus", "2"}, {"server-uptime", "1 day 02:05"}},
		InstanceInfo: [][2]string{{"ipAddr", "10.0.0.9"}, {"status", "UP"}},
	}
}

func newDashServer(t *testing.T, reg *registry.Registry, path string, data DashboardData) *Server {
	t.Helper()
	s := New(Config{}, Deps{Registry: reg, Now: func() time.Time { return dashNow }})
	s.MountDashboard(path, DashboardSourceFunc(func() DashboardData { return data }))
	return s
}

func get(t *testing.T, s *Server, path string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w
}

func mustContain(t *testing.T, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("page lacks %q", w)
		}
	}
}

func TestDashboardStatusPage(t *testing.T) {
	s := newDashServer(t, fixedRegistry(t), "/", fixedData())
	w := get(t, s, "/")
	if w.Code != http.StatusOK {
		t.Fatalf("GET / = %d", w.Code)
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("content type %q", ct)
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	body := w.Body.String()
	mustContain(t, body,
		"<title>Eureka</title>", `<body id="one"`,
		`<a class="nav-link px-2" href="/">Home</a>`,
		`<a class="nav-link px-2" href="/lastn">Last 1000 since startup</a>`,
		"<h1>System Status</h1>", "<h1>DS Replicas</h1>", "<h1>Instances currently registered with Eureka</h1>",
		"<h1>General Info</h1>", "<h1>Instance Info</h1>",
		`<tr><td>Environment</td><td id="environment">test</td></tr>`,
		`<tr><td>Data center</td><td id="datacenter">default</td></tr>`,
		`<td id="currentTime">2026-11-30T21:14:38 &#43;0000</td>`,
		`<td id="upTime">1 day 02:05</td>`,
		`<tr><td>Lease expiration enabled</td><td id="leaseExpirationEnabled">false</td></tr>`,
		`<tr><td>Renews threshold</td><td id="renewsThreshold">5</td></tr>`,
		`<tr><td>Renews (last min)</td><td id="renewsLastMin">2</td></tr>`,
		`<h4 id="uptime"><font size="+1" color="red"><b>EMERGENCY! EUREKA MAY BE INCORRECTLY CLAIMING INSTANCES ARE UP WHEN THEY&#39;RE NOT. RENEWALS ARE LESSER THAN THRESHOLD AND HENCE THE INSTANCES ARE NOT BEING EXPIRED JUST TO BE SAFE.</b></font></h4>`,
		`<ul class="list-group mb-3" id="replicas">`,
		`<li class="list-group-item"><a href="http://peer1:8761/eureka/">peer1</a></li>`,
		`<li class="list-group-item"><a href="http://peer2:8762/eureka/">peer2</a></li>`,
		`<span class="pill bad">failing</span></td><td>4</td><td>12s</td><td>never</td><td>2026-11-30 21:14:37 UTC: connection refused</td>`,
		`<span class="pill ok">up</span></td><td>0</td><td>0s</td><td>3s ago</td>`,
		`<table id="instances" class="table table-striped">`,
		`<thead><tr><th>Application</th><th>AMIs</th><th>Availability Zones</th><th>Status</th></tr></thead>`,
		`<td><b>APP-A</b></td><td><b>n/a</b> (2)</td><td><b></b> (2)</td><td><b>UP</b> (2) - <a href="http://a1.local:8080/actuator/info" target="_blank">a1</a>, a2<br>`,
		`<td><b>APP-B</b></td><td><b>n/a</b> (1)</td><td><b></b> (1)</td><td><font color=red size=+1><b>DOWN</b> (1) - </font><a href="https://b1.local/info" target="_blank">b1</a><br>`,
		`<table id="generalInfo" class="table table-striped">`,
		`<tr><td>num-of-cpus</td><td>2</td></tr>`,
		`<tr><td>registered-replicas</td><td>http://peer1:8761/eureka/, http://peer2:8762/eureka/</td></tr>`,
		`<tr><td>available-replicas</td><td>http://peer1:8761/eureka/,</td></tr>`,
		`<tr><td>unavailable-replicas</td><td>http://peer2:8762/eureka/,</td></tr>`,
		`<table id="instanceInfo" class="table table-striped">`,
		`<tr><td>ipAddr</td><td>10.0.0.9</td></tr>`, `<tr><td>status</td><td>UP</td></tr>`,
		`<input id="search" type="search"`,
		`<span id="matchCount">3 applications, 4 instances</span>`,
		`<line class="threshold" x1="0" x2="600" y1="34.3" y2="34.3"></line>`,
		`<polyline class="renews" points="589.8,17.1 600.0,85.7"></polyline>`,
		`<link rel="stylesheet" href="./goreka/static/dashboard.css">`,
		`<script src="./goreka/static/dashboard.js" defer></script>`,
	)
	// Applications sorted by name, as Spring lists them.
	if a, b := strings.Index(body, "<b>APP-A</b>"), strings.Index(body, "<b>APP-B</b>"); a < 0 || b < a {
		t.Errorf("applications out of order: APP-A at %d, APP-B at %d", a, b)
	}
}

func TestDashboardEscapesRegistrantData(t *testing.T) {
	s := newDashServer(t, fixedRegistry(t), "/", fixedData())
	body := get(t, s, "/").Body.String()
	mustContain(t, body, `<b>EVIL&lt;SCRIPT&gt;X&lt;/SCRIPT&gt;</b>`)
	if n := strings.Count(strings.ToLower(body), "<script"); n != 1 {
		t.Errorf("page has %d <script> tags, want only goreka's own", n)
	}
	for _, bad := range []string{"onerror=", "javascript:", "<img src=x"} {
		if strings.Contains(strings.ToLower(body), bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	// The javascript: status page is shown as text, not as a link.
	if !regexp.MustCompile(`</a>, a2<br>`).MatchString(body) {
		t.Error("a2 (javascript: status page) is not plain text")
	}

	w := get(t, s, dashboardAPIPath)
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("API content type %q", ct)
	}
	raw := w.Body.String()
	if strings.Contains(raw, "<script") || strings.Contains(raw, "<img") {
		t.Error("JSON carries raw markup; it must escape < and >")
	}
	var j dashboardJSON
	if err := json.Unmarshal(w.Body.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	var a2, e1 instanceView
	for _, a := range j.Applications {
		for _, in := range a.Instances {
			switch in.ID {
			case "a2":
				a2 = in
			case "e1":
				e1 = in
			}
		}
	}
	if a2.Link != "" || a2.StatusPageURL != "javascript:window.__pwned=3" {
		t.Errorf("a2 link %q, status page %q: want no link and the raw URL as data", a2.Link, a2.StatusPageURL)
	}
	if e1.Metadata["note"] != evilMeta || e1.App != "EVIL<SCRIPT>X</SCRIPT>" {
		t.Errorf("e1 = %+v: registrant data must reach the page intact (and be rendered as text)", e1)
	}
}

func TestDashboardAPI(t *testing.T) {
	s := newDashServer(t, fixedRegistry(t), "/", fixedData())
	var j dashboardJSON
	if err := json.Unmarshal(get(t, s, dashboardAPIPath).Body.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if j.Time != "2026-11-30T21:14:38 +0000" || j.Uptime != "1 day 02:05" || j.RenewsThreshold != 5 || j.RenewsLastMinute != 2 ||
		j.LeaseExpirationEnabled || !j.SelfPreservationEnabled || j.ExpectedClients != 3 || !strings.HasPrefix(j.Banner, "EMERGENCY!") {
		t.Errorf("status fields: %+v", j)
	}
	if len(j.RenewsHistory) != 2 || j.RenewsHistory[0] != 6 || j.RenewsHistory[1] != 2 {
		t.Errorf("history %v", j.RenewsHistory)
	}
	if j.Instances != 4 || len(j.Applications) != 3 || j.Applications[0].Name != "APP-A" {
		t.Errorf("applications: %d instances, %+v", j.Instances, j.Applications)
	}
	a1 := j.Applications[0].Instances[0]
	if a1.ID != "a1" || a1.Status != "UP" || a1.Link != "http://a1.local:8080/actuator/info" || a1.Metadata["zone"] != "z1" ||
		a1.HostName != "a1.local" || a1.Port != 8080 || a1.Registered != "2026-11-30 21:14:38 UTC" || a1.Duration != 90 {
		t.Errorf("a1 = %+v", a1)
	}
	if len(j.Peers) != 2 || j.Peers[1].State != "failing" || j.Peers[1].QueueDepth != 4 || j.Peers[1].Lag != "12s" {
		t.Errorf("peers %+v", j.Peers)
	}
	if g := j.GeneralInfo; len(g) != 5 || g[3] != [2]string{"available-replicas", "http://peer1:8761/eureka/,"} {
		t.Errorf("general info %v", g)
	}
}

func TestDashboardEmptyAndNoBanner(t *testing.T) {
	d := fixedData()
	d.SelfPreservation.Banner, d.Peers = "", nil
	reg := registry.New(registry.Options{Now: func() time.Time { return dashNow }})
	s := newDashServer(t, reg, "/", d)
	body := get(t, s, "/").Body.String()
	mustContain(t, body, `<tr><td colspan="4">No instances available</td></tr>`, `<div id="banner"></div>`,
		`<tr><td colspan="6">No peers</td></tr>`)
	if strings.Contains(body, `id="uptime"`) {
		t.Error("banner shown without a banner text")
	}
}

func TestDashboardLastN(t *testing.T) {
	s := newDashServer(t, fixedRegistry(t), "/", fixedData())
	w := get(t, s, "/lastn")
	if w.Code != http.StatusOK {
		t.Fatalf("GET /lastn = %d", w.Code)
	}
	body := w.Body.String()
	mustContain(t, body,
		"<title>Eureka - Last N events</title>", "<h1>System Status</h1>", "<h1>DS Replicas</h1>",
		">Last 1000 cancelled leases</a>", ">Last 1000 newly registered leases</a>",
		`<table id="lastNCanceled"`, `<table id="lastNRegistered"`,
		"<tr><td>Nov 30, 2026, 9:14:41 PM</td><td>EVIL&lt;SCRIPT&gt;X&lt;/SCRIPT&gt;(e1)</td></tr>",
		"<tr><td>Nov 30, 2026, 9:14:42 PM</td><td>APP-B(gone)</td></tr>",
	)
	// Newest first.
	if e, a := strings.Index(body, "(e1)"), strings.Index(body, "APP-A(a1)"); e < 0 || a < e {
		t.Errorf("registered leases not newest first: e1 at %d, a1 at %d", e, a)
	}
	if strings.Contains(body, "No results available") {
		t.Error("No results available shown for non-empty lists")
	}
	empty := newDashServer(t, registry.New(registry.Options{}), "/", fixedData())
	if n := strings.Count(get(t, empty, "/lastn").Body.String(), `<td colspan="2">No results available</td>`); n != 2 {
		t.Errorf("empty lists show %d 'No results available', want 2", n)
	}
}

func TestDashboardCustomPath(t *testing.T) {
	s := newDashServer(t, fixedRegistry(t), "/dashboard", fixedData())
	if c := get(t, s, "/").Code; c != http.StatusNotFound {
		t.Errorf("GET / with the dashboard at /dashboard = %d, want 404", c)
	}
	body := get(t, s, "/dashboard").Body.String()
	mustContain(t, body, `<a class="nav-link px-2" href="/dashboard">Home</a>`,
		`<a class="nav-link px-2" href="/dashboard/lastn">Last 1000 since startup</a>`,
		`href="./goreka/static/dashboard.css"`)
	// /dashboard/ is the same page (the server strips a trailing slash).
	if c := get(t, s, "/dashboard/").Code; c != http.StatusOK {
		t.Errorf("GET /dashboard/ = %d", c)
	}
	w := get(t, s, "/dashboard/lastn")
	if w.Code != http.StatusOK {
		t.Fatalf("GET /dashboard/lastn = %d", w.Code)
	}
	// Relative asset paths keep the page working behind a prefixing proxy.
	mustContain(t, w.Body.String(), `href="../goreka/static/dashboard.css"`, `data-root="../"`)
}

func TestDashboardDoesNotShadowAPI(t *testing.T) {
	s := newDashServer(t, fixedRegistry(t), "/", fixedData())
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/eureka/apps", nil)
	r.Header.Set("Accept", "application/json")
	s.ServeHTTP(w, r)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"applications"`) {
		t.Errorf("GET /eureka/apps = %d %.80s", w.Code, w.Body.String())
	}
	for _, p := range []string{"/eureka/", "/actuator/health", "/metrics", "/nope"} {
		if c := get(t, s, p).Code; c != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404 from the dashboard's routes", p, c)
		}
	}
}

func TestDashboardStatic(t *testing.T) {
	s := newDashServer(t, registry.New(registry.Options{}), "/", fixedData())
	for path, ct := range map[string]string{
		"/goreka/static/dashboard.js":  "text/javascript",
		"/goreka/static/dashboard.css": "text/css",
		"/goreka/static/favicon.svg":   "image/svg+xml",
	} {
		w := get(t, s, path)
		if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), ct) {
			t.Errorf("GET %s = %d %q", path, w.Code, w.Header().Get("Content-Type"))
		}
		if w.Body.Len() == 0 {
			t.Errorf("GET %s: empty", path)
		}
	}
	if c := get(t, s, "/goreka/static/nope.js").Code; c != http.StatusNotFound {
		t.Errorf("missing asset = %d", c)
	}
	// The page loads nothing from another origin (links to peers and status
	// pages are fine: they are not loaded).
	body := get(t, s, "/").Body.String()
	if m := regexp.MustCompile(`(?:src="|<link[^>]*href=")(?:https?:)?//`).FindString(body); m != "" {
		t.Errorf("page loads an external resource: %s", m)
	}
	js, _ := io.ReadAll(get(t, s, "/goreka/static/dashboard.js").Body)
	if strings.Contains(string(js), "innerHTML") || strings.Contains(string(js), "insertAdjacentHTML") {
		t.Error("dashboard.js parses strings as HTML")
	}
}

func TestFormatUptime(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "00:00"}, {59 * time.Second, "00:00"}, {65 * time.Minute, "01:05"}, {24 * time.Hour, "1 day 00:00"},
		{49*time.Hour + 30*time.Minute, "2 days 01:30"},
	} {
		if got := formatUptime(tc.d); got != tc.want {
			t.Errorf("formatUptime(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestHTTPURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:1/x":            "http://h:1/x",
		"HTTPS://h/x":             "https://h/x",
		"javascript:alert(1)":     "",
		"JavaScript://h/%0aalert": "",
		"data:text/html,<b>":      "",
		"httpx://h/":              "",
		"/relative":               "",
		"":                        "",
		"http:///nohost":          "",
	} {
		if got := httpURL(in); got != want {
			t.Errorf("httpURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRootRel(t *testing.T) {
	for p, want := range map[string]string{"/": "./", "/lastn": "./", "/dashboard": "./", "/dashboard/lastn": "../", "/a/b/lastn": "../../"} {
		if got := rootRel(p); got != want {
			t.Errorf("rootRel(%q) = %q, want %q", p, got, want)
		}
	}
}

// The lifecycle section and the probe guard's banner show what the source
// gives, escaped, in the page and the live data.
func TestDashboardLifecycle(t *testing.T) {
	d := fixedData()
	d.Health.Alert = "HEALTH PROBES SUSPENDED"
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	d.Lifecycle = &health.Lifecycle{
		Counts: map[health.State]int{health.Up: 60, health.Suspect: 1, health.Held: 20, health.Gone: 20},
		Entries: []health.Entry{{App: "SVC", ID: "a<b", State: health.Held, Status: registry.StatusUp, LastHeartbeat: at,
			Probe: &health.Probe{LastAt: at.Add(5 * time.Minute), Last: health.Result{Detail: "HTTP 200"}, Failures: 1,
				DownReason: "DOWN by probe: 3 failures, connection refused"}}},
	}
	s := newDashServer(t, fixedRegistry(t), "/", d)
	body := get(t, s, "/").Body.String()
	mustContain(t, body, `<div id="healthAlert">`, "HEALTH PROBES SUSPENDED", "<h2>Instance lifecycle</h2>",
		"<b>held</b> 20", "a&lt;b", "DOWN by probe: 3 failures, connection refused")
	api := get(t, s, dashboardAPIPath).Body.String()
	mustContain(t, api, `"healthAlert":"HEALTH PROBES SUSPENDED"`, `{"state":"held","count":20}`, `"note":"DOWN by probe: 3 failures, connection refused"`,
		`"lastHeartbeat":"2026-03-01 12:00:00 UTC","lastProbe":"2026-03-01 12:05:00 UTC: HTTP 200"`)
}

// A static registration is marked on the page and in the live data; an
// ordinary instance is not.
func TestDashboardMarksStatic(t *testing.T) {
	reg := fixedRegistry(t)
	db := &registry.Instance{InstanceID: "pg-1", HostName: "db.internal", App: "POSTGRES", IPAddr: "10.0.0.5",
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
	if _, err := reg.SetStatic([]*registry.Instance{db}); err != nil {
		t.Fatal(err)
	}
	s := newDashServer(t, reg, "/", fixedData())
	page := get(t, s, "/").Body.String()
	mustContain(t, page, `pg-1 <span class="static" title="static registration (goreka.static-instances)">static</span>`)
	if strings.Count(page, `class="static"`) != 1 {
		t.Errorf("static marks: %d, want 1", strings.Count(page, `class="static"`))
	}
	var j dashboardJSON
	if err := json.Unmarshal(get(t, s, dashboardAPIPath).Body.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	for _, a := range j.Applications {
		for _, in := range a.Instances {
			if in.Static != (in.ID == "pg-1") {
				t.Errorf("%s: static %v", in.ID, in.Static)
			}
		}
	}
}

// An imported instance's row says source=kubernetes, on the page and in
// its data.
func TestDashboardImported(t *testing.T) {
	reg := registry.New(registry.Options{Now: func() time.Time { return dashNow }})
	in := &registry.Instance{App: "WEB", InstanceID: "web-0", HostName: "10.244.0.1", IPAddr: "10.244.0.1", Status: registry.StatusUp,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}, Metadata: map[string]string{registry.MetaSource: "kubernetes"}}
	if _, err := reg.Import(in); err != nil {
		t.Fatal(err)
	}
	s := newDashServer(t, reg, "/", fixedData())
	mustContain(t, get(t, s, "/").Body.String(), `web-0 <span class="static" title="imported from kubernetes: no lease, withdrawn when its source withdraws it">kubernetes</span>`)
	var j dashboardJSON
	if err := json.Unmarshal(get(t, s, dashboardAPIPath).Body.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if v := j.Applications[0].Instances[0]; !v.Static || v.Source != "kubernetes" {
		t.Errorf("row %+v, want static and source kubernetes", v)
	}
}
