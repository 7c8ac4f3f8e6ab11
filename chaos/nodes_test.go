//go:build chaos

package chaos

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goreka/goreka/internal/proctest"
)

// Timings of the run: short, so that a lease, an eviction and a heal fit
// in a CI minute. Bounds derived from them are stated in RELIABILITY.md.
const (
	renewInterval = time.Second
	leaseDuration = 4 * time.Second
	evictInterval = time.Second
	cacheInterval = time.Second
	fetchInterval = 3 * time.Second
	nodePort      = 8761
)

// timing is what a node and a fleet are configured with: TestChaos uses
// the short constants above, TestChaosSoak Eureka's defaults.
type timing struct {
	renew, lease, evict, cache, fetch time.Duration
	// thresholdUpdate is renewal-threshold-update-interval-ms.
	thresholdUpdate time.Duration
}

var chaosTiming = timing{renewInterval, leaseDuration, evictInterval, cacheInterval, fetchInterval, 5 * time.Second}

// node is one goreka process in its namespace.
type node struct {
	short, addr, ns string
	bin, logPath    string
	peers           []string
	tm              timing
	extra           []string // appended to args (a later flag wins)

	mu     sync.Mutex
	p      *proctest.Proc // nil when stopped by a signal
	starts int
}

func (nd *node) url() string { return fmt.Sprintf("http://%s:%d/eureka/", nd.addr, nodePort) }

func (nd *node) args() []string {
	return append([]string{
		"--server.address=" + nd.addr,
		fmt.Sprintf("--server.port=%d", nodePort),
		"--eureka.instance.hostname=" + nd.addr,
		"--eureka.client.service-url.defaultZone=" + strings.Join(nd.peers, ","),
		fmt.Sprintf("--eureka.server.eviction-interval-timer-in-ms=%d", nd.tm.evict.Milliseconds()),
		fmt.Sprintf("--eureka.server.response-cache-update-interval-ms=%d", nd.tm.cache.Milliseconds()),
		fmt.Sprintf("--eureka.server.expected-client-renewal-interval-seconds=%d", int(nd.tm.renew.Seconds())),
		"--eureka.server.wait-time-in-ms-when-sync-empty=0",
		// Eureka recomputes the expected renewals every 15 min; after a
		// restart storm the replicated registrations inflate them and
		// self-preservation would hold every stopped client for that long.
		fmt.Sprintf("--eureka.server.renewal-threshold-update-interval-ms=%d", nd.tm.thresholdUpdate.Milliseconds()),
		"--eureka.server.peer-node-connect-timeout-ms=500",
		"--eureka.server.peer-node-read-timeout-ms=2000",
		"--eureka.server.registry-sync-retry-wait-ms=500",
	}, nd.extra...)
}

// start runs the node in its namespace; ip netns exec execs goreka, so the
// process is goreka itself (signals reach it directly), and it dies with
// the test (Pdeathsig).
func (nd *node) start() error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.p != nil {
		return fmt.Errorf("%s already running", nd.short)
	}
	p, err := proctest.Start(proctest.Options{Name: nd.short, Path: "ip", Args: append([]string{"netns", "exec", nd.ns, nd.bin}, nd.args()...),
		LogFile: nd.logPath, LogHeader: fmt.Sprintf("\n=== start %d at %s", nd.starts+1, time.Now().Format(time.RFC3339Nano))})
	if err != nil {
		return err
	}
	nd.p = p
	nd.starts++
	return nil
}

// signal sends sig and, for SIGKILL and SIGTERM, waits (bounded) for the exit.
func (nd *node) signal(sig syscall.Signal) error {
	nd.mu.Lock()
	p := nd.p
	if p == nil {
		nd.mu.Unlock()
		return fmt.Errorf("%s is not running", nd.short)
	}
	nd.mu.Unlock()
	if sig != syscall.SIGKILL && sig != syscall.SIGTERM {
		return p.Signal(sig) // SIGSTOP and SIGCONT: p.Paused
	}
	// Stop continues a paused node and kills it after 20 s.
	_ = p.Stop(sig, 20*time.Second)
	nd.mu.Lock()
	nd.p = nil
	nd.mu.Unlock()
	return nil
}

// up reports whether the node is running and not paused.
func (nd *node) up() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.p != nil && !nd.p.Paused()
}

// paused reports whether the node is running and SIGSTOPped.
func (nd *node) paused() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.p != nil && nd.p.Paused()
}

// waitHealthy polls the health endpoint from the root namespace; it ends
// early when the node's process exits.
func (nd *node) waitHealthy(c *http.Client, limit time.Duration) error {
	nd.mu.Lock()
	p := nd.p
	nd.mu.Unlock()
	if p == nil {
		return fmt.Errorf("%s is not running", nd.short)
	}
	if err := p.WaitHTTP(c, fmt.Sprintf("http://%s:%d/actuator/health", nd.addr, nodePort), limit); err != nil {
		return fmt.Errorf("%s not healthy within %s: %v", nd.short, limit, err)
	}
	return nil
}
