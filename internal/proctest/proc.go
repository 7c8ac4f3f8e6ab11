package proctest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options say what Start runs.
type Options struct {
	// Name names the process in errors.
	Name string
	// Path and Args are the program and its arguments (without argv[0]).
	Path string
	Args []string
	// Env is the child's whole environment (nil: the test's, as with
	// os/exec; goreka reads its configuration from the environment too,
	// so a test that must not be steered by it passes its own). Dir is
	// its working directory.
	Env []string
	Dir string
	// Stdout and Stderr receive the output (a *Log, say). With LogFile
	// set, what they leave nil is appended to that file instead, after
	// the line LogHeader (if any); the file is closed once the process
	// has exited.
	Stdout, Stderr io.Writer
	LogFile        string
	LogHeader      string
	// Group runs the child in its own process group and sends every
	// signal to the group, so that it reaches what a wrapper script
	// started.
	Group bool
}

// Proc is a started process.
type Proc struct {
	name string
	cmd  *exec.Cmd
	log  string // LogFile
	done chan struct{}
	err  error // Wait's, once done is closed

	mu     sync.Mutex
	paused bool // SIGSTOPped
}

// Start runs the process; it is killed (SIGKILL) if the test binary dies
// first, even by a timeout's panic, which runs no cleanup.
func Start(o Options) (*Proc, error) {
	cmd := exec.Command(o.Path, o.Args...)
	cmd.Env, cmd.Dir = o.Env, o.Dir
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	var f *os.File
	if o.LogFile != "" && (o.Stdout == nil || o.Stderr == nil) {
		var err error
		if f, err = os.OpenFile(o.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return nil, err
		}
		if o.LogHeader != "" {
			fmt.Fprintln(f, o.LogHeader)
		}
		if cmd.Stdout == nil {
			cmd.Stdout = f
		}
		if cmd.Stderr == nil {
			cmd.Stderr = f
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: o.Group, Pdeathsig: syscall.SIGKILL}
	// A grandchild that inherited an output pipe (a Log) would keep Wait,
	// and so Done and Stop, blocked after the process itself has exited.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		if f != nil {
			f.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", o.Name, err)
	}
	p := &Proc{name: o.Name, cmd: cmd, log: o.LogFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		if f != nil {
			f.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and its output is written.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is Wait's error once the process has exited (nil before, and for an
// exit with code 0).
func (p *Proc) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// ExitCode is the exit code once the process has exited, -1 before and
// after a signal ended it.
func (p *Proc) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// LogFile is Options.LogFile.
func (p *Proc) LogFile() string { return p.log }

// Signal sends sig to the process (to its group with Options.Group);
// SIGSTOP and SIGCONT are tracked for Paused and Stop. A process that has
// exited is not signalled.
func (p *Proc) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	pid := p.cmd.Process.Pid
	if p.cmd.SysProcAttr.Setpgid {
		pid = -pid
	}
	if err := syscall.Kill(pid, sig); err != nil && !p.Exited() {
		return fmt.Errorf("signal %v to %s: %w", sig, p.name, err)
	}
	p.mu.Lock()
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	p.mu.Unlock()
	return nil
}

// Paused reports whether the process is SIGSTOPped.
func (p *Proc) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// Stop sends sig (SIGTERM for a graceful stop, SIGKILL), continues a
// paused process so that it can act on it, and waits up to within for the
// exit; then it kills the process (its group) and returns an error saying
// so.
func (p *Proc) Stop(sig syscall.Signal, within time.Duration) error {
	if p.Exited() {
		return nil
	}
	if err := p.Signal(sig); err != nil {
		return err
	}
	if sig != syscall.SIGKILL && p.Paused() {
		_ = p.Signal(syscall.SIGCONT)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(within):
		_ = p.Signal(syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not exit within %s of %v; killed", p.name, within, sig)
	}
}

// Wait waits up to within for the process to exit by itself and returns
// its exit code; past within it kills the process and returns an error.
func (p *Proc) Wait(within time.Duration) (int, error) {
	select {
	case <-p.done:
		return p.ExitCode(), nil
	case <-time.After(within):
		_ = p.Signal(syscall.SIGKILL)
		<-p.done
		return -1, fmt.Errorf("%s did not exit within %s; killed", p.name, within)
	}
}

// ErrExited is wrapped by the Wait* errors when the process exited before
// the condition held.
var ErrExited = errors.New("process exited")

// WaitFor polls cond until it holds, the process exits or within passes;
// the error says which, with what cond last described.
func (p *Proc) WaitFor(within time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(within)
	poll := 5 * time.Millisecond
	for {
		ok, desc := cond()
		if ok {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s: %s: %w (code %d); last: %s", p.name, what, ErrExited, p.ExitCode(), desc)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s: not after %s; last: %s", p.name, what, within, desc)
		}
		time.Sleep(poll) // polling a process that runs on its own clock
		poll = min(2*poll, 50*time.Millisecond)
	}
}

// WaitListening waits until addr (host:port) accepts TCP connections.
func (p *Proc) WaitListening(addr string, within time.Duration) error {
	return p.WaitFor(within, "listening on "+addr, func() (bool, string) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
}

// WaitHTTP waits until GET url answers 200 (c nil: http.DefaultClient).
func (p *Proc) WaitHTTP(c *http.Client, url string, within time.Duration) error {
	if c == nil {
		c = http.DefaultClient
	}
	return p.WaitFor(within, "GET "+url+" answers 200", func() (bool, string) {
		resp, err := c.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// Tail is the last n lines of the log file (Options.LogFile).
func (p *Proc) Tail(n int) string { return Tail(p.log, n) }

// Tail returns the last n lines of a file.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Build compiles goreka (cmd/goreka) into dir and returns the binary's
// path. It names the package by its import path, so it works from any
// directory of the module and of a module that replaces it.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "goreka")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/goreka/goreka/cmd/goreka")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/goreka: %v\n%s", err, out)
	}
	return bin, nil
}

// asGorekaEnv set to 1 makes a test binary goreka's main; see RunAsGoreka.
const asGorekaEnv = "GOREKA_TEST_AS_GOREKA"

// RunAsGoreka, called first in TestMain, turns a test binary that Self
// started into goreka: it runs run with the arguments, the environment
// (without the marker) and the standard streams, and exits with its code.
// In a test binary run by go test it returns at once.
func RunAsGoreka(run func(args, env []string, stdout, stderr io.Writer) int) {
	if os.Getenv(asGorekaEnv) != "1" {
		return
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, asGorekaEnv+"=") {
			env = append(env, kv)
		}
	}
	os.Exit(run(os.Args[1:], env, os.Stdout, os.Stderr))
}

// Self returns the running test binary and the environment entry that
// makes it goreka (RunAsGoreka) when started with them.
func Self() (path, envEntry string, err error) {
	path, err = os.Executable()
	return path, asGorekaEnv + "=1", err
}
