//go:build compat

package export

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/internal/kubetest"
	"github.com/goreka/goreka/internal/proctest"
)

// A real consumer of the export: Spring Cloud Kubernetes' DiscoveryClient
// (spring-cloud-starter-kubernetes-client, spring-cloud-dependencies
// 2025.0.0; compat/agents/spring-kubernetes) pointed at the test API
// server by KUBECONFIG lists two real Spring Boot apps (the unchanged
// Eureka client, compat/agents/spring-boot3) that registered with a real
// goreka process exporting to that API server; one set OUT_OF_SERVICE is
// serving=false in goreka's EndpointSlice and out of the Endpoints' ready
// addresses within 1 s and leaves its list, one stopped (its client
// cancels) is gone. The apps
// listen on loopback and register the address 10.244.60.x (the API server
// refuses loopback): the DiscoveryClient lists addresses and ports, it
// connects to none, so nothing has to reach them.
func TestSpringCloudKubernetesDiscovery(t *testing.T) {
	api := kubetest.Start(t)
	sp := newSpace(t, api, "spring")
	agents, _ := filepath.Abs("../../compat/agents")
	out := t.TempDir()
	// spring-kubernetes' scripts are build-k8s.sh and run-k8s.sh: it is not a
	// Eureka client, and compat/suite takes every agent with a build.sh for one.
	for _, a := range []string{"spring-boot3/build.sh", "spring-kubernetes/build-k8s.sh"} {
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(agents, a))
		// The timeout kills the build's whole process group (mvn and its
		// JVMs hold the output pipe open past bash), then stops waiting.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 10 * time.Second
		b, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("build %s: %v\n%s", a, err, b)
		}
	}
	bin, err := proctest.Build(out)
	if err != nil {
		t.Fatal(err)
	}
	gport := proctest.Port(t)
	g, err := proctest.Start(proctest.Options{Name: "goreka", Path: bin, LogFile: filepath.Join(out, "goreka.log"),
		Env: append(os.Environ(), "SERVER_PORT="+strconv.Itoa(gport), "SERVER_ADDRESS=127.0.0.1",
			"GOREKA_KUBERNETES_ENABLED=true", "GOREKA_KUBERNETES_KUBECONFIG="+api.Kubeconfig(kubetest.Goreka),
			"GOREKA_KUBERNETES_RESYNCGRACE=0s", "GOREKA_KUBERNETES_EXPORT_ENABLED=true", "GOREKA_KUBERNETES_EXPORT_NAMESPACE="+sp.name)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Stop(syscall.SIGTERM, 10*time.Second) })
	if err := g.WaitListening("127.0.0.1:"+strconv.Itoa(gport), 60*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, proctest.Tail(filepath.Join(out, "goreka.log"), 30))
	}
	eureka := fmt.Sprintf("http://127.0.0.1:%d/eureka/", gport)

	start := func(name, dir, run string, env []string, args ...string) *proctest.Proc {
		p, err := proctest.Start(proctest.Options{Name: name, Path: "bash", Args: append([]string{filepath.Join(agents, dir, run)}, args...),
			Dir: filepath.Join(agents, dir), Env: append(os.Environ(), env...), LogFile: filepath.Join(out, name+".log"), Group: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(syscall.SIGTERM, 20*time.Second) })
		return p
	}
	ports := map[string]int{}
	apps := map[string]*proctest.Proc{}
	for i, app := range []string{"orders", "payments"} {
		ports[app] = proctest.Port(t)
		apps[app] = start(app, "spring-boot3", "run.sh", []string{"APP_NAME=" + app, "PORT=" + strconv.Itoa(ports[app]), "EUREKA_URL=" + eureka},
			fmt.Sprintf("--eureka.instance.ip-address=10.244.60.%d", i+1), "--eureka.instance.prefer-ip-address=true")
	}
	kport := proctest.Port(t)
	sck := start("sck", "spring-kubernetes", "run-k8s.sh", []string{"PORT=" + strconv.Itoa(kport), "KUBECONFIG=" + api.Kubeconfig(kubetest.Admin), "NAMESPACE=" + sp.name})

	type inst struct {
		Host string
		Port int
	}
	// A request that hangs (the agent accepting before its informers
	// synced, say) must not outlive the wait it is part of.
	client := &http.Client{Timeout: 10 * time.Second}
	list := func(svc string) ([]inst, string) {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/instances/%s", kport, svc))
		if err != nil {
			return nil, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v []inst
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, string(b)
		}
		return v, string(b)
	}
	// consumer waits for the Spring Cloud Kubernetes agent: within d
	// (2 minutes for its start and first list, less once it lists), and
	// not at all once it has exited; a failure says what was awaited, what
	// the agent last answered and the tail of its log, instead of the go
	// test timeout's goroutine dump.
	consumer := func(d time.Duration, what string, cond func() (bool, string)) {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			ok, last := cond()
			switch {
			case ok:
				return
			case sck.Exited():
				t.Fatalf("Spring Cloud Kubernetes agent exited (%v) before: %s; last answer: %s\n%s", sck.Err(), what, last, proctest.Tail(filepath.Join(out, "sck.log"), 40))
			case time.Now().After(deadline):
				t.Fatalf("Spring Cloud Kubernetes agent: %s: not within %v; last answer: %s\n%s", what, d, last, proctest.Tail(filepath.Join(out, "sck.log"), 40))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	consumer(2*time.Minute, "it answers GET /instances (started, its informers synced)", func() (bool, string) {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/instances/orders", kport))
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	consumer(2*time.Minute, "the DiscoveryClient lists both apps with their ports", func() (bool, string) {
		o, s1 := list("orders")
		p, s2 := list("payments")
		return len(o) == 1 && o[0].Host == "10.244.60.1" && o[0].Port == ports["orders"] &&
			len(p) == 1 && p[0].Host == "10.244.60.2" && p[0].Port == ports["payments"], s1 + " " + s2
	})

	// OUT_OF_SERVICE: serving=false in goreka's EndpointSlice and out of
	// the Endpoints' ready addresses within 1 s of the status update, and
	// out of the DiscoveryClient's list (it lists ready addresses).
	if sp.serving("orders", "10.244.60.1") != "true" || !slices.Equal(readyIPs(sp.endpoints("orders")), []string{"10.244.60.1"}) {
		t.Fatalf("orders before OUT_OF_SERVICE: serving %q, ready %v", sp.serving("orders", "10.244.60.1"), readyIPs(sp.endpoints("orders")))
	}
	id := fmt.Sprintf("orders:%d", ports["orders"])
	req, _ := http.NewRequest(http.MethodPut, eureka+"apps/ORDERS/"+id+"/status?value=OUT_OF_SERVICE", nil)
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status update: %v %v", err, resp)
	}
	resp.Body.Close()
	waitFor(t, 10*time.Second, "orders serving=false and not ready in Endpoints", func() bool {
		return sp.serving("orders", "10.244.60.1") == "false" && len(readyIPs(sp.endpoints("orders"))) == 0
	})
	if d := time.Since(t0); d > time.Second {
		t.Errorf("OUT_OF_SERVICE reached the EndpointSlice and Endpoints after %v, want within 1 s", d)
	} else {
		t.Logf("OUT_OF_SERVICE -> serving=false and out of the Endpoints' ready addresses after %v", d.Round(time.Millisecond))
	}
	consumer(30*time.Second, "OUT_OF_SERVICE orders leaves the list", func() (bool, string) {
		o, s := list("orders")
		return len(o) == 0, s
	})

	// Cancelled (the app stops; its Eureka client sends the cancel): gone.
	if err := apps["payments"].Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Log(err)
	}
	consumer(30*time.Second, "cancelled payments is gone", func() (bool, string) {
		p, s := list("payments")
		return len(p) == 0 && sp.svc("payments") == nil, s
	})
}
