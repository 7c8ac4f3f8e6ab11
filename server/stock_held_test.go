package server

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// The held-lease scenario: an instance's lease expires and the eviction
// job holds it back, then a peer replicates a StatusUpdate and a
// DeleteStatusOverride for it. Eureka's PeerReplicationResource hands each
// item to InstanceResource.statusUpdate / deleteStatusUpdate, which look
// the instance up with getInstanceByAppAndId first: an expired lease is
// hidden there while lease expiration is enabled, so both items are 404,
// the batch changes nothing (a status update would have renewed the
// lease). The server runs with self-preservation on, renewal-percent-
// threshold 1 (an eviction run may remove size - size*1 = 0 leases: every
// expired one is held back) and enough heartbeats of a second instance to
// keep renewals above the threshold, so that lease expiration is enabled.
// While renewals were still below it (the first minute), self-preservation
// disabled expiration and the same lookup showed the lease (the first read).
//
// It is captured by TestCaptureStock for the targets with held set
// (captureStockHeld) and compared with goreka by TestStockHeldLease.

const (
	heldApp = "HELD-APP"
	heldID  = "held-1" // lease of 1 s, never renewed
	liveID  = "live-1" // renewed throughout
)

// stockHeldArgs are the stock server's settings of the scenario, on top of
// compat/stock-server's application.yml (expected-client-renewal-interval
// 1 s: the threshold is 60 renewals a minute per expected client).
var stockHeldArgs = []string{"--eureka.server.enable-self-preservation=true", "--eureka.server.renewal-percent-threshold=1"}

var stockHeldSteps = []stockStep{
	stockRegister(heldApp, `{"instance":{"instanceId":"held-1","hostName":"held-1","app":"HELD-APP","ipAddr":"10.0.1.1","status":"UP",
	  "port":{"$":8080,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},"countryId":1,
	  "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
	  "leaseInfo":{"renewalIntervalInSecs":1,"durationInSecs":1},"metadata":{"zone":"z1"},
	  "vipAddress":"held-app","secureVipAddress":"held-app","lastDirtyTimestamp":"1764500000010"}}`),
	stockRegister(heldApp, `{"instance":{"instanceId":"live-1","hostName":"live-1","app":"HELD-APP","ipAddr":"10.0.1.2","status":"UP",
	  "port":{"$":8080,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},"countryId":1,
	  "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
	  "leaseInfo":{"renewalIntervalInSecs":1,"durationInSecs":90},"metadata":{"zone":"z1"},
	  "vipAddress":"held-app","secureVipAddress":"held-app","lastDirtyTimestamp":"1764500000011"}}`),
}

// stockHeldRenew is the heartbeat of the live instance.
const stockHeldRenew = "/eureka/apps/" + heldApp + "/" + liveID + "?status=UP&lastDirtyTimestamp=1764500000011"

// stockHeldBatch is the replicated batch: the held lease's status update
// and override removal, then the same for the live instance, which are
// applied (200).
const stockHeldBatch = `{"replicationList":[` +
	`{"appName":"HELD-APP","id":"held-1","lastDirtyTimestamp":1764500000010,"status":"OUT_OF_SERVICE","action":"StatusUpdate"},` +
	`{"appName":"HELD-APP","id":"held-1","lastDirtyTimestamp":1764500000010,"status":"UP","action":"DeleteStatusOverride"},` +
	`{"appName":"HELD-APP","id":"live-1","lastDirtyTimestamp":1764500000011,"status":"OUT_OF_SERVICE","action":"StatusUpdate"},` +
	`{"appName":"HELD-APP","id":"live-1","lastDirtyTimestamp":1764500000011,"status":"UP","action":"DeleteStatusOverride"}]}`

var (
	stockJSON     = map[string]string{"Accept": "application/json"}
	stockBatchHdr = map[string]string{"Accept": "application/json", "Content-Type": "application/json", "X-Netflix-Discovery-Replication": "true"}
	stockHeldPath = "/eureka/apps/" + heldApp + "/" + heldID
)

