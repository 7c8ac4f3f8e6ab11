package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The process tests run goreka as a real process: the test binary re-runs
// itself with opsMainEnv set, and then it is goreka's main (this spares a
// separate go build and needs no TestMain, which other tests may own).
const opsMainEnv = "GOREKA_OPS_TEST_MAIN"

func init() {
	if os.Getenv(opsMainEnv) != "1" {
		return
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, opsMainEnv+"=") {
			env = append(env, kv)
		}
	}
	os.Exit(run(os.Args[1:], env, os.Stdout, os.Stderr))
}

// opsBaseArgs keep a test server on loopback, on a free port, without peers.
var opsBaseArgs = []string{
	"--server.address=127.0.0.1", "--server.port=0", "--eureka.instance.hostname=localhost",
	"--eureka.client.service-url.defaultZone=",
	"--eureka.client.register-with-eureka=false", "--eureka.client.fetch-registry=false",
}

func opsCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = []string{opsMainEnv + "=1", "HOME=" + t.TempDir()}
	cmd.Dir = t.TempDir()
	return cmd
}

// opsExit runs goreka to completion and returns its exit code and output.
func opsExit(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := opsCommand(t, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("goreka %v did not exit; stderr:\n%s", args, errb.String())
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

func TestOpsConfigErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badYAML := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(badYAML, []byte("server:\n  port: [1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // each must appear in the one line on stderr
	}{
		{"bad number", []string{"--server.port=abc"}, 2, []string{"invalid configuration", "server.port", `"abc"`}},
		{"bad duration", []string{"--goreka.server.read-timeout=fast"}, 2, []string{"goreka.server.read-timeout", `"fast"`}},
		{"bad boolean", []string{"--eureka.server.enable-self-preservation=maybe"}, 2, []string{"eureka.server.enable-self-preservation", `"maybe"`}},
		{"missing config file", []string{"--spring.config.location=" + filepath.Join(dir, "absent.yml")}, 2, []string{filepath.Join(dir, "absent.yml")}},
		{"unparseable config file", []string{"--spring.config.location=" + badYAML}, 2, []string{badYAML}},
		{"missing certificate", []string{"--server.ssl.certificate=" + filepath.Join(dir, "absent.pem"), "--server.ssl.certificate-private-key=" + garbage}, 2, []string{"absent.pem"}},
		{"bad certificate", []string{"--server.ssl.certificate=" + garbage, "--server.ssl.certificate-private-key=" + garbage}, 2, []string{"server.ssl.certificate", garbage}},
		{"port in use", []string{"--server.port=" + busyPort}, 1, []string{"127.0.0.1:" + busyPort, "address already in use"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, opsBaseArgs...), tc.args...)
			code, stdout, stderr := opsExit(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout: %q", stdout)
			}
			line := strings.TrimSuffix(stderr, "\n")
			if line == "" || strings.Contains(line, "\n") {
				t.Fatalf("want one line on stderr, got %q", stderr)
			}
			if !strings.HasPrefix(line, "goreka: ") {
				t.Errorf("line does not start with the program name: %q", line)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("%q does not name %s", line, w)
				}
			}
		})
	}
}

// opsProcess is a running goreka whose stderr is read line by line.
type opsProcess struct {
	cmd   *exec.Cmd
	lines chan string
	all   *strings.Builder
	done  chan struct{}
}

func startOps(t *testing.T, args ...string) *opsProcess {
	t.Helper()
	cmd := opsCommand(t, append(append([]string{}, opsBaseArgs...), args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &opsProcess{cmd: cmd, lines: make(chan string, 1000), all: new(strings.Builder), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return p
}

// waitLine returns the first line containing s; it fails after a deadline
// (a real process on a loaded machine, not a timing assertion).
func (p *opsProcess) waitLine(t *testing.T, s string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("goreka exited before logging %q; log:\n%s", s, p.all)
			}
			p.all.WriteString(l + "\n")
			if strings.Contains(l, s) {
				return l
			}
		case <-deadline:
			t.Fatalf("no log line with %q; log:\n%s", s, p.all)
		}
	}
}

var addrRE = regexp.MustCompile(`"addr":"([^"]+)"`)

// TestOpsSIGTERMDrainsInFlight starts goreka with JSON logs, holds a
// registration half-sent, sends SIGTERM, and checks that the registration
// still completes and that goreka exits 0 with well-formed logs.
func TestOpsSIGTERMDrainsInFlight(t *testing.T) {
	p := startOps(t, "--goreka.log.format=json", "--goreka.access-log=true", "--goreka.server.shutdown-timeout=20s")
	m := addrRE.FindStringSubmatch(p.waitLine(t, `"goreka started"`))
	if m == nil {
		t.Fatalf("no addr in the start-up line; log:\n%s", p.all)
	}
	conn, err := net.Dial("tcp", m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	body := `{"instance":{"instanceId":"i-1","hostName":"h1","app":"ORDERS","ipAddr":"10.0.0.1","status":"UP",` +
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`
	half := len(body) / 2
	// Expect: 100-continue makes the server say when the handler starts
	// reading the body, so the request is known to be in flight.
	fmt.Fprintf(conn, "POST /eureka/apps/ORDERS HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body))
	br := bufio.NewReader(conn)
	if status, err := br.ReadString('\n'); err != nil || !strings.Contains(status, "100") {
		t.Fatalf("want 100 Continue, got %q, %v", status, err)
	}
	if _, err := br.ReadString('\n'); err != nil { // blank line after the interim response
		t.Fatal(err)
	}
	io.WriteString(conn, body[:half])

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLine(t, `"shutting down"`)
	io.WriteString(conn, body[half:])
	status, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 204") {
		t.Fatalf("in-flight registration: %q, %v", status, err)
	}
	p.waitLine(t, `"msg":"registered"`)

	for l := range p.lines { // read to EOF before Wait
		p.all.WriteString(l + "\n")
	}
	err = p.cmd.Wait()
	if code := p.cmd.ProcessState.ExitCode(); err != nil || code != 0 {
		t.Fatalf("exit %d (%v); log:\n%s", code, err, p.all)
	}
	for _, l := range strings.Split(strings.TrimSpace(p.all.String()), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("not a JSON log line: %s", l)
		}
	}
	if !strings.Contains(p.all.String(), `"route":"/eureka/apps/:app","status":204`) {
		t.Errorf("no access log line for the registration; log:\n%s", p.all)
	}
}
