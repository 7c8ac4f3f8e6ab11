package health

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		code int
		ct   string
		body string
		want Outcome
	}{
		{200, "application/json", `{"status":"UP"}`, Healthy},
		{204, "", "", Healthy},
		{200, "text/plain", "OK", Healthy},
		{200, "application/vnd.spring-boot.actuator.v3+json", `{"status":"DOWN"}`, Unhealthy},
		{200, "application/json", `{"status":"OUT_OF_SERVICE","components":{}}`, Unhealthy},
		{200, "", `{"status":"down"}`, Unhealthy},
		{200, "application/json", `{"status":"DOWN","details":` + strings.Repeat(`"x",`, 1<<14), Unhealthy}, // cut body
		{200, "application/json", `{"components":{"db":{"status":"DOWN"}},"status":"UP"}`, Healthy},
		{503, "application/json", `{"status":"UP"}`, Unhealthy},
		// Spring Cloud Netflix's eureka indicator echoes the status goreka serves: left out when it shows.
		{503, "application/json", `{"status":"DOWN","components":{"discoveryComposite":{"status":"DOWN","components":` +
			`{"discoveryClient":{"status":"UP"},"eureka":{"status":"DOWN"}}},"diskSpace":{"status":"UP"},"ping":{"status":"UP"}}}`, Healthy},
		{503, "application/json", `{"status":"OUT_OF_SERVICE","components":{"discoveryComposite":{"status":"OUT_OF_SERVICE",` +
			`"components":{"eureka":{"status":"OUT_OF_SERVICE"}}},"ping":{"status":"UP"}}}`, Healthy},
		// ...but every other component still counts.
		{503, "application/json", `{"status":"DOWN","components":{"discoveryComposite":{"status":"DOWN","components":` +
			`{"eureka":{"status":"DOWN"}}},"livenessState":{"status":"DOWN"},"ping":{"status":"UP"}}}`, Unhealthy},
		{503, "application/json", `{"status":"DOWN","components":{"discoveryComposite":{"status":"UP","components":` +
			`{"eureka":{"status":"UP"},"discoveryClient":{"status":"DOWN"}}}}}`, Unhealthy},
		// Never worse than Spring's own aggregate (a custom status order may rank a component below UP).
		{200, "application/json", `{"status":"UP","components":{"discoveryComposite":{"status":"UP","components":` +
			`{"eureka":{"status":"UP"}}},"db":{"status":"OUT_OF_SERVICE"}}}`, Healthy},
		// No eureka indicator: the status as given (a 503 is unhealthy whatever the body).
		{503, "application/json", `{"status":"DOWN","components":{"db":{"status":"DOWN"},"ping":{"status":"UP"}}}`, Unhealthy},
		{500, "application/json", `{"status":"DOWN","components":{"discoveryComposite":{"status":"DOWN","components":` +
			`{"eureka":{"status":"DOWN"}}}}}`, Unhealthy},
		{404, "", "", Unhealthy},
		{302, "", "", Unhealthy},
	} {
		body := []byte(tc.body)
		if len(body) > maxBody {
			body = body[:maxBody]
		}
		if got := classify(tc.code, tc.ct, body); got.Outcome != tc.want {
			t.Errorf("%d %q %.40q: %v, want %v", tc.code, tc.ct, tc.body, got, tc.want)
		}
	}
}

func TestHTTPProberEndpoints(t *testing.T) {
	ep := newEndpoints(t)
	for _, tc := range []struct {
		url    string
		want   Outcome
		detail string
	}{
		{ep.healthy, Healthy, "HTTP 200"},
		{ep.unavailable, Unhealthy, "HTTP 503"},
		{ep.outOfService, Unhealthy, `status "OUT_OF_SERVICE"`},
		{ep.refused, Unreachable, "connection refused"},
		{ep.slow, Unreachable, "timeout"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		got := HTTPProber{}.Probe(ctx, tc.url)
		cancel()
		if got.Outcome != tc.want || got.Detail != tc.detail {
			t.Errorf("%s: %+v, want %v %q", tc.url, got, tc.want, tc.detail)
		}
	}
}

func TestURL(t *testing.T) {
	in := func(h, sh string, port, secure bool) *registry.Instance {
		return &registry.Instance{HealthCheckURL: h, SecureHealthCheckURL: sh,
			Port: registry.Port{Number: 80, Enabled: port}, SecurePort: registry.Port{Number: 443, Enabled: secure}}
	}
	for _, tc := range []struct {
		in   *registry.Instance
		want string
	}{
		{in("http://h/health", "https://h/health", true, false), "http://h/health"},
		{in("http://h/health", "https://h/health", true, true), "http://h/health"},
		{in("http://h/health", "https://h/health", false, true), "https://h/health"},
		{in("", "https://h/health", true, false), "https://h/health"},
		{in("", "", true, true), ""},
		{in("ftp://h/x", "", true, false), ""},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
