package server

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/health"
	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/server/api/wire"
)

// The dashboard is Spring's Eureka status page (SC §B5) with the same
// headings, table ids and banner texts, plus a live refresh from a JSON
// endpoint, a search box, per-instance details and actions, a renewals
// chart and per-peer replication health. Everything it needs is embedded.
//
// Every URL in the pages is relative, so the dashboard keeps working behind
// a proxy that mounts the whole server under a prefix (Spring's fixed
// basePath breaks there, spring-cloud-netflix#2046).

//go:embed web/templates/*.html web/static
var webFS embed.FS

// Fixed paths of the dashboard's assets and data, whatever the dashboard's
// own path is.
const (
	dashboardStaticPath = "/goreka/static"
	dashboardAPIPath    = "/goreka/api/dashboard"
)

var dashboardTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"join": strings.Join,
}).ParseFS(webFS, "web/templates/*.html"))

// DashboardData is what the dashboard shows besides the registry itself,
// in the types of the packages that own each part (DashboardState builds
// it from them).
type DashboardData struct {
	Environment string // eureka.environment
	Datacenter  string // eureka.datacenter
	Now         time.Time
	Uptime      time.Duration

	// SelfPreservation is the eviction job's state: the system status,
	// Spring's red banner and the renewals chart.
	SelfPreservation eviction.Status
	// Peers are the other Eureka servers' replication state, in
	// configuration order.
	Peers []replication.PeerStatus
	// ReplicaInfo are the replica rows of "General Info" (ReplicaStats:
	// registered-, available- and unavailable-replicas, peer URLs
	// scrubbed), as StatusInfo lists them.
	ReplicaInfo [][2]string

	// GeneralInfo are the first rows of "General Info" (num-of-cpus,
	// total-avail-memory, current-memory-usage, server-uptime); the replica
	// rows follow them.
	GeneralInfo [][2]string
	// InstanceInfo are the rows of "Instance Info" (ipAddr, status).
	InstanceInfo [][2]string

	// Health is the health probes' state: its Alert is the guard's banner.
	Health health.Status
	// Lifecycle is the instances' lifecycle; nil hides the section.
	Lifecycle *health.Lifecycle

	// Namespace is the namespace this dashboard shows ("" or "default":
	// the default one), PathPrefix the path its server is reached under
	// ("/ns/dev"; "" for the default one): the page's own links start
	// with it.
	Namespace, PathPrefix string
	// Namespaces are the namespace selector's entries, the default one
	// first; fewer than two hide it.
	Namespaces []DashboardNamespace

	// XDS is set when the server serves xDS (goreka.xds.enabled): the
	// section of connected xDS clients is shown, listing XDSClients.
	XDS        bool
	XDSClients []wire.XDSClient
}

// DashboardNamespace is one entry of the namespace selector.
type DashboardNamespace struct {
	Name    string `json:"name"`
	Href    string `json:"href"` // absolute path of its dashboard
	Current bool   `json:"current"`
}

// lifecycleCount is one state's count.
type lifecycleCount struct {
	State string `json:"state"`
	Count int    `json:"count"`
}

// lifecycleRow is one instance's lifecycle row.
type lifecycleRow struct {
	App           string `json:"app"`
	ID            string `json:"instanceId"`
	State         string `json:"state"`
	Status        string `json:"status"`
	LastHeartbeat string `json:"lastHeartbeat"` // for gone: when it went
	LastProbe     string `json:"lastProbe"`     // "" if never: "2026-... MST: HTTP 503 (2 failures)"
	Note          string `json:"note"`          // DOWN by probe reason, last report
}

// DashboardSource supplies DashboardData; it is called once per page view
// and per refresh of the live data, so it should be cheap.
type DashboardSource interface{ DashboardData() DashboardData }

// DashboardSourceFunc adapts a function to DashboardSource.
type DashboardSourceFunc func() DashboardData

// DashboardData calls f.
func (f DashboardSourceFunc) DashboardData() DashboardData { return f() }

