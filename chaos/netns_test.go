//go:build chaos

package chaos

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Every object the harness creates carries the prefix, so that a run can
// find and remove what an earlier, killed run left behind. The prefix and
// the subnet are per harness (TestChaos: gkc-, 10.199.0; TestChaosSoak:
// gks-, 10.199.1), so that a soak and a chaos run share a machine without
// removing each other's namespaces.
var (
	prefix   = "gkc-"
	hubNS    = prefix + "hub"
	hostLink = prefix + "host" // the test's own veth in the root namespace
	subnet   = "10.199.0"      // /24 on the bridge; only addresses created here receive traffic
	hostAddr = subnet + ".254" // the checker's address (root namespace)
)

// useNet selects the harness's prefix and subnet; call it before newNetwork.
func useNet(p, sub string) {
	prefix, subnet = p, sub
	hubNS, hostLink, hostAddr = p+"hub", p+"host", sub+".254"
}

const (
	bridge   = "br0"            // inside hubNS
	nftTable = "inet gkc"       // per member namespace
	cmdLimit = 10 * time.Second // one ip/nft/tc command
)

// sh executes one command with a deadline and returns its combined output.
func sh(args ...string) (string, error) {
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return out.String(), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
		}
		return out.String(), nil
	case <-time.After(cmdLimit):
		_ = cmd.Process.Kill()
		return out.String(), fmt.Errorf("%s: no answer within %s", strings.Join(args, " "), cmdLimit)
	}
}

// nsRun runs a command inside a namespace.
func nsRun(ns string, args ...string) (string, error) {
	return sh(append([]string{"ip", "netns", "exec", ns}, args...)...)
}

// member is one namespace on the bridge: a node or a client zone.
type member struct {
	name string // namespace, prefix + short
	addr string // its address on the bridge
}

// network is the bridge and its members.
type network struct {
	members  map[string]*member // by short name
	netem    bool               // tc netem available (else delay is a tbf rate limit)
	netemErr string             // why not, as tc said

	mu     sync.Mutex
	faults map[string][]string // active nft rule sets by member, for the report
}

// checkTools fails when a tool the harness needs is missing.
func checkTools() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the chaos harness needs root (network namespaces)")
	}
	for _, t := range []string{"ip", "nft", "tc"} {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s not found: install iproute2 and nftables (.ci/run does)", t)
		}
	}
	return nil
}

// cleanup removes everything a run (this one or an earlier, killed one)
// created: the namespaces (which takes their veth ends with them) and the
// root namespace's veth. It is idempotent.
func cleanup() {
	out, _ := sh("ip", "netns", "list")
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			_, _ = sh("ip", "netns", "del", f[0])
		}
	}
	if _, err := sh("ip", "link", "show", hostLink); err == nil {
		_, _ = sh("ip", "link", "del", hostLink)
	}
}

// newNetwork builds the bridge in its own namespace, one namespace per
// member with a veth to the bridge, and the root namespace's veth for the
// checker. Names are short (veth names are at most 15 bytes).
func newNetwork(names []string) (*network, error) {
	cleanup()
	n := &network{members: map[string]*member{}, faults: map[string][]string{}}
	steps := [][]string{
		{"ip", "netns", "add", hubNS},
		{"ip", "netns", "exec", hubNS, "ip", "link", "add", bridge, "type", "bridge"},
		{"ip", "netns", "exec", hubNS, "ip", "link", "set", bridge, "up"},
		{"ip", "link", "add", hostLink, "type", "veth", "peer", "name", "hub-host", "netns", hubNS},
		{"ip", "netns", "exec", hubNS, "ip", "link", "set", "hub-host", "master", bridge, "up"},
		{"ip", "addr", "add", hostAddr + "/24", "dev", hostLink},
		{"ip", "link", "set", hostLink, "up"},
	}
	for i, short := range names {
		m := &member{name: prefix + short, addr: fmt.Sprintf("%s.%d", subnet, i+1)}
		n.members[short] = m
		hubEnd := "hub-" + short
		steps = append(steps,
			[]string{"ip", "netns", "add", m.name},
			[]string{"ip", "netns", "exec", m.name, "ip", "link", "set", "lo", "up"},
			[]string{"ip", "link", "add", prefix + "t-" + short, "type", "veth", "peer", "name", hubEnd, "netns", hubNS},
			[]string{"ip", "link", "set", prefix + "t-" + short, "netns", m.name},
			[]string{"ip", "netns", "exec", m.name, "ip", "link", "set", prefix + "t-" + short, "name", "eth0"},
			[]string{"ip", "netns", "exec", m.name, "ip", "addr", "add", m.addr + "/24", "dev", "eth0"},
			[]string{"ip", "netns", "exec", m.name, "ip", "link", "set", "eth0", "up"},
			[]string{"ip", "netns", "exec", hubNS, "ip", "link", "set", hubEnd, "master", bridge, "up"},
			[]string{"ip", "netns", "exec", m.name, "nft", "add", "table", nftTable},
			[]string{"ip", "netns", "exec", m.name, "nft", "add", "chain", nftTable, "in", "{ type filter hook input priority 0 ; }"},
			[]string{"ip", "netns", "exec", m.name, "nft", "add", "chain", nftTable, "out", "{ type filter hook output priority 0 ; }"},
		)
	}
	for _, s := range steps {
		if _, err := sh(s...); err != nil {
			cleanup()
			return nil, err
		}
	}
	// netem is a kernel module some kernels (minimal VMs) do not have.
	first := n.members[names[0]].name
	if out, err := nsRun(first, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"); err == nil {
		n.netem = true
		_, _ = nsRun(first, "tc", "qdisc", "del", "dev", "lo", "root")
	} else {
		n.netemErr = fmt.Sprintf("`tc qdisc add ... netem` said %q", strings.TrimSpace(out))
	}
	return n, nil
}

