package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// fpGet is a GET with headers, for the wiring tests below.
func fpGet(t *testing.T, u string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The codec and rate-limiter properties reach the running server: the full
// XML documents come in JacksonXml's shape, over-limit fetches of a
// non-standard client get 503 and are counted, DefaultClient is exempt.
func TestProcessCodecAndRateLimiterProperties(t *testing.T) {
	if testing.Short() {
		t.Skip("starts goreka processes")
	}
	port := freePort(t, "127.0.0.1")
	n := processNode(t, "F", "127.0.0.1", port, standaloneArgs("127.0.0.1", port, "--eureka.server.xml-codec-name=JacksonXml",
		"--eureka.server.rate-limiter-enabled=true", "--eureka.server.rate-limiter-burst-size=2",
		"--eureka.server.rate-limiter-registry-fetch-average-rate=1", "--eureka.server.rate-limiter-full-fetch-average-rate=1")...)
	n.start()
	register(t, n, "SHOP", "shop-1", 30, 90)

	std := map[string]string{"DiscoveryIdentity-Name": "DefaultClient", "Accept": "application/xml"}
	code, body := fpGet(t, n.base()+"/apps/SHOP", std)
	if code != 200 || !strings.HasPrefix(body, "<application><name>SHOP</name><instance><instanceId>shop-1</instanceId><app>SHOP</app>") ||
		!strings.Contains(body, "<overriddenStatus>UNKNOWN</overriddenStatus>") {
		t.Fatalf("JacksonXml application: %d %.200s", code, body)
	}
	var codes []int
	for range 4 {
		c, _ := fpGet(t, n.base()+"/apps/", map[string]string{"DiscoveryIdentity-Name": "my-script"})
		codes = append(codes, c)
	}
	if codes[0] != 200 || codes[3] != 503 {
		t.Fatalf("non-standard client's full fetches: %v, want 200 first and 503 once over the burst of 2", codes)
	}
	for range 4 {
		if c, _ := fpGet(t, n.base()+"/apps/", std); c != 200 {
			t.Fatalf("DefaultClient throttled: %d", c)
		}
	}
	if got := scrape(t, n)[`goreka_rate_limited_requests_total{enforced="true",namespace="default",target="full"}`]; got < 1 {
		t.Fatalf("throttled full fetches counted %v", got)
	}
}
