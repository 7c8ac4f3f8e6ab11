package api

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
	"github.com/goreka/goreka/server/api/wire"
)

func init() { gin.SetMode(gin.ReleaseMode) }

var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t     *testing.T
	clock *clocktest.Clock
	reg   *registry.Registry
	api   *API
	eng   *gin.Engine
	srv   *httptest.Server
}

// newFixture is a registry wired to an API exactly as cmd/goreka wires it
// (OnEvent), served over HTTP.
func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: clocktest.New(epoch)}
	f.reg = registry.New(registry.Options{Now: f.clock.Now, OnEvent: func(e registry.Event) { f.api.OnEvent(e) }})
	cfg.Now = f.clock.Now
	f.api = New(f.reg, cfg)
	f.eng = gin.New()
	f.api.Mount(f.eng)
	f.srv = httptest.NewServer(f.eng)
	t.Cleanup(f.srv.Close)
	return f
}

func inst(app, id string) *registry.Instance {
	return &registry.Instance{InstanceID: id, App: app, HostName: id + ".local", IPAddr: "10.0.0.1",
		Port: registry.Port{Number: 8080, Enabled: true}, SecurePort: registry.Port{Number: 8443},
		VIPAddress: strings.ToLower(app), SecureVIPAddress: strings.ToLower(app) + "-secure",
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}, Metadata: map[string]string{}}
}

func (f *fixture) register(in *registry.Instance) {
	f.t.Helper()
	if _, err := f.reg.Register(in, false); err != nil {
		f.t.Fatal(err)
	}
}

// get decodes a 200 answer into v and returns the status.
func (f *fixture) get(path string, v any) int {
	f.t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			f.t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	} else if _, isErr := v.(*wire.ErrorAnswer); isErr {
		if err := json.Unmarshal(body, v); err != nil {
			f.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
	} else if v != nil {
		f.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return resp.StatusCode
}

func ids(p wire.InstancesPage) []string {
	var out []string
	for _, in := range p.Instances {
		out = append(out, in.App+"/"+in.ID)
	}
	return out
}

func TestInstancesFiltersAndShape(t *testing.T) {
	f := newFixture(t, Config{})
	a1 := inst("ORDERS", "o1")
	a1.Metadata = map[string]string{"zone": "a", "tier": "web"}
	a1.VIPAddress = "orders,shop"
	a2 := inst("ORDERS", "o2")
	a2.Metadata = map[string]string{"zone": "b", "tier": "web"}
	b1 := inst("BILLING", "b1")
	b1.Metadata = map[string]string{"zone": "a"}
	b1.Status = registry.StatusDown
	for _, in := range []*registry.Instance{a1, a2, b1} {
		f.register(in)
	}
	cases := []struct {
		query string
		want  []string
	}{
		{"", []string{"BILLING/b1", "ORDERS/o1", "ORDERS/o2"}},
		{"?app=orders", []string{"ORDERS/o1", "ORDERS/o2"}},
		{"?app=NOPE", nil},
		{"?status=DOWN", []string{"BILLING/b1"}},
		{"?status=up", []string{"ORDERS/o1", "ORDERS/o2"}},
		{"?vip=shop", []string{"ORDERS/o1"}},
		{"?vip=orders", []string{"ORDERS/o1", "ORDERS/o2"}},
		{"?vip=order", nil}, // pieces compare exactly, as /vips does
		{"?svip=billing-secure", []string{"BILLING/b1"}},
		{"?metadata.zone=a", []string{"BILLING/b1", "ORDERS/o1"}},
		{"?metadata.zone=a&metadata.tier=web", []string{"ORDERS/o1"}},
		{"?metadata.zone=a&metadata.zone=b", nil}, // repeated: AND
		{"?metadata.zone=a&app=billing&status=DOWN", []string{"BILLING/b1"}},
		{"?metadata.missing=x", nil},
		{"?lifecycle=up", []string{"BILLING/b1", "ORDERS/o1", "ORDERS/o2"}},
		{"?lifecycle=held", nil},
	}
	for _, c := range cases {
		var p wire.InstancesPage
		if code := f.get(Prefix+"/instances"+c.query, &p); code != 200 {
			t.Fatalf("%s: %d", c.query, code)
		}
		if got := ids(p); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.query, got, c.want)
		}
		if p.Revision != f.reg.Revision() {
			t.Errorf("%s: revision %d, registry at %d", c.query, p.Revision, f.reg.Revision())
		}
		if p.Continue != "" {
			t.Errorf("%s: continue %q on a last page", c.query, p.Continue)
		}
	}

	// The shape: plain fields, no Eureka "$"/"@" wrappers.
	resp, err := http.Get(f.srv.URL + Prefix + "/instances?app=ORDERS&limit=1")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := raw["instances"].([]any)[0].(map[string]any)
	want := map[string]any{
		"app": "ORDERS", "id": "o1", "hostName": "o1.local", "ipAddr": "10.0.0.1", "status": "UP",
		"overriddenStatus": "UNKNOWN", "lifecycle": "up", "port": 8080.0, "portEnabled": true,
		"securePort": 8443.0, "securePortEnabled": false, "vipAddress": "orders,shop",
		"secureVipAddress": "orders-secure", "countryId": 0.0,
		"dataCenter": map[string]any{"name": "MyOwn"},
		"metadata":   map[string]any{"zone": "a", "tier": "web"},
		"lease": map[string]any{"renewalIntervalSeconds": 30.0, "durationSeconds": 90.0,
			"registered": "2025-03-01T12:00:00Z", "lastHeartbeat": "2025-03-01T12:00:00Z", "serviceUp": "2025-03-01T12:00:00Z"},
		"lastUpdated": "2025-03-01T12:00:00Z", "lastDirty": "2025-03-01T12:00:00Z", "revision": 1.0,
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("instance shape\n got %s\nwant %s", gb, wb)
	}
	if raw["continue"] == nil || raw["continue"] == "" {
		t.Errorf("no continue token on a full page: %v", raw)
	}
}

