package proctest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// defaultLow and defaultHigh bound the ports handed out, [low, high), when
// they lie below the kernel's ephemeral range (32768-60999 by default).
const defaultLow, defaultHigh = 20000, 32000

var (
	portMu    sync.Mutex
	portLow   int
	portHigh  int
	nextPort  int
	handedOut = map[int]bool{}
	held      []*os.File // the lock files of the ports handed out, open until the binary exits
)

// Port returns a port free now on every one of ips (loopback addresses,
// such as 127.0.0.2; 127.0.0.1 if none), handed out once per test binary
// and reserved against other test binaries (see the package comment). The
// test is skipped if the first address cannot be listened on at all, and
// fails if no port is left.
func Port(t testing.TB, ips ...string) int {
	t.Helper()
	if len(ips) == 0 {
		ips = []string{"127.0.0.1"}
	}
	if ln, err := net.Listen("tcp", net.JoinHostPort(ips[0], "0")); err != nil {
		t.Skipf("cannot listen on %s: %v", ips[0], err)
	} else {
		ln.Close()
	}
	p, err := FreePort(ips...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FreePort is Port for code without a testing.TB (goroutines of the compat
// suite); it returns an error instead of skipping or failing.
func FreePort(ips ...string) (int, error) {
	if len(ips) == 0 {
		ips = []string{"127.0.0.1"}
	}
	portMu.Lock()
	defer portMu.Unlock()
	if nextPort == 0 {
		portLow, portHigh = portRange()
		nextPort = portLow + int(time.Now().UnixNano()%int64(portHigh-portLow))
	}
	for range portHigh - portLow {
		p := nextPort
		if nextPort++; nextPort >= portHigh {
			nextPort = portLow
		}
		if handedOut[p] || !portFree(p, ips) {
			continue
		}
		lock, ok := reserve(p)
		if !ok {
			continue // another test binary has it
		}
		handedOut[p] = true
		if lock != nil {
			held = append(held, lock)
		}
		return p, nil
	}
	return 0, fmt.Errorf("no port in %d-%d free on all of %v", portLow, portHigh-1, ips)
}

// portRange is defaultLow-defaultHigh cut to below the kernel's ephemeral
// range, or the range above it when too little is left below.
func portRange() (low, high int) {
	low, high = defaultLow, defaultHigh
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low, high
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return low, high
	}
	eLow, err1 := strconv.Atoi(f[0])
	eHigh, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return low, high
	}
	if eLow < high {
		high = eLow
	}
	if high-low < 1000 && eHigh < 64535 {
		low, high = eHigh+1, 65536
	}
	if high-low < 1000 {
		return defaultLow, defaultHigh // nowhere outside it; the check before use still holds
	}
	return low, high
}

func portFree(p int, ips []string) bool {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for _, ip := range ips {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p)))
		if err != nil {
			return false
		}
		lns = append(lns, ln)
	}
	return true
}

// reserve takes an exclusive lock on the port's file in a directory shared
// by every test binary of the machine; the kernel drops the lock when the
// binary exits, however it ends. ok is false when another binary holds it.
// Where the directory cannot be used (another user's, read-only), the
// reservation is skipped: the check that the port is free still holds.
func reserve(p int) (lock *os.File, ok bool) {
	dir := filepath.Join(os.TempDir(), "goreka-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, true
	}
	_ = os.Chmod(dir, 0o1777) // shared by users, as /tmp is; fails harmlessly on another's
	// Read-only is enough for flock, so a file another user created serves too.
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		return nil, true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err != syscall.EWOULDBLOCK
	}
	return f, true
}
