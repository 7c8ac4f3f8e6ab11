package main

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
	l := changeLog{log: slog.New(slog.NewTextHandler(&buf, nil)), now: clk.Now}
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
