package suite

import "testing"

// TestOpKey runs without the compat tag: the proxy's classification decides what the scenarios count.
func TestOpKey(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/eureka/apps/", "GET apps/"},
		{"GET", "/eureka/apps", "GET apps/"},
		{"GET", "/eureka/v2/apps/", "GET apps/"},
		{"GET", "/eureka/apps/delta", "GET apps/delta"},
		{"POST", "/eureka/apps/SVC-A", "POST register"},
		{"GET", "/eureka/apps/SVC-A", "GET app"},
		{"PUT", "/eureka/apps/SVC-A/svc-a:8081", "PUT renew"},
		{"DELETE", "/eureka/apps/SVC-A/svc-a:8081", "DELETE cancel"},
		{"GET", "/eureka/apps/SVC-A/svc-a:8081", "GET instance"},
		{"PUT", "/eureka/apps/SVC-A/svc-a:8081/status", "PUT status"},
		{"DELETE", "/eureka/apps/SVC-A/svc-a:8081/status", "DELETE status"},
		{"PUT", "/eureka/apps/SVC-A/svc-a:8081/metadata", "PUT metadata"},
		{"GET", "/eureka/vips/svc-a", "GET vips/svc-a"},
		{"GET", "/actuator/health", "GET /actuator/health"},
		{"GET", "/ns/dev/eureka/apps/delta", "GET apps/delta"},
		{"PUT", "/ns/dev/eureka/apps/SVC-A/svc-a:8081", "PUT renew"},
	} {
		if got := opKey(tc.method, tc.path); got != tc.want {
			t.Errorf("opKey(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}