func TestInstancesPaging(t *testing.T) {
	f := newFixture(t, Config{})
	var all []string
	for a := range 4 {
		for i := range 9 {
			app := fmt.Sprintf("APP%d", a)
			id := fmt.Sprintf("i%02d", i)
			in := inst(app, id)
			in.Metadata["even"] = fmt.Sprint(i%2 == 0)
			f.register(in)
			all = append(all, app+"/"+id)
		}
	}
	walk := func(query string, limit int) []string {
		t.Helper()
		var got []string
		token := ""
		for pages := 0; ; pages++ {
			if pages > 100 {
				t.Fatal("paging does not end")
			}
			q := fmt.Sprintf("%s/instances?limit=%d%s", Prefix, limit, query)
			if token != "" {
				q += "&continue=" + url.QueryEscape(token)
			}
			var p wire.InstancesPage
			if code := f.get(q, &p); code != 200 {
				t.Fatalf("%s: %d", q, code)
			}
			if len(p.Instances) > limit {
				t.Fatalf("%d instances on a page of %d", len(p.Instances), limit)
			}
			got = append(got, ids(p)...)
			if p.Continue == "" {
				return got
			}
			token = p.Continue
		}
	}
	for _, limit := range []int{1, 4, 7, 9, 36, 100} {
		if got := walk("", limit); !slices.Equal(got, all) {
			t.Errorf("limit %d: got %v", limit, got)
		}
	}
	var even []string
	for i, k := range all {
		if i%9%2 == 0 {
			even = append(even, k)
		}
	}
	if got := walk("&metadata.even=true", 4); !slices.Equal(got, even) {
		t.Errorf("filtered paging: got %v, want %v", got, even)
	}

	// Instances that come and go between pages: the next page continues
	// after the last key it returned.
	var p wire.InstancesPage
	f.get(Prefix+"/instances?limit=10", &p)
	if err := f.reg.Cancel("APP1", "i00", false); err != nil { // the 10th item
		t.Fatal(err)
	}
	f.register(inst("APP1", "i00a"))
	f.register(inst("APP0", "i99")) // before the token: not seen on later pages
	var next wire.InstancesPage
	f.get(Prefix+"/instances?limit=3&continue="+url.QueryEscape(p.Continue), &next)
	if got, want := ids(next), []string{"APP1/i00a", "APP1/i01", "APP1/i02"}; !slices.Equal(got, want) {
		t.Errorf("after changes: got %v, want %v", got, want)
	}
}

