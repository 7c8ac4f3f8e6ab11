//go:build compat

package suite

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goreka/goreka/internal/proctest"
)

// proc is a process the suite started: a server or an agent (internal/proctest). It runs in its own
// process group so that a signal reaches the JVM/node/python even if run.sh did not exec; its output
// is appended to log.
type proc struct {
	name string
	log  string
	*proctest.Proc
}

// procs keeps every process started, so that cleanup kills them all, also on failure or timeout.
type procs struct {
	mu  sync.Mutex
	all []*proc
}

func (ps *procs) start(name, logPath, dir string, env []string, argv ...string) (*proc, error) {
	// The direct child (run.sh execs the runtime) dies with the test binary, even when go test's
	// -timeout panics before any cleanup can run (proctest's Pdeathsig).
	pp, err := proctest.Start(proctest.Options{Name: name, Path: argv[0], Args: argv[1:], Dir: dir,
		Env: append(os.Environ(), env...), LogFile: logPath, Group: true,
		LogHeader: fmt.Sprintf("\n===== %s start %s: %s %s", time.Now().Format(time.RFC3339), name, strings.Join(env, " "), strings.Join(argv, " "))})
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, log: logPath, Proc: pp}
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	return p, nil
}

func (p *proc) exited() bool { return p.Exited() }

// signal sends sig to the process group.
func (p *proc) signal(sig syscall.Signal) { _ = p.Signal(sig) }

// stop sends sig and waits up to wait for the exit, then kills the group.
func (p *proc) stop(sig syscall.Signal, wait time.Duration) error { return p.Stop(sig, wait) }

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
		case <-p.Done():
		case <-time.After(10 * time.Second):
		}
	}
}

// freePort hands out a loopback port that is free now, below the kernel's ephemeral range (between
// our check and the agent's bind, an outgoing connection of the JVMs, node or python could take a
// port of that range as its local port: "Address already in use" at start-up), once per run and to
// no other test binary (proctest.FreePort).
func freePort() (int, error) { return proctest.FreePort() }

// tail returns the last n lines of a file.
func tail(path string, n int) string { return proctest.Tail(path, n) }

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
