package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The wiring end to end: with probes on, a caller's report for a
// heartbeating instance whose health endpoint refuses gets it probed and
// served as DOWN by the real server (REST and lifecycle metric), within a
// bounded wait; a report for an unknown instance is a 404.
func TestHealthReportServesDown(t *testing.T) {
	addr, _ := serveOps(t, "--goreka.health.probe.enabled=true", "--goreka.health.probe.timeout=500ms")
	base := "http://" + addr
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/actuator/health"
	ln.Close()

	body := fmt.Sprintf(`{"instance":{"instanceId":"z1","hostName":"127.0.0.1","app":"ZOMBIE","ipAddr":"127.0.0.1",
		"status":"UP","port":{"$":8080,"@enabled":"true"},"healthCheckUrl":%q,
		"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`, refused)
	do := func(method, path, ct, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := do("POST", "/eureka/apps/ZOMBIE", "application/json", body); code != 204 {
		t.Fatalf("register: %d %s", code, b)
	}
	if code, b := do("POST", "/goreka/api/v1/reports", "application/json", `{"app":"zombie","instanceId":"nope","reason":"x"}`); code != 404 {
		t.Fatalf("unknown instance: %d %s", code, b)
	}
	code, b := do("POST", "/goreka/api/v1/reports", "application/json", `{"app":"zombie","instanceId":"z1","reason":"connect refused"}`)
	if code != 202 || !strings.Contains(b, `"outcome":"probing"`) {
		t.Fatalf("report: %d %s", code, b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, b := do("GET", "/eureka/apps/ZOMBIE/z1", "", "")
		var v struct {
			Instance struct {
				Status string `json:"status"`
			} `json:"instance"`
		}
		_ = json.Unmarshal([]byte(b), &v)
		if v.Instance.Status == "DOWN" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %q after the report", v.Instance.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, metrics := do("GET", "/metrics", "", "")
	for _, want := range []string{`goreka_instances_lifecycle{namespace="default",state="up"}`, `goreka_health_probe_enabled{namespace="default"} 1`, `goreka_health_reports_total{namespace="default",outcome="accepted"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
