package proctest

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPortsAreBelowTheEphemeralRangeOnceAndReserved(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		p := Port(t, "127.0.0.1")
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		if p < portLow || p >= portHigh {
			t.Errorf("port %d outside %d-%d", p, portLow, portHigh)
		}
		// Another test binary asking for the same port does not get it
		// (a second lock on the file conflicts as another process's would).
		lock, ok := reserve(p)
		switch {
		case !ok: // the lock this binary holds refused the second one
		case lock == nil:
			t.Fatalf("port %d: the reservation directory under %s is not usable, so nothing was checked", p, os.TempDir())
		default:
			lock.Close()
			t.Errorf("port %d not reserved against other binaries", p)
		}
	}
}

func TestStartWaitAndLog(t *testing.T) {
	var out Log
	p, err := Start(Options{Name: "sh", Path: "/bin/sh", Args: []string{"-c", "echo one; echo two >&2; exit 3"}, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(10 * time.Second); code != 3 || err != nil {
		t.Fatalf("exit %d %v", code, err)
	}
	if line, ok := out.Next("two"); !ok || line != "two" || len(out.Grep("one")) != 1 {
		t.Errorf("log %q", out.String())
	}
	err = p.WaitFor(time.Second, "never", func() (bool, string) { return false, "nothing" })
	if !errors.Is(err, ErrExited) {
		t.Errorf("WaitFor on an exited process: %v", err)
	}
}

func TestStopTerminatesThenKills(t *testing.T) {
	log := t.TempDir() + "/log"
	p, err := Start(Options{Name: "sleep", Path: "/bin/sh", Args: []string{"-c", "trap '' TERM; echo up; sleep 60 & wait"},
		LogFile: log, LogHeader: "=== start", Group: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitFor(10*time.Second, "up", func() (bool, string) { return strings.Contains(p.Tail(5), "up"), p.Tail(5) }); err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGSTOP); err != nil || !p.Paused() {
		t.Fatalf("SIGSTOP: %v", err)
	}
	// The shell ignores SIGTERM: Stop kills it (and its sleep, the group).
	if err := p.Stop(syscall.SIGTERM, 200*time.Millisecond); err == nil || !p.Exited() {
		t.Errorf("Stop: %v, exited %v", err, p.Exited())
	}
	if got := p.Tail(5); !strings.HasPrefix(got, "=== start\nup") {
		t.Errorf("log file %q", got)
	}
}
