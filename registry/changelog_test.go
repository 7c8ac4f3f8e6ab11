package registry

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/registry/clocktest"
)

// Every change is logged at a steady rate; in a storm, lines beyond the
// limit per second are counted and summed up once the second is over.
func TestChangeLogLimitsAStorm(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	var buf bytes.Buffer
	l := NewChangeLog(slog.New(slog.NewTextHandler(&buf, nil)), clk.Now)
	for i := range 10 {
		if !l.allow() {
			t.Fatalf("line %d of a quiet second suppressed", i)
		}
		clk.Advance(100 * time.Millisecond)
	}
	allowed := 0
	for range 1000 {
		if l.allow() {
			allowed++
		}
		clk.Advance(time.Millisecond / 2) // 1000 changes in 0.5 s
	}
	if allowed != changeLinesPerSecond {
		t.Fatalf("%d of 1000 lines logged in one second, want %d", allowed, changeLinesPerSecond)
	}
	if buf.Len() != 0 {
		t.Fatalf("summary before the second ended: %s", buf.String())
	}
	clk.Advance(time.Second)
	if !l.allow() {
		t.Fatal("first line of the next second suppressed")
	}
	want := fmt.Sprintf("count=%d since=2026-12-01T12:00:01Z", 1000-changeLinesPerSecond)
	if out := buf.String(); strings.Count(out, "change log lines suppressed") != 1 || !strings.Contains(out, want) {
		t.Fatalf("summary %q, want one line with %q", out, want)
	}
}

// Each change kind has its line; an eviction is the eviction job's, and a
// probe verdict that changed nothing has none.
func TestChangeLogLines(t *testing.T) {
	var buf bytes.Buffer
	l := NewChangeLog(slog.New(slog.NewTextHandler(&buf, nil)), nil)
	v := LeaseView{Instance: &Instance{InstanceID: "i-1", App: "APP", Status: StatusUp}}
	for _, e := range []Event{
		{Kind: EventRegister, App: "APP", ID: "i-1", Lease: v, Revision: 1, Changed: true},
		{Kind: EventCancel, App: "APP", ID: "i-1", Lease: v, Revision: 2, Changed: true, FromPeer: true},
		{Kind: EventEvict, App: "APP", ID: "i-1", Lease: v, Revision: 3, Changed: true},
		{Kind: EventProbeStatus, App: "APP", ID: "i-1", Lease: v, Revision: 4},
		{Kind: EventStatusCorrected, App: "APP", ID: "i-1", Lease: v, Revision: 5, Changed: true, Prev: StatusDown},
	} {
		l.Log(e)
	}
	out := buf.String()
	for _, want := range []string{
		`msg=registered app=APP instance=i-1 status=UP replication=false revision=1`,
		`msg=cancelled app=APP instance=i-1 replication=true revision=2`,
		`msg="status corrected on renew" app=APP instance=i-1 from=DOWN to=UP revision=5`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 3 {
		t.Errorf("%d lines, want 3:\n%s", n, out)
	}
}
