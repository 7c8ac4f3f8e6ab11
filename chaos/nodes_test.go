//go:build chaos

package chaos

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
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

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	paused  bool
	starts  int
	logFile *os.File
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
	if nd.cmd != nil {
		return fmt.Errorf("%s already running", nd.short)
	}
	f, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "\n=== start %d at %s\n", nd.starts+1, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command("ip", append([]string{"netns", "exec", nd.ns, nd.bin}, nd.args()...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	nd.cmd, nd.done, nd.logFile, nd.paused = cmd, make(chan struct{}), f, false
	nd.starts++
	done := nd.done
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	return nil
}

// signal sends sig and, for SIGKILL and SIGTERM, waits (bounded) for the exit.
func (nd *node) signal(sig syscall.Signal) error {
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	if cmd == nil {
		nd.mu.Unlock()
		return fmt.Errorf("%s is not running", nd.short)
	}
	switch sig {
	case syscall.SIGSTOP:
		nd.paused = true
	case syscall.SIGCONT:
		nd.paused = false
	}
	nd.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil {
		return err
	}
	if sig != syscall.SIGKILL && sig != syscall.SIGTERM {
		return nil
	}
	if nd.paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	nd.mu.Lock()
	nd.cmd, nd.paused = nil, false
	nd.mu.Unlock()
	return nil
}

// up reports whether the node is running and not paused.
func (nd *node) up() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd != nil && !nd.paused
}

// waitHealthy polls the health endpoint from the root namespace.
func (nd *node) waitHealthy(c *http.Client, limit time.Duration) error {
	end := time.Now().Add(limit)
	for {
		resp, err := c.Get(fmt.Sprintf("http://%s:%d/actuator/health", nd.addr, nodePort))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s not healthy within %s: %v", nd.short, limit, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func buildGoreka(dir string) (string, error) {
	bin := filepath.Join(dir, "goreka")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/goreka")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/goreka: %v\n%s", err, out)
	}
	return bin, nil
}