// TestStockHeldLease runs the held-lease scenario against goreka, with the
// eviction job and self-preservation of cmd/goreka (eviction.Evictor as the
// server's Expiry) on a fake clock, and compares each answer with the
// capture of the stock server.
func TestStockHeldLease(t *testing.T) {
	for _, tg := range stockTargets {
		if !tg.held {
			continue
		}
		t.Run(tg.dir, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "stock", tg.dir)
			f, ev := newStockHeldFixture(t)
			check := func(file, method, path, body string, hdr map[string]string) {
				t.Helper()
				want, err := os.ReadFile(filepath.Join(dir, file))
				if err != nil {
					t.Fatalf("%v (capture with: GOREKA_STOCK_TARGET=%s go test -tags capture -run TestCaptureStock ./server/)", err, tg.dir)
				}
				if plain, ok := springNotFound(want, path); ok {
					want = plain
				}
				w := f.do(t, method, path, body, hdr)
				got := stockAnswer(w.Code, w.Header().Get("Content-Type"), w.Body.Bytes())
				if g, w2 := stockComparable(t, file, got), stockComparable(t, file, want); !bytes.Equal(g, w2) {
					t.Errorf("%s: goreka differs from the stock server\n got: %s\nwant: %s", file, g, w2)
				}
			}
			for _, st := range stockHeldSteps {
				if w := f.do(t, st.method, st.path, st.body, map[string]string{"Content-Type": "application/json"}); w.Code != st.want {
					t.Fatalf("%s %s = %d (%s), want %d", st.method, st.path, w.Code, w.Body.String(), st.want)
				}
			}
			f.clock.Advance(2 * time.Second) // the 1-s lease has expired
			check("instance-held.json", "GET", stockHeldPath, "", stockJSON)
			// Renewals of the live instance through the rest of the first
			// minute: 200 > the threshold of 3 expected clients (Spring's
			// 1 at start-up, +1 per registration) * 60 * 1.
			for range 200 {
				f.clock.Advance(250 * time.Millisecond)
				if w := f.do(t, "PUT", stockHeldRenew, "", nil); w.Code != 200 {
					t.Fatalf("renew = %d", w.Code)
				}
			}
			f.clock.Advance(10 * time.Second)
			if !ev.LeaseExpirationEnabled() {
				t.Fatalf("lease expiration still disabled: %+v", ev.Status())
			}
			if evicted := ev.RunOnce(); len(evicted) != 0 || ev.Status().HeldBack != 1 {
				t.Fatalf("eviction run: evicted %v, held back %d; want none evicted, the expired lease held", evicted, ev.Status().HeldBack)
			}
			check("instance-hidden.json", "GET", stockHeldPath, "", stockJSON)
			check("batch.json", "POST", "/eureka/peerreplication/batch/", stockHeldBatch, stockBatchHdr)
			check("instance-after.json", "GET", stockHeldPath, "", stockJSON)
			if v, ok := f.reg.Get(heldApp, heldID); !ok || v.Instance.Status != registry.StatusUp || !v.IsExpired(f.clock.Now(), 0) {
				t.Errorf("held lease after the batch: %+v %v; want it registered, UP and still expired", v, ok)
			}
			check("app-after.json", "GET", "/eureka/apps/"+heldApp, "", stockJSON)
		})
	}
}

// newStockHeldFixture is newStockFixture with an Evictor configured as
// stockHeldArgs, opened for traffic as Spring opens a standalone server
// (one expected client), as the server's Expiry.
func newStockHeldFixture(t *testing.T) (*fixture, *eviction.Evictor) {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var c *cache.Cache
	reg := registry.New(registry.Options{Now: clk.Now, SelfID: "eureka-1", OnEvent: func(e registry.Event) {
		if in := e.Instance(); e.Changed {
			c.Invalidate(e.App, in.VIPAddress, in.SecureVIPAddress)
		}
	}})
	cfg := eviction.Default()
	cfg.EnableSelfPreservation = true
	cfg.RenewalPercentThreshold = 1
	cfg.ExpectedClientRenewalInterval = time.Second
	cfg.Now = clk.Now
	cfg.Logger = slog.New(slog.DiscardHandler)
	ev := eviction.New(reg, cfg)
	ev.OpenAfterSync(0)
	ccfg := cache.DefaultConfig()
	ccfg.UseReadOnly = false
	ccfg.Now = clk.Now
	srv := New(Config{}, Deps{Registry: reg, Cache: &ccfg, Expiry: ev, Now: clk.Now})
	c = srv.Cache()
	return &fixture{srv: srv, reg: reg, clock: clk}, ev
}

// stockSpringError is the body Spring Boot's error page writes for a 404
// that Eureka's Jersey resource answers without one.
var stockSpringError = regexp.MustCompile(`^404 application/json\n\{"timestamp":"[^"]*","status":404,"error":"Not Found","path":"([^"]*)"\}$`)

// springNotFound turns a captured 404 with Spring's error body for path
// into the answer without a body and type that Eureka's resource gives and
// goreka gives (a deliberate difference, compat/README.md: the stock
// server's error JSON is Spring's, not Eureka's).
func springNotFound(answer []byte, path string) ([]byte, bool) {
	m := stockSpringError.FindSubmatch(answer)
	if m == nil || string(m[1]) != strings.SplitN(path, "?", 2)[0] {
		return nil, false
	}
	return []byte("404 \n"), true
}