func (n *network) m(short string) *member { return n.members[short] }

// addrs lists the members' addresses as an nft set.
func (n *network) set(shorts ...string) string {
	var a []string
	for _, s := range shorts {
		a = append(a, n.m(s).addr)
	}
	return "{ " + strings.Join(a, ", ") + " }"
}

// nft adds one rule to a member's chain ("in" or "out").
func (n *network) nft(short, chain string, rule ...string) error {
	args := append([]string{"nft", "add", "rule", nftTable, chain}, rule...)
	_, err := nsRun(n.m(short).name, args...)
	if err == nil {
		n.mu.Lock()
		n.faults[short] = append(n.faults[short], chain+" "+strings.Join(rule, " "))
		n.mu.Unlock()
	}
	return err
}

// isolate drops all traffic between member short and the members in from,
// both ways (a partition edge), in short's namespace.
func (n *network) isolate(short string, from ...string) error {
	s := n.set(from...)
	if err := n.nft(short, "in", "ip", "saddr", s, "drop"); err != nil {
		return err
	}
	return n.nft(short, "out", "ip", "daddr", s, "drop")
}

// dropOneWay drops packets from member a to the members in to; packets the
// other way pass.
func (n *network) dropOneWay(a string, to ...string) error {
	return n.nft(a, "out", "ip", "daddr", n.set(to...), "drop")
}

// loss drops pct percent of the packets member short exchanges with the
// other members, at random; the checker's address is exempt, so that the
// health invariant measures the node and not the checker's own link.
func (n *network) loss(short string, pct int) error {
	p := fmt.Sprint(pct)
	if err := n.nft(short, "in", "ip", "saddr", "!=", hostAddr, "numgen", "random", "mod", "100", "<", p, "drop"); err != nil {
		return err
	}
	return n.nft(short, "out", "ip", "daddr", "!=", hostAddr, "numgen", "random", "mod", "100", "<", p, "drop")
}

// delay slows member short's outgoing packets: netem delay (with jitter)
// when the kernel has it, else a tbf rate limit that queues them. It
// returns exactly what it injected, for the report.
func (n *network) delay(short string, d time.Duration) (string, error) {
	ns := n.m(short).name
	var args []string
	var what string
	if n.netem {
		args = []string{"tc", "qdisc", "replace", "dev", "eth0", "root", "netem", "delay", fmt.Sprintf("%dms", d.Milliseconds()), fmt.Sprintf("%dms", d.Milliseconds()/4)}
		what = fmt.Sprintf("every outgoing packet delayed %s ± %s", d, d/4)
	} else {
		args = []string{"tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", "4mbit", "burst", "16kb", "latency", fmt.Sprintf("%dms", d.Milliseconds())}
		what = fmt.Sprintf("no fixed delay: outgoing packets beyond a 16 kB burst wait for 4 Mbit/s, up to %s, and are dropped past that; netem unavailable: %s", d, n.netemErr)
	}
	_, err := nsRun(ns, args...)
	return fmt.Sprintf("`%s` on %s (%s)", strings.Join(args, " "), short, what), err
}

// linkDown sets member short's only interface down (up = false) or up.
func (n *network) link(short string, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	_, err := nsRun(n.m(short).name, "ip", "link", "set", "eth0", state)
	return err
}

// heal removes every nft rule and qdisc and sets every link up.
func (n *network) heal() error {
	var errs []string
	for short, m := range n.members {
		if _, err := nsRun(m.name, "nft", "flush", "table", nftTable); err != nil {
			errs = append(errs, err.Error())
		}
		_, _ = nsRun(m.name, "tc", "qdisc", "del", "dev", "eth0", "root") // none is fine
		if err := n.link(short, true); err != nil {
			errs = append(errs, err.Error())
		}
	}
	n.mu.Lock()
	clear(n.faults)
	n.mu.Unlock()
	if len(errs) > 0 {
		return fmt.Errorf("heal: %s", strings.Join(errs, "; "))
	}
	return nil
}