// MountDashboard serves the dashboard at path ("" or "/" for the root) and
// its last-N page at path+"/lastn", with its assets under /goreka/static/ and
// its live data at /goreka/api/dashboard. The routes go on the server's own
// engine, so every middleware of the engine applies to them. It panics if
// path collides with an existing route, as gin does.
func (s *Server) MountDashboard(path string, src DashboardSource) {
	base := "/" + strings.Trim(path, "/")
	lastn := strings.TrimSuffix(base, "/") + "/lastn"
	d := &dashboard{s: s, src: src, base: strings.TrimSuffix(base, "/")}
	e := s.engine
	e.GET(base, func(c *gin.Context) { d.page(c, "status", base) })
	e.GET(lastn, func(c *gin.Context) { d.page(c, "lastn", lastn) })
	e.GET(dashboardAPIPath, d.api)
	static, _ := fs.Sub(webFS, "web/static")
	fileServer := http.StripPrefix(dashboardStaticPath, http.FileServer(http.FS(static)))
	e.GET(dashboardStaticPath+"/*file", func(c *gin.Context) {
		c.Header("Cache-Control", "no-cache")
		c.Header("X-Content-Type-Options", "nosniff")
		fileServer.ServeHTTP(c.Writer, c.Request)
	})
}

type dashboard struct {
	s    *Server
	src  DashboardSource
	base string // dashboard path without a trailing slash; "" for the root
}

