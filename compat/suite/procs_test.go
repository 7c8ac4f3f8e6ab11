//go:build compat

package suite

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a process the suite started: a server or an agent. It runs in its own process group so
// that a signal reaches the JVM/node/python even if run.sh did not exec.
type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// procs keeps every process started, so that cleanup kills them all, also on failure or timeout.
type procs struct {
	mu  sync.Mutex
	all []*proc
}

func (ps *procs) start(name, logPath, dir string, env []string, argv ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "\n===== %s start %s: %s %s\n", time.Now().Format(time.RFC3339), name, strings.Join(env, " "), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Pdeathsig: the direct child (run.sh execs the runtime) dies with the test binary, even when
	// go test's -timeout panics before any cleanup can run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process group.
func (p *proc) signal(sig syscall.Signal) {
	if p.cmd.Process != nil && !p.exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// stop sends sig and waits up to wait for the exit, then kills the group.
func (p *proc) stop(sig syscall.Signal, wait time.Duration) error {
	p.signal(sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(wait):
		p.signal(syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not exit within %s of %s; killed", p.name, wait, sig)
	}
}

// killAll kills every process still running; used in cleanup.
func (ps *procs) killAll() {
	ps.mu.Lock()
	all := append([]*proc(nil), ps.all...)
	ps.mu.Unlock()
	for _, p := range all {
		p.signal(syscall.SIGKILL)
	}
	for _, p := range all {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
	}
}

// freePort asks the kernel for a free loopback port.
// freePort hands out a port that is free now, below the kernel's ephemeral
// range (32768-60999 here): a port taken from ":0" lies in that range, and
// between our check and the agent's bind, any outgoing connection of the
// JVMs, node or python may take it as its local port ("Address already in
// use" at start-up). Ports are handed out once per run.
func freePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	if nextPort == 0 {
		nextPort = portLow + int(time.Now().UnixNano()%int64(portHigh-portLow))
	}
	for range portHigh - portLow {
		p := nextPort
		if nextPort++; nextPort >= portHigh {
			nextPort = portLow
		}
		if handedOut[p] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		handedOut[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d", portLow, portHigh-1)
}

const portLow, portHigh = 20000, 32000

var (
	portMu    sync.Mutex
	nextPort  int
	handedOut = map[int]bool{}
)

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// runBuild runs a build script, logging to logPath; the error carries the log's tail.
func runBuild(script, logPath string, timeout time.Duration, env ...string) error {
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command("bash", script)
	cmd.Dir = filepath.Dir(script)
	cmd.Stdout, cmd.Stderr = f, f
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = errors.New("timed out after " + timeout.String())
	}
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", script, err, tail(logPath, 30))
	}
	return nil
}
