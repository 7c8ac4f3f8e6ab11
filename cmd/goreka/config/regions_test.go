package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRemoteRegions(t *testing.T) {
	c := mustLoad(t, []string{
		"--eureka.server.remote-region-urls-with-name.US-West=http://w.example:8761/eureka",
		"--eureka.server.remoteRegionAppWhitelist.us-west=WEB,API",
		"--eureka.server.remote-region-registry-fetch-interval=5",
		"--eureka.server.remote-region-read-timeout-ms=250",
		"--eureka.server.disable-transparent-fallback-to-other-region=true",
	}, []string{"EUREKA_SERVER_REMOTEREGIONAPPWHITELIST_GLOBAL=WEB"}, map[string]string{"application.yml": `
eureka:
  server:
    remote-region-urls-with-name:
      eu: https://u:p@eu.example/eureka/
    disable-delta-for-remote-regions: true
`})
	rr := c.EurekaServer.RemoteRegions
	want := RemoteRegionsConfig{
		URLsWithName:               map[string]string{"us-west": "http://w.example:8761/eureka/", "eu": "https://u:p@eu.example/eureka/"},
		AppWhitelist:               map[string][]string{"us-west": {"WEB", "API"}, "global": {"WEB"}},
		FetchInterval:              5 * time.Second,
		DisableDelta:               true,
		GZip:                       true,
		ConnectTimeout:             time.Second,
		ReadTimeout:                250 * time.Millisecond,
		DisableTransparentFallback: true,
	}
	if !reflect.DeepEqual(rr, want) {
		t.Fatalf("remote regions\n got %+v\nwant %+v", rr, want)
	}
	for _, tc := range []struct{ arg, want string }{
		{"--eureka.server.remote-region-urls-with-name.x=ftp://x/", "scheme must be http or https"},
		{"--eureka.server.remote-region-urls=http://ok/,nohost", "scheme must be http or https"},
		{"--eureka.server.remote-region-registry-fetch-interval=0", "remote-region-registry-fetch-interval"},
	} {
		_, err := load([]string{tc.arg}, nil, setup(t, nil), fakeHost)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.arg, err, tc.want)
		}
	}
}