// securityHeaders keep a registrant's strings inert even if escaping were
// ever missed: no inline script, no plugins, no framing by other sites.
func securityHeaders(c *gin.Context) {
	c.Header("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "same-origin")
	c.Header("Cache-Control", "no-store")
}

// rootRel is the relative path from a page at p to the server root: "./"
// for /, /lastn and /dashboard, "../" for /dashboard/lastn.
func rootRel(p string) string {
	n := strings.Count(p, "/") - 1
	if n <= 0 {
		return "./"
	}
	return strings.Repeat("../", n)
}

func (d *dashboard) page(c *gin.Context, name, path string) {
	v := d.view(name == "status")
	if ns, ok := queryValue(c.Request.URL.RawQuery, "namespace"); ok {
		// ?namespace=NAME is the selector as a query: go to its dashboard.
		for _, n := range v.Data.Namespaces {
			if n.Name == ns {
				c.Redirect(http.StatusFound, n.Href)
				return
			}
		}
		err := namespace.Unknown(ns)
		c.Data(namespaceStatus(err), "text/plain; charset=UTF-8", []byte(err.Error()))
		return
	}
	v.Page = name
	v.Root = rootRel(path)
	v.Home = v.Data.PathPrefix + d.base
	if v.Home == "" {
		v.HomeHref = "/"
	} else {
		v.HomeHref = v.Home
		if d.base == "" {
			v.HomeHref += "/"
		}
	}
	if name == "lastn" {
		v.Registered = lastNRows(d.s.reg.RecentlyRegistered())
		v.Cancelled = lastNRows(d.s.reg.RecentlyCancelled())
	}
	var b bytes.Buffer
	if err := dashboardTemplates.ExecuteTemplate(&b, name, v); err != nil {
		d.s.log.Error("rendering dashboard", "page", name, "err", err)
		c.Status(http.StatusInternalServerError)
		return
	}
	securityHeaders(c)
	c.Data(http.StatusOK, "text/html; charset=utf-8", b.Bytes())
}

func (d *dashboard) api(c *gin.Context) {
	v := d.view(true)
	securityHeaders(c)
	c.JSON(http.StatusOK, v.JSON())
}

// pageView is what the templates render.
type pageView struct {
	Page     string
	Root     string // relative path to the server root, ending in "/"
	Home     string // dashboardPath as Spring renders it: "" for the root
	HomeHref string

	Data      DashboardData
	Time      string
	Uptime    string
	Replicas  []replication.PeerStatus // DS Replicas list, one per host
	Peers     []peerView
	General   [][2]string
	Apps      []appView
	Instances int
	Chart     chart
	// Revision is the registry revision the applications were read at: the
	// page watches the changes after it (/goreka/api/v1/watch?since=).
	Revision int64

	Registered, Cancelled []lastNRow
	// Regions are the remote regions (regions.go), nil when none.
	Regions []regionView

	// Lifecycle counts the instances per lifecycle state in display
	// order (nil hides the section); LifecycleInstances are the rows of
	// the instances worth a look, LifecycleMore how many are left out.
	Lifecycle          []lifecycleCount
	LifecycleInstances []lifecycleRow
	LifecycleMore      int

	// XDSClients are the rows of connected xDS clients, by node id; nil
	// (xDS off) hides the section.
	XDSClients []xdsClientRow
}

// xdsClientRow is one connected xDS client's row.
type xdsClientRow struct {
	Node      string `json:"node"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Zone      string `json:"zone"`
	// Acked is the last ACKed version of each type, "cds=7 eds=7".
	Acked string `json:"acked"`
	// Since is when it connected ("2026-... UTC (5m ago)"); Agent its
	// user agent, with "(delta)" for an incremental stream.
	Since string `json:"since"`
	Agent string `json:"agent"`
	// NACK is its last rejection ("eds 12 at 2026-...: detail"), "" if none.
	NACK string `json:"nack"`
}

// xdsClientRows lays out the xDS clients, sorted by node id (then kind,
// as one node may hold an Envoy and a gRPC stream); nil when xDS is off.
func xdsClientRows(on bool, cs []wire.XDSClient, now time.Time) []xdsClientRow {
	if !on {
		return nil
	}
	rows := make([]xdsClientRow, 0, len(cs))
	for _, c := range cs {
		var acked []string
		for _, t := range slices.Sorted(maps.Keys(c.Acked)) {
			acked = append(acked, t+"="+c.Acked[t])
		}
		row := xdsClientRow{Node: c.Node, Kind: c.Kind, Namespace: c.Namespace, Zone: c.Zone, Acked: strings.Join(acked, " "), Agent: c.UserAgent}
		if c.Delta {
			row.Agent = strings.TrimSpace(row.Agent + " (delta)")
		}
		if t, err := time.Parse(time.RFC3339, c.Since); err == nil {
			row.Since = t.Format(leaseTimeFormat) + " (" + formatAgo(now.Sub(t)) + " ago)"
		}
		if n := c.LastNACK; n != nil {
			row.NACK = strings.TrimSpace(n.Type + " " + n.Rejected)
			if t, err := time.Parse(time.RFC3339, n.At); err == nil {
				row.NACK += " at " + t.Format(leaseTimeFormat)
			}
			row.NACK += ": " + n.Detail
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b xdsClientRow) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace))
	})
	return rows
}

// regionView is one remote region's row.
type regionView struct {
	Name        string `json:"name"`
	URL         string `json:"url"`
	State       string `json:"state"` // "fetching", "failing (last copy served)", "never answered"
	Healthy     bool   `json:"healthy"`
	LastSuccess string `json:"lastSuccess"`
	Apps        int    `json:"applications"`
	Instances   int    `json:"instances"`
	LastError   string `json:"lastError"`
}

type peerView struct {
	URL         string `json:"url"`
	Host        string `json:"host"`
	State       string `json:"state"`
	QueueDepth  int    `json:"queueDepth"`
	Lag         string `json:"lag"`
	LastSuccess string `json:"lastSuccess"`
	LastError   string `json:"lastError"`
	Healthy     bool   `json:"healthy"`
}

type appView struct {
	Name      string
	Count     int
	Groups    []statusGroup
	Instances []instanceView
}

type statusGroup struct {
	Status    string
	Up        bool
	Instances []instanceView
}

// instanceView is one instance as the page and the live data show it.
type instanceView struct {
	ID               string            `json:"id"`
	App              string            `json:"app"`
	Status           string            `json:"status"`
	OverriddenStatus string            `json:"overriddenStatus"`
	HostName         string            `json:"hostName"`
	IPAddr           string            `json:"ipAddr"`
	Port             int               `json:"port,omitempty"`
	SecurePort       int               `json:"securePort,omitempty"`
	VIPAddress       string            `json:"vipAddress,omitempty"`
	SecureVIPAddress string            `json:"secureVipAddress,omitempty"`
	StatusPageURL    string            `json:"statusPageUrl,omitempty"`
	HomePageURL      string            `json:"homePageUrl,omitempty"`
	HealthCheckURL   string            `json:"healthCheckUrl,omitempty"`
	Link             string            `json:"link,omitempty"` // StatusPageURL if it is http(s)
	Metadata         map[string]string `json:"metadata,omitempty"`
	Registered       string            `json:"registered,omitempty"`
	LastRenewal      string            `json:"lastRenewal,omitempty"`
	ServiceUp        string            `json:"serviceUp,omitempty"`
	LastDirty        string            `json:"lastDirty,omitempty"`
	Duration         int64             `json:"durationSecs"`
	RenewalInterval  int64             `json:"renewalIntervalSecs"`
	// Static marks a lease-less registration: static
	// (goreka.static-instances), or imported from Source (kubernetes).
	Static bool   `json:"static,omitempty"`
	Source string `json:"source,omitempty"`
}

type lastNRow struct{ Time, Lease string }

// timeFormat is Spring's "Current time" (yyyy-MM-dd'T'HH:mm:ss Z).
const timeFormat = "2006-01-02T15:04:05 -0700"

// lastNFormat is Java's medium date-time format in the default locale.
const lastNFormat = "Jan 2, 2006, 3:04:05 PM"

// leaseTimeFormat is used for the lease times of the instance details.
const leaseTimeFormat = "2006-01-02 15:04:05 MST"

// view builds everything the pages and the JSON show; the applications
// only withApps (the last-N page does not list them).
func (d *dashboard) view(withApps bool) pageView {
	data := d.src.DashboardData()
	if data.Now.IsZero() {
		data.Now = d.s.now()
	}
	v := pageView{
		Data:   data,
		Time:   data.Now.Format(timeFormat),
		Uptime: formatUptime(data.Uptime),
	}
	seen := map[string]bool{}
	for _, p := range data.Peers {
		if !seen[p.Host] {
			seen[p.Host] = true
			v.Replicas = append(v.Replicas, p)
		}
		pv := peerView{URL: p.URL, Host: p.Host, State: p.State, QueueDepth: p.QueueDepth, Healthy: p.State == "up",
			Lag: formatLag(p.Lag), LastSuccess: "never", LastError: p.LastError}
		if !p.LastSuccess.IsZero() {
			pv.LastSuccess = formatAgo(data.Now.Sub(p.LastSuccess)) + " ago"
		}
		if p.LastError != "" && !p.LastErrorAt.IsZero() {
			pv.LastError = p.LastErrorAt.Format(leaseTimeFormat) + ": " + p.LastError
		}
		v.Peers = append(v.Peers, pv)
	}
	v.General = append(slices.Clone(data.GeneralInfo), data.ReplicaInfo...)
	v.Chart = newChart(data.SelfPreservation.RenewsHistory, data.SelfPreservation.Threshold)
	v.lifecycle(data.Lifecycle, data.Now)
	v.Regions = regionViews(d.s.regions, data.Now)
	v.XDSClients = xdsClientRows(data.XDS, data.XDSClients, data.Now)
	if withApps {
		all := d.s.reg.Applications()
		v.Revision = all.Revision
		for _, a := range all.Apps {
			av := appOf(a)
			v.Instances += av.Count
			v.Apps = append(v.Apps, av)
		}
	} else {
		v.Revision = d.s.reg.Revision()
	}
	return v
}

// lifecycle lays out the lifecycle section: the counts in display order,
// the rows with their last probe and note.
func (v *pageView) lifecycle(lc *health.Lifecycle, now time.Time) {
	if lc == nil {
		return
	}
	for _, st := range health.States {
		v.Lifecycle = append(v.Lifecycle, lifecycleCount{State: string(st), Count: lc.Counts[st]})
	}
	v.LifecycleMore = lc.Truncated
	for _, e := range lc.Entries {
		row := lifecycleRow{App: e.App, ID: e.ID, State: string(e.State), Status: string(e.Status),
			LastHeartbeat: e.LastHeartbeat.Format(leaseTimeFormat)}
		if p := e.Probe; p != nil {
			if !p.LastAt.IsZero() {
				row.LastProbe = fmt.Sprintf("%s: %s", p.LastAt.Format(leaseTimeFormat), p.Last.Detail)
				if p.Failures > 1 {
					row.LastProbe += fmt.Sprintf(" (%d failures)", p.Failures)
				}
			}
			row.Note = p.DownReason
			if p.Reports > 0 {
				if row.Note != "" {
					row.Note += "; "
				}
				row.Note += fmt.Sprintf("%d report(s), last %s ago from %s: %s", p.Reports,
					now.Sub(p.LastReport).Round(time.Second), p.Reporter, p.Reason)
			}
		}
		v.LifecycleInstances = append(v.LifecycleInstances, row)
	}
}

// statusOrder orders the status groups of an application (Spring's come
// from a HashMap, in no defined order).
var statusOrder = map[string]int{"UP": 0, "DOWN": 1, "STARTING": 2, "OUT_OF_SERVICE": 3, "UNKNOWN": 4}

func appOf(a registry.Application) appView {
	av := appView{Name: a.Name, Count: len(a.Instances)}
	groups := map[string]*statusGroup{}
	for _, l := range a.Instances {
		iv := instanceOf(l)
		av.Instances = append(av.Instances, iv)
		g := groups[iv.Status]
		if g == nil {
			g = &statusGroup{Status: iv.Status, Up: iv.Status == string(registry.StatusUp)}
			groups[iv.Status] = g
		}
		g.Instances = append(g.Instances, iv)
	}
	for _, g := range groups {
		av.Groups = append(av.Groups, *g)
	}
	slices.SortFunc(av.Groups, func(x, y statusGroup) int {
		ox, okx := statusOrder[x.Status]
		oy, oky := statusOrder[y.Status]
		if !okx {
			ox = len(statusOrder)
		}
		if !oky {
			oy = len(statusOrder)
		}
		return cmp.Or(cmp.Compare(ox, oy), cmp.Compare(x.Status, y.Status))
	})
	return av
}

func instanceOf(l registry.LeaseView) instanceView {
	in := l.Instance
	iv := instanceView{
		ID: in.ID(), App: in.App, Status: string(in.Status), OverriddenStatus: string(in.OverriddenStatus),
		HostName: in.HostName, IPAddr: in.IPAddr,
		VIPAddress: in.VIPAddress, SecureVIPAddress: in.SecureVIPAddress,
		StatusPageURL: in.StatusPageURL, HomePageURL: in.HomePageURL, HealthCheckURL: in.HealthCheckURL,
		Link:            httpURL(in.StatusPageURL),
		Metadata:        in.Metadata,
		Registered:      fmtTime(l.RegistrationTimestamp),
		LastRenewal:     fmtTime(l.LastRenewalTimestamp),
		ServiceUp:       fmtTime(l.ServiceUpTimestamp),
		LastDirty:       fmtTime(in.LastDirtyTimestamp),
		Duration:        int64(l.Duration / time.Second),
		RenewalInterval: int64(l.RenewalInterval / time.Second),
		Static:          l.Static,
		Source:          l.Source,
	}
	if in.Port.Enabled {
		iv.Port = in.Port.Number
	}
	if in.SecurePort.Enabled {
		iv.SecurePort = in.SecurePort.Number
	}
	return iv
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(leaseTimeFormat)
}

// httpURL returns u if it is an absolute http or https URL, else "": only
// those become links (Spring links anything starting with "http"; a
// javascript: or data: URL must never be clickable).
func httpURL(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Host == "" {
		return ""
	}
	switch strings.ToLower(p.Scheme) {
	case "http", "https":
		return p.String()
	}
	return ""
}

func lastNRows(l []registry.LastN) []lastNRow {
	out := make([]lastNRow, len(l))
	for i, e := range l {
		out[i] = lastNRow{Time: e.At.Format(lastNFormat), Lease: e.App + "(" + e.ID + ")"}
	}
	return out
}

func formatLag(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return formatAgo(d)
}

// formatAgo rounds a duration for people: 850ms, 12s, 4m10s, 2h5m.
func formatAgo(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return strings.TrimSuffix(d.Round(time.Second).String(), "0s")
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}

// chart is the inline SVG of renewals per minute against the threshold.
type chart struct {
	Width, Height int
	Points        string // polyline of the renewals
	ThresholdY    string
	Max           int64
	Threshold     int
	Minutes       int
	Last          int64
}

const (
	chartW = 600
	chartH = 120
)

// newChart lays out up to 60 per-minute counts, oldest at the left, on a
// scale that always shows the threshold. The same layout is computed by
// dashboard.js for the live refresh.
func newChart(hist []registry.MinuteCount, threshold int) chart {
	c := chart{Width: chartW, Height: chartH, Threshold: threshold, Minutes: len(hist)}
	top := int64(max(threshold, 1))
	for _, m := range hist {
		top = max(top, m.Count)
	}
	c.Max = top + top/10 + 1
	y := func(n int64) float64 { return float64(chartH) - float64(n)*float64(chartH)/float64(c.Max) }
	c.ThresholdY = strconv.FormatFloat(y(int64(threshold)), 'f', 1, 64)
	var b strings.Builder
	for i, m := range hist {
		x := float64(chartW) * float64(i+60-len(hist)) / 59
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y(m.Count), 'f', 1, 64))
		c.Last = m.Count
	}
	c.Points = b.String()
	return c
}

// dashboardJSON is the live data of GET /goreka/api/dashboard.
type dashboardJSON struct {
	Time                    string        `json:"time"`
	Uptime                  string        `json:"uptime"`
	Environment             string        `json:"environment"`
	Datacenter              string        `json:"datacenter"`
	SelfPreservationEnabled bool          `json:"selfPreservationEnabled"`
	LeaseExpirationEnabled  bool          `json:"leaseExpirationEnabled"`
	RenewsThreshold         int           `json:"renewsThreshold"`
	RenewsLastMinute        int64         `json:"renewsLastMinute"`
	ExpectedClients         int           `json:"expectedClients"`
	Banner                  string        `json:"banner"`
	RenewsHistory           []int64       `json:"renewsHistory"`
	Replicas                []replicaJSON `json:"replicas"`
	Peers                   []peerView    `json:"peers"`
	GeneralInfo             [][2]string   `json:"generalInfo"`
	InstanceInfo            [][2]string   `json:"instanceInfo"`
	Applications            []appJSON     `json:"applications"`
	Instances               int           `json:"instances"`
	Revision                int64         `json:"revision"`

	HealthAlert        string           `json:"healthAlert,omitempty"`
	Lifecycle          []lifecycleCount `json:"lifecycle,omitempty"`
	LifecycleInstances []lifecycleRow   `json:"lifecycleInstances,omitempty"`
	LifecycleMore      int              `json:"lifecycleMore,omitempty"`
	RemoteRegions      []regionView     `json:"remoteRegions,omitempty"`
	// XDSClients is null when xDS is off, [] when no client is connected.
	XDSClients []xdsClientRow `json:"xdsClients"`
}

type replicaJSON struct {
	URL  string `json:"url"`
	Host string `json:"host"`
}

type appJSON struct {
	Name      string         `json:"name"`
	Instances []instanceView `json:"instances"`
}

// JSON is the page's data as the live refresh reads it.
func (v pageView) JSON() dashboardJSON {
	d, sp := v.Data, v.Data.SelfPreservation
	j := dashboardJSON{
		Time: v.Time, Uptime: v.Uptime, Environment: d.Environment, Datacenter: d.Datacenter,
		SelfPreservationEnabled: sp.SelfPreservationEnabled, LeaseExpirationEnabled: sp.LeaseExpirationEnabled,
		RenewsThreshold: sp.Threshold, RenewsLastMinute: sp.RenewsLastMinute, ExpectedClients: sp.ExpectedClients,
		Banner: sp.Banner, RenewsHistory: make([]int64, len(sp.RenewsHistory)),
		Replicas: []replicaJSON{}, Peers: v.Peers, GeneralInfo: v.General, InstanceInfo: d.InstanceInfo,
		Applications: make([]appJSON, len(v.Apps)), Instances: v.Instances, Revision: v.Revision,
	}
	j.HealthAlert, j.Lifecycle, j.LifecycleInstances, j.LifecycleMore = d.Health.Alert, v.Lifecycle, v.LifecycleInstances, v.LifecycleMore
	j.RemoteRegions = v.Regions
	j.XDSClients = v.XDSClients
	if j.Peers == nil {
		j.Peers = []peerView{}
	}
	if j.InstanceInfo == nil {
		j.InstanceInfo = [][2]string{}
	}
	for i, m := range sp.RenewsHistory {
		j.RenewsHistory[i] = m.Count
	}
	for _, p := range v.Replicas {
		j.Replicas = append(j.Replicas, replicaJSON{URL: p.URL, Host: p.Host})
	}
	for i, a := range v.Apps {
		j.Applications[i] = appJSON{Name: a.Name, Instances: a.Instances}
	}
	return j
}
