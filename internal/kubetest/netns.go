package kubetest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// NetNS is a network namespace with a veth pair to the root namespace:
// its end (eth0) holds Subnet.1 .. Subnet.n, the root namespace's end
// Subnet.254, so processes of the root namespace (goreka, a Spring Boot
// app) reach the namespace's addresses through the veth, and the API
// server accepts them in EndpointSlices (they are not loopback).
type NetNS struct {
	Name   string // the namespace (ip netns), also the host veth's name
	Subnet string // the /24's first three octets, e.g. 10.244.7
	n      int
}

// NewNetNS creates the namespace gkk-<short> on subnet (10.244.N) with
// addrs addresses, removing a leftover of the same name first; it is
// removed when the test ends. The test is skipped without root or ip(8),
// unless Required. Subnets must differ between tests that run at once.
func NewNetNS(t testing.TB, short, subnet string, addrs int) *NetNS {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil || os.Geteuid() != 0 {
		unavailable(t, "network namespaces need root and ip(8) (iproute2)")
	}
	n := &NetNS{Name: "gkk-" + short, Subnet: subnet, n: addrs}
	n.remove()
	steps := [][]string{
		{"ip", "netns", "add", n.Name},
		{"ip", "netns", "exec", n.Name, "ip", "link", "set", "lo", "up"},
		{"ip", "link", "add", n.Name, "type", "veth", "peer", "name", "eth0", "netns", n.Name},
		{"ip", "addr", "add", subnet + ".254/24", "dev", n.Name},
		{"ip", "link", "set", n.Name, "up"},
		{"ip", "netns", "exec", n.Name, "ip", "link", "set", "eth0", "up"},
	}
	for i := 1; i <= addrs; i++ {
		steps = append(steps, []string{"ip", "netns", "exec", n.Name, "ip", "addr", "add", n.Addr(i) + "/24", "dev", "eth0"})
	}
	t.Cleanup(n.remove)
	for _, s := range steps {
		if err := run(s...); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// Addr is the namespace's i-th address (1-based).
func (n *NetNS) Addr(i int) string { return fmt.Sprintf("%s.%d", n.Subnet, i) }

// Host is the root namespace's address on the veth.
func (n *NetNS) Host() string { return n.Subnet + ".254" }

func (n *NetNS) remove() {
	_ = run("ip", "netns", "del", n.Name)
	_ = run("ip", "link", "del", n.Name) // gone with the namespace, unless a half-made one was left
}

// Listen opens a TCP listener inside the namespace (addr is one of its
// addresses and a port). A socket stays in the namespace it was made in,
// so the listener serves from there although the test's own goroutines
// run in the root namespace: the calling thread enters the namespace
// only for the socket(2) and bind(2).
func (n *NetNS) Listen(addr string) (net.Listener, error) {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + n.Name)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("setns %s: %w", n.Name, err)
	}
	ln, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays in the namespace: keep it locked, so that it
		// ends with this goroutine instead of running others.
		if ln != nil {
			ln.Close()
		}
		return nil, fmt.Errorf("setns back: %w", err)
	}
	runtime.UnlockOSThread()
	return ln, lerr
}

func run(args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("%s: no answer within 10s", strings.Join(args, " "))
	}
}