func TestLifecycle(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("A", "quiet"))
	f.register(inst("A", "beating"))
	lc := func() map[string]Lifecycle {
		var p wire.InstancesPage
		f.get(Prefix+"/instances", &p)
		out := map[string]Lifecycle{}
		for _, in := range p.Instances {
			out[in.ID] = in.Lifecycle
		}
		return out
	}
	renew := func() {
		if err := f.reg.Renew(registry.RenewRequest{App: "A", ID: "beating"}); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Advance(60 * time.Second)
	renew()
	if got := lc(); got["quiet"] != LifecycleUp || got["beating"] != LifecycleUp {
		t.Errorf("at 60 s: %v", got)
	}
	f.clock.Advance(time.Second) // 61 s without a heartbeat: more than two 30 s intervals
	if got := lc(); got["quiet"] != LifecycleSuspect || got["beating"] != LifecycleUp {
		t.Errorf("at 61 s: %v", got)
	}
	f.clock.Advance(30 * time.Second) // 91 s: a never-renewed lease expires after 90 s
	renew()
	if got := lc(); got["quiet"] != LifecycleHeld || got["beating"] != LifecycleUp {
		t.Errorf("at 91 s: %v", got)
	}
	var p wire.InstancesPage
	f.get(Prefix+"/instances?lifecycle=held", &p)
	if got := ids(p); !slices.Equal(got, []string{"A/quiet"}) {
		t.Errorf("lifecycle=held: %v", got)
	}
	f.get(Prefix+"/instances?lifecycle=up&limit=1", &p)
	if got := ids(p); !slices.Equal(got, []string{"A/beating"}) || p.Continue != "" {
		t.Errorf("lifecycle=up: %v %q", got, p.Continue)
	}
	// The heartbeat time is live even though heartbeats are not changes.
	f.get(Prefix+"/instances?app=A&lifecycle=up", &p)
	if hb := p.Instances[0].Lease.LastHeartbeat; hb != "2025-03-01T12:01:31Z" {
		t.Errorf("lastHeartbeat %s", hb)
	}
}

func TestBadParameters(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("A", "a1"))
	before := f.reg.Revision()
	cases := []struct{ path, param string }{
		{"/instances?status=RUNNING", "status"},
		{"/instances?lifecycle=dead", "lifecycle"},
		{"/instances?limit=0", "limit"},
		{"/instances?limit=10001", "limit"},
		{"/instances?limit=x", "limit"},
		{"/instances?continue=!!!", "continue"},
		{"/instances?app=%zz", "query"},
		{"/instances?continue=bm9uZXdsaW5l", "continue"}, // valid base64, not a token
		{"/instances?app=a&app=b", "app"},
		{"/instances?metadata.=x", "metadata."},
		{"/instances?zone=a", "zone"},
		{"/apps?app=A", "app"},
		{"/watch?since=-1", "since"},
		{"/watch?since=abc", "since"},
		{"/watch?sincе=1", "sincе"},
		{"/changes?wait=forever", "wait"},
		{"/changes?wait=-1s", "wait"},
		{"/changes?wait=6m", "wait"},
		{"/changes?since=x", "since"},
		{"/prometheus-sd?status=bad", "status"},
		{"/prometheus-sd?limit=3", "limit"},
	}
	for _, c := range cases {
		var e wire.ErrorAnswer
		if code := f.get(Prefix+c.path, &e); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", c.path, code)
			continue
		}
		if e.Parameter != c.param || !strings.Contains(e.Error, c.param) {
			t.Errorf("%s: answer %+v does not name %q", c.path, e, c.param)
		}
	}
	if f.reg.Revision() != before {
		t.Error("a bad read changed the registry")
	}
}

func TestApps(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("B", "b1"))
	down := inst("B", "b2")
	down.Status = registry.StatusDown
	f.register(down)
	f.register(inst("A", "a1"))
	if err := f.reg.StatusUpdate("A", "a1", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	var got wire.AppsAnswer
	f.get(Prefix+"/apps", &got)
	want := wire.AppsAnswer{Revision: 4, Apps: []wire.App{
		{Name: "A", Instances: 1, Statuses: map[registry.Status]int{"OUT_OF_SERVICE": 1}},
		{Name: "B", Instances: 2, Statuses: map[registry.Status]int{"UP": 1, "DOWN": 1}},
	}}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("got %s\nwant %s", gb, wb)
	}
	if err := f.reg.Cancel("A", "a1", false); err != nil {
		t.Fatal(err)
	}
	f.get(Prefix+"/apps", &got)
	if len(got.Apps) != 1 || got.Apps[0].Name != "B" || got.Revision != 5 {
		t.Errorf("after the last instance of A left: %+v", got)
	}
}

