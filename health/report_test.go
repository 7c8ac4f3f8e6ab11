package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
)

// A report for a dead heartbeating instance gets it probed at once and
// served as DOWN; for a dead held one, evicted: both within one probe
// (Wait returns when the report's probe has been acted on, and the probe
// is bounded by the timeout).
func TestReportActsWithinOneProbe(t *testing.T) {
	ep := newEndpoints(t)
	w := newWorld(t, OnSuspicion, nil)
	kinds := []string{ep.refused}
	live, _, dead := fleet(w, ep, func(int) string { return kinds[0] })
	// A heartbeating instance whose health endpoint refuses.
	w.register("zombie", ep.refused)
	live = append(live, "zombie")
	w.run(30*time.Second, live)

	start := time.Now()
	out, err := w.m.Report("svc", "zombie", "10.0.0.9", "connect timed out")
	if err != nil || out != ReportProbing {
		t.Fatalf("report: %q %v", out, err)
	}
	w.m.Wait()
	if d := time.Since(start); d > w.m.Config().Timeout+time.Second {
		t.Fatalf("report acted on after %v", d)
	}
	v, _ := w.reg.Get("SVC", "zombie")
	if v.Instance.Status != registry.StatusDown {
		t.Fatalf("reported zombie is %s", v.Instance.Status)
	}
	lc := w.m.Lifecycle(200)
	for _, e := range lc.Entries {
		if e.ID == "zombie" {
			if e.Probe == nil || !strings.Contains(e.Probe.DownReason, "connection refused") || e.Probe.Reports != 1 ||
				e.Probe.Reason != "connect timed out" {
				t.Fatalf("zombie entry %+v", e.Probe)
			}
		}
	}

	// A held lease that answered until now, then dies and is reported: the
	// first failing probe after the report evicts it, where the schedule
	// would have needed three.
	var dying atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if dying.Load() {
			rw.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	w.register("held", srv.URL)
	w.run(6*time.Minute, live)
	v, ok := w.reg.Get("SVC", "held")
	if !ok || !v.IsExpired(w.c.Now(), 0) || w.ev.LeaseExpirationEnabled() {
		t.Fatalf("setup: held registered %v, self-preservation holding %v", ok, !w.ev.LeaseExpirationEnabled())
	}
	_ = dead
	dying.Store(true)
	start = time.Now()
	if out, err := w.m.Report("SVC", "held", "gw-1", "503 from upstream"); err != nil || out != ReportProbing {
		t.Fatalf("report: %q %v", out, err)
	}
	w.m.Wait()
	if d := time.Since(start); d > w.m.Config().Timeout+time.Second {
		t.Fatalf("report acted on after %v", d)
	}
	if w.registered("held") {
		t.Fatal("reported held lease not evicted")
	}
}

// Reports: unknown instances are ErrNotFound, a reporter's flood is
// limited, reports of one instance from many reporters make one probe,
// and without probes nothing is probed.
func TestReportLimits(t *testing.T) {
	var probes atomic.Int64
	p := ProberFunc(func(ctx context.Context, url string) Result { probes.Add(1); return Result{Healthy, "HTTP 200"} })
	w := newWorld(t, OnSuspicion, p)
	w.register("a", "http://127.0.0.1:1/h")
	w.register("b", "http://127.0.0.1:2/h")
	w.register("nourl", "")

	if _, err := w.m.Report("SVC", "nope", "r", ""); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	limited := 0
	for range 1000 {
		out, err := w.m.Report("SVC", "a", "flooder", "x")
		if err != nil {
			t.Fatal(err)
		}
		if out == ReportLimited {
			limited++
		}
	}
	w.m.Wait()
	if limited < 990 || probes.Load() != 1 {
		t.Fatalf("flood: %d limited, %d probes", limited, probes.Load())
	}
	for i := range 50 {
		if out, _ := w.m.Report("SVC", "b", "gw-"+string(rune('a'+i)), "x"); i > 0 && out != ReportCoalesced {
			t.Fatalf("report %d of b: %q", i, out)
		}
	}
	w.m.Wait()
	if probes.Load() != 2 {
		t.Fatalf("%d probes after 50 reporters on b", probes.Load())
	}
	if out, _ := w.m.Report("SVC", "nourl", "r", ""); out != ReportNotProbeable {
		t.Fatalf("no URL: %q", out)
	}
	// The instance's rate passes with time.
	w.c.Advance(w.m.Config().ReportInterval)
	if out, _ := w.m.Report("SVC", "b", "gw-z", "x"); out != ReportProbing {
		t.Fatalf("after the interval: %q", out)
	}
	w.m.Wait()

	off := newWorld(t, OnSuspicion, p)
	off.m.cfg.Enabled = false
	off.register("a", "http://127.0.0.1:1/h")
	before := probes.Load()
	if out, _ := off.m.Report("SVC", "a", "r", "x"); out != ReportCounted || probes.Load() != before {
		t.Fatalf("disabled: %q, probes %d -> %d", out, before, probes.Load())
	}
	if st := off.m.Status(); st.Counters.Reports != 1 {
		t.Fatalf("disabled: counted %d", st.Counters.Reports)
	}
	if v, _ := off.reg.Get("SVC", "a"); v.Instance.Status != registry.StatusUp || v.DownBy != 0 {
		t.Fatal("a report changed the registry")
	}
}
