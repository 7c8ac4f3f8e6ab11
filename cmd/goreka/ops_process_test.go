package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The process tests run goreka as a real process: process nodes of
// harness_test.go.

// opsArgs keep a test server on loopback, on a free port, without peers.
func opsArgs(t *testing.T, extra ...string) (port int, args []string) {
	t.Helper()
	port = freePort(t, "127.0.0.1")
	return port, standaloneArgs("127.0.0.1", port, extra...)
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
			_, args := opsArgs(t, tc.args...)
			code, stdout, stderr := runToExit(t, 30*time.Second, args...)
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

var addrRE = regexp.MustCompile(`"addr":"([^"]+)"`)

// TestOpsSIGTERMDrainsInFlight starts goreka with JSON logs, holds a
// registration half-sent, sends SIGTERM, and checks that the registration
// still completes and that goreka exits 0 with well-formed logs.
func TestOpsSIGTERMDrainsInFlight(t *testing.T) {
	port, args := opsArgs(t, "--goreka.log.format=json", "--goreka.access-log=true", "--goreka.server.shutdown-timeout=20s")
	p := processNode(t, "ops", "127.0.0.1", port, args...)
	p.start()
	m := addrRE.FindStringSubmatch(p.waitLine(`"goreka started"`))
	if m == nil || m[1] != p.addr() {
		t.Fatalf("start-up line does not name addr %s; log:\n%s", p.addr(), p.logs())
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

	p.signal(syscall.SIGTERM)
	p.waitLine(`"shutting down"`)
	io.WriteString(conn, body[half:])
	status, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 204") {
		t.Fatalf("in-flight registration: %q, %v", status, err)
	}
	p.waitLine(`"msg":"registered"`)

	if code := p.waitExit(stopWithin); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, p.logs())
	}
	all := p.logs().String()
	for _, l := range strings.Split(strings.TrimSpace(all), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("not a JSON log line: %s", l)
		}
	}
	if !strings.Contains(all, `"route":"/eureka/apps/:app","status":204`) {
		t.Errorf("no access log line for the registration; log:\n%s", all)
	}
}