// TestIndexFollowsRegistry applies random operations and checks that the
// index, queried with random filters, answers exactly what a scan of the
// registry's own view answers.
func TestIndexFollowsRegistry(t *testing.T) {
	f := newFixture(t, Config{})
	rng := rand.New(rand.NewPCG(1, 2))
	apps := []string{"A", "B", "C"}
	statuses := []registry.Status{registry.StatusUp, registry.StatusDown, registry.StatusOutOfService, registry.StatusStarting}
	zones := []string{"a", "b", "c"}
	vips := []string{"x", "y", "x,y", ""}
	randKey := func() (string, string) { return apps[rng.IntN(3)], fmt.Sprintf("i%d", rng.IntN(12)) }
	for step := range 3000 {
		app, id := randKey()
		switch rng.IntN(6) {
		case 0, 1:
			in := inst(app, id)
			in.Status = statuses[rng.IntN(4)]
			in.VIPAddress = vips[rng.IntN(4)]
			in.Metadata = map[string]string{"zone": zones[rng.IntN(3)]}
			if rng.IntN(2) == 0 {
				in.Metadata["tier"] = "web"
			}
			f.reg.Register(in, rng.IntN(2) == 0)
		case 2:
			f.reg.Cancel(app, id, false)
		case 3:
			f.reg.StatusUpdate(app, id, statuses[rng.IntN(4)], time.Time{}, false)
		case 4:
			f.reg.DeleteStatusOverride(app, id, "", time.Time{}, false)
		case 5:
			f.reg.UpdateMetadata(app, id, map[string]string{"zone": zones[rng.IntN(3)]})
		}
		if step%50 != 0 {
			continue
		}
		view := f.reg.Applications()
		for range 20 {
			var flt Filter
			if rng.IntN(2) == 0 {
				flt.App = apps[rng.IntN(3)]
			}
			if rng.IntN(2) == 0 {
				flt.Status = statuses[rng.IntN(4)]
			}
			if rng.IntN(3) == 0 {
				flt.VIP = []string{"x", "y"}[rng.IntN(2)]
			}
			if rng.IntN(2) == 0 {
				flt.Meta = append(flt.Meta, KV{"zone", zones[rng.IntN(3)]})
			}
			if rng.IntN(3) == 0 {
				flt.Meta = append(flt.Meta, KV{"tier", "web"})
			}
			var want []string
			for _, ap := range view.Apps {
				for _, v := range ap.Instances {
					if flt.matches(&entry{key: key{ap.Name, v.Instance.ID()}, view: v}) {
						want = append(want, ap.Name+"/"+v.Instance.ID())
					}
				}
			}
			rev, es := f.api.idx.Select(flt, nil, -1)
			var got []string
			for _, en := range es {
				got = append(got, en.key.app+"/"+en.key.id)
				if en.view.Instance != mustGet(t, f.reg, en.key).Instance {
					t.Fatalf("step %d: index holds a stale copy of %v", step, en.key)
				}
			}
			if rev != view.Revision || !slices.Equal(got, want) {
				t.Fatalf("step %d filter %+v: index (rev %d) %v, registry (rev %d) %v", step, flt, rev, got, view.Revision, want)
			}
		}
		if f.api.idx.Size() != f.reg.Size() {
			t.Fatalf("step %d: index size %d, registry %d", step, f.api.idx.Size(), f.reg.Size())
		}
	}
}

func mustGet(t *testing.T, reg *registry.Registry, k key) registry.LeaseView {
	t.Helper()
	v, ok := reg.Get(k.app, k.id)
	if !ok {
		t.Fatalf("%v not in the registry", k)
	}
	return v
}

// A static registration is marked static in queries, snapshots and watch
// events; ordinary instances are not.
func TestStaticMarked(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("ORDERS", "o1"))
	if _, err := f.reg.SetStatic([]*registry.Instance{inst("DB", "db-1")}); err != nil {
		t.Fatal(err)
	}
	var page wire.InstancesPage
	if code := f.get(Prefix+"/instances", &page); code != 200 || len(page.Instances) != 2 {
		t.Fatalf("%d %+v", code, page)
	}
	for _, in := range page.Instances {
		if in.Static != (in.ID == "db-1") {
			t.Errorf("%s: static %v", in.ID, in.Static)
		}
	}
	var ch wire.ChangesAnswer
	if code := f.get(Prefix+"/changes?since=1", &ch); code != 200 || len(ch.Changes) != 1 || !ch.Changes[0].Instance.Static {
		t.Fatalf("change of the static registration: %d %+v", code, ch)
	}
}

// An imported instance (the Kubernetes bridge) is lease-less and says
// where it comes from: static and source=kubernetes.
func TestImportedMarked(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("ORDERS", "o1"))
	in := inst("WEB", "web-0")
	in.Metadata = map[string]string{registry.MetaSource: "kubernetes"}
	if _, err := f.reg.Import(in); err != nil {
		t.Fatal(err)
	}
	var page wire.InstancesPage
	if code := f.get(Prefix+"/instances", &page); code != 200 || len(page.Instances) != 2 {
		t.Fatalf("%d %+v", code, page)
	}
	for _, in := range page.Instances {
		if imported := in.ID == "web-0"; in.Static != imported || (in.Source == "kubernetes") != imported {
			t.Errorf("%s: static %v source %q", in.ID, in.Static, in.Source)
		}
	}
	var ch wire.ChangesAnswer
	if code := f.get(Prefix+"/changes?since=1", &ch); code != 200 || len(ch.Changes) != 1 || ch.Changes[0].Instance.Source != "kubernetes" {
		t.Fatalf("change of the imported instance: %d %+v", code, ch)
	}
}
