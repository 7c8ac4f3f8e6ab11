package config

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var fakeHost = host{
	hostname: func() (string, error) { return "box", nil },
	ipv4:     func() string { return "10.0.0.7" },
}

// setup writes files (path relative to a temp dir -> content) and returns the dir.
func setup(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustLoad(t *testing.T, args, env []string, files map[string]string) *Config {
	t.Helper()
	c, err := load(args, env, setup(t, files), fakeHost)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	c := mustLoad(t, nil, nil, nil)
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"port", c.Server.Port, 8761},
		{"address", c.Server.Address, ""},
		{"app", c.AppName, "eureka-server"},
		{"hostname", c.Instance.Hostname, "box"},
		{"ip", c.Instance.IPAddress, "10.0.0.7"},
		{"instance id", c.Instance.InstanceID, "box:eureka-server:8761"},
		{"renewal", c.Instance.LeaseRenewalInterval, 30 * time.Second},
		{"expiration", c.Instance.LeaseExpirationDuration, 90 * time.Second},
		{"expected clients", c.Instance.ExpectedNumberOfClientsSendingRenews, 1},
		{"open count", c.Instance.DefaultOpenForTrafficCount, 1},
		{"region", c.Client.Region, "us-east-1"},
		{"register", c.Client.RegisterWithEureka, true},
		{"fetch", c.Client.FetchRegistry, true},
		{"service url", c.Client.ServiceURL, map[string][]string{"defaultZone": {"http://localhost:8761/eureka/"}}},
		{"environment", c.Environment, "test"},
		{"datacenter", c.Datacenter, "default"},
		{"dashboard path", c.Dashboard.Path, "/"},
		{"dashboard", c.Dashboard.Enabled, true},
		{"self preservation", c.EurekaServer.EnableSelfPreservation, true},
		{"percent", c.EurekaServer.RenewalPercentThreshold, 0.85},
		{"threshold update", c.EurekaServer.RenewalThresholdUpdateInterval, 15 * time.Minute},
		{"expected interval", c.EurekaServer.ExpectedClientRenewalInterval, 30 * time.Second},
		{"eviction", c.EurekaServer.EvictionInterval, time.Minute},
		{"retention", c.EurekaServer.RetentionTimeInDeltaQueue, 3 * time.Minute},
		{"delta timer", c.EurekaServer.DeltaRetentionTimerInterval, 30 * time.Second},
		{"disable delta", c.EurekaServer.DisableDelta, false},
		{"auto expiration", c.EurekaServer.ResponseCacheAutoExpiration, 180 * time.Second},
		{"cache update", c.EurekaServer.ResponseCacheUpdateInterval, 30 * time.Second},
		{"read only", c.EurekaServer.UseReadOnlyResponseCache, true},
		{"sync empty", c.EurekaServer.WaitTimeWhenSyncEmpty, 5 * time.Minute},
		{"sync retries", c.EurekaServer.RegistrySyncRetries, 1},
		{"sync wait", c.EurekaServer.RegistrySyncRetryWait, 30 * time.Second},
		{"timestamp", c.EurekaServer.SyncWhenTimestampDiffers, true},
		{"peer update", c.EurekaServer.PeerEurekaNodesUpdateInterval, 10 * time.Minute},
		{"connect", c.EurekaServer.PeerNodeConnectTimeout, time.Second},
		{"read", c.EurekaServer.PeerNodeReadTimeout, 5 * time.Second},
		{"pool", c.EurekaServer.MaxElementsInPeerReplicationPool, 10000},
		{"batches in flight", c.Goreka.Replication.MaxBatchesInFlight, 4},
		{"max time", c.EurekaServer.MaxTimeForReplication, 30 * time.Second},
		{"compression", c.EurekaServer.EnableReplicatedRequestCompression, false},
		{"my url", c.EurekaServer.MyURL, ""},
		{"min available", c.EurekaServer.MinAvailableInstancesForPeerReplication, -1},
		{"root level", c.Logging.Root, slog.LevelInfo},
		{"goreka level", c.Logging.Goreka, slog.LevelInfo},
		{"refresh", c.Goreka.Cache.RefreshOnChange, true},
		{"snapshot interval", c.Goreka.Snapshot.Interval, 5 * time.Second},
		{"snapshot age", c.Goreka.Snapshot.MaxAge, time.Hour},
		{"log format", c.Goreka.LogFormat, "text"},
		{"body", c.Goreka.HTTP.MaxBodyBytes, int64(1 << 20)},
		{"batch body", c.Goreka.HTTP.MaxBatchBodyBytes, int64(32 << 20)},
		{"read header", c.Goreka.HTTP.ReadHeaderTimeout, 10 * time.Second},
		{"idle", c.Goreka.HTTP.IdleTimeout, 120 * time.Second},
		{"shutdown", c.Goreka.HTTP.ShutdownTimeout, 15 * time.Second},
		{"tls", c.TLSEnabled(), false},
		{"addr", c.Addr(), ":8761"},
		{"warnings", len(c.Warnings), 0},
	}
	for _, tc := range checks {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	if c.IsSet("server.port") {
		t.Error("IsSet(server.port) with no sources")
	}
}

func TestPrecedence(t *testing.T) {
	files := map[string]string{
		"application.yml":           "server.port: 1001\n",
		"application.properties":    "server.port=1002\n",
		"config/application.yml":    "server.port: 1003\n",
		"application-p.yml":         "server.port: 1004\n",
		"config/application-p.yml":  "server.port: 1005\n",
		"other/application.yml":     "server.port: 1006\n",
		"other/application-p.yml":   "server.port: 1007\n",
		"extra/application.yml":     "server.port: 1008\n",
		"application.yaml":          "server.port: 1009\n",
		"onlyyaml/application.yaml": "server.port: 1010\n",
		"onlyyaml/application.yml":  "server.port: 1011\n",
	}
	tests := []struct {
		name string
		args []string
		env  []string
		want int
	}{
		{"./config beats ./", nil, nil, 1003},
		{"profile file beats plain", []string{"--spring.profiles.active=p"}, nil, 1005},
		{"env beats files", nil, []string{"SERVER_PORT=2000"}, 2000},
		{"json beats env", nil, []string{"SERVER_PORT=2000", `SPRING_APPLICATION_JSON={"server":{"port":3000}}`}, 3000},
		{"cli beats json", []string{"--server.port=4000"}, []string{`SPRING_APPLICATION_JSON={"server":{"port":3000}}`}, 4000},
		{"cli json arg", []string{`--spring.application.json={"server.port":3100}`}, nil, 3100},
		{"location replaces defaults", []string{"--spring.config.location=other/"}, nil, 1006},
		{"location with profile", []string{"--spring.config.location=other/", "--spring.profiles.active=p"}, nil, 1007},
		{"later location wins", []string{"--spring.config.location=extra/application.yml,other/"}, nil, 1006},
		{"additional location", []string{"--spring.config.additional-location=extra/"}, nil, 1008},
		{"properties beats yml", []string{"--spring.config.location=./"}, nil, 1002},
		{"yml beats yaml", []string{"--spring.config.location=onlyyaml/"}, nil, 1011},
		{"location from env", nil, []string{"SPRING_CONFIG_LOCATION=other/"}, 1006},
		{"profile from env", nil, []string{"SPRING_PROFILES_ACTIVE=p"}, 1005},
	}
	dir := setup(t, files)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(tc.args, tc.env, dir, fakeHost)
			if err != nil {
				t.Fatal(err)
			}
			if c.Server.Port != tc.want {
				t.Errorf("port %d, want %d (%s)", c.Server.Port, tc.want, c.origin["server.port"].source)
			}
			if !c.IsSet("server.port") || !c.IsSet("Server.Port") {
				t.Error("IsSet(server.port) = false")
			}
		})
	}
}

const peersYAML = `spring:
  application:
    name: eureka-server
eureka:
  client:
    register-with-eureka: false
---
spring:
  config:
    activate:
      on-profile: peer1
server:
  port: 8761
eureka:
  instance:
    hostname: peer1
  client:
    serviceUrl:
      defaultZone: http://peer2:8762/eureka/
---
spring:
  profiles: peer2
server:
  port: 8762
eureka:
  instance:
    hostname: peer2
  client:
    serviceUrl:
      defaultZone: http://peer1:8761/eureka/,http://peer3:8763/eureka
---
spring.config.activate.on-profile: "!peer1 & !peer2"
server.port: 9000
---
spring.config.activate.on-profile: "peer1 | peer2"
eureka.datacenter: cluster
---
spring.config.activate.on-profile: [x, peer2]
eureka.environment: listed
`

func TestProfiles(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		port    int
		host    string
		peers   []string
		dc, env string
	}{
		{"peer1", []string{"--spring.profiles.active=peer1"}, 8761, "peer1", []string{"http://peer2:8762/eureka/"}, "cluster", "test"},
		{"peer2", []string{"--spring.profiles.active=peer2"}, 8762, "peer2", []string{"http://peer1:8761/eureka/", "http://peer3:8763/eureka/"}, "cluster", "listed"},
		{"none", nil, 9000, "box", []string{"http://localhost:8761/eureka/"}, "default", "test"},
		{"other", []string{"--spring.profiles.active=x"}, 9000, "box", []string{"http://localhost:8761/eureka/"}, "default", "listed"},
	}
	dir := setup(t, map[string]string{"application.yml": peersYAML})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(tc.args, nil, dir, fakeHost)
			if err != nil {
				t.Fatal(err)
			}
			if c.Server.Port != tc.port || c.Instance.Hostname != tc.host || c.Datacenter != tc.dc || c.Environment != tc.env {
				t.Errorf("got port %d host %s dc %s env %s", c.Server.Port, c.Instance.Hostname, c.Datacenter, c.Environment)
			}
			if got := c.PeerURLs(); !reflect.DeepEqual(got, tc.peers) {
				t.Errorf("peers %v, want %v", got, tc.peers)
			}
			if c.Client.RegisterWithEureka {
				t.Error("the unconditional document was not applied")
			}
		})
	}
}

func TestProfileFromFile(t *testing.T) {
	c := mustLoad(t, nil, nil, map[string]string{
		"application.yml":         "spring.profiles.active: b\n",
		"application-b.yml":       "server.port: 7001\n",
		"application-default.yml": "server.port: 7002\n",
	})
	if c.Server.Port != 7001 || !reflect.DeepEqual(c.Profiles, []string{"b"}) {
		t.Errorf("port %d profiles %v", c.Server.Port, c.Profiles)
	}
	c = mustLoad(t, nil, nil, map[string]string{"application-default.yml": "server.port: 7002\n"})
	if c.Server.Port != 7002 {
		t.Errorf("default profile file not read: port %d", c.Server.Port)
	}
}

func TestMatchProfiles(t *testing.T) {
	tests := []struct {
		expr   string
		active []string
		want   bool
		err    bool
	}{
		{"a", []string{"a"}, true, false},
		{"a", []string{"b"}, false, false},
		{"a,b", []string{"b"}, true, false},
		{"!a", []string{"b"}, true, false},
		{"!a", []string{"a"}, false, false},
		{"a | b", []string{"b"}, true, false},
		{"a & b", []string{"b"}, false, false},
		{"a & (b | c)", []string{"a", "c"}, true, false},
		{"!(a|b)", nil, true, false},
		{"a &", []string{"a"}, false, true},
		{"(a", []string{"a"}, false, true},
		{"a b", []string{"a"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := matchProfiles(tc.expr, tc.active)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("got %v, %v; want %v, err %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestRelaxedNames(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		file string
	}{
		{"kebab cli", []string{"--eureka.server.enable-self-preservation=false"}, nil, ""},
		{"camel cli", []string{"--eureka.server.enableSelfPreservation=FALSE"}, nil, ""},
		{"env", nil, []string{"EUREKA_SERVER_ENABLESELFPRESERVATION=false"}, ""},
		{"yaml camel", nil, nil, "eureka:\n  server:\n    enableSelfPreservation: false\n"},
		{"yaml upper", nil, nil, "EUREKA.Server.Enable-Self-Preservation: off\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			if tc.file != "" {
				files["application.yml"] = tc.file
			}
			c := mustLoad(t, tc.args, tc.env, files)
			if c.EurekaServer.EnableSelfPreservation {
				t.Error("self-preservation still on")
			}
			if !c.IsSet("eureka.server.enableselfpreservation") || !c.IsSet("eureka.server.enable-self-preservation") {
				t.Error("IsSet false")
			}
			if len(c.Warnings) > 0 {
				t.Errorf("warnings: %v", c.Warnings)
			}
		})
	}
}

func TestServiceURLSpellings(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     []string
		file    string
		warning bool
	}{
		{"camel yaml", nil, nil, "eureka.client.service-url.defaultZone: http://a:1/eureka\n", false},
		{"kebab key", nil, nil, "eureka.client.serviceUrl.default-zone: http://a:1/eureka\n", true},
		{"env", nil, []string{"EUREKA_CLIENT_SERVICEURL_DEFAULTZONE=http://a:1/eureka"}, "", false},
		{"bracket", []string{"--eureka.client.service-url[defaultZone]=http://a:1/eureka"}, nil, "", false},
		{"yaml list", nil, nil, "eureka.client.service-url.defaultZone:\n  - http://a:1/eureka\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			if tc.file != "" {
				files["application.yml"] = tc.file
			}
			c := mustLoad(t, tc.args, tc.env, files)
			if got := c.PeerURLs(); !reflect.DeepEqual(got, []string{"http://a:1/eureka/"}) {
				t.Errorf("peers %v", got)
			}
			if got := len(c.Warnings) > 0; got != tc.warning {
				t.Errorf("warnings %v, want some: %v", c.Warnings, tc.warning)
			}
		})
	}
}

func TestPeerURLsZones(t *testing.T) {
	c := mustLoad(t, nil, nil, map[string]string{"application.yml": `
eureka:
  instance:
    metadata-map:
      zone: zone2
      management.port: "8081"
  client:
    region: eu
    availability-zones:
      eu: zone1, zone2,zone3
    service-url:
      zone1: http://a:1/eureka/, http://b:1/eureka/
      zone2: http://c:1/eureka/,http://a:1/eureka/
      defaultZone: http://d:1/eureka/
`})
	want := []string{"http://c:1/eureka/", "http://a:1/eureka/", "http://d:1/eureka/", "http://b:1/eureka/"}
	if got := c.PeerURLs(); !reflect.DeepEqual(got, want) {
		t.Errorf("peers %v, want %v", got, want)
	}
	if c.Instance.Metadata["management.port"] != "8081" {
		t.Errorf("metadata %v", c.Instance.Metadata)
	}
}

func TestPlaceholders(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     []string
		file    string
		check   func(c *Config) bool
		wantErr string
	}{
		{"env var by name", nil, []string{"PORT=8123"}, "server.port: ${PORT:8081}\n",
			func(c *Config) bool { return c.Server.Port == 8123 }, ""},
		{"default", nil, nil, "server.port: ${PORT:8081}\n",
			func(c *Config) bool { return c.Server.Port == 8081 }, ""},
		{"nested", []string{"--server.port=8999"}, nil,
			"eureka.client.service-url.defaultZone: ${PEER_URL:http://localhost:${server.port}/eureka/}\n",
			func(c *Config) bool { return c.PeerURLs()[0] == "http://localhost:8999/eureka/" }, ""},
		{"property chain", nil, nil, "a: ${b}\nb: x${c}\nc: \"7\"\neureka.environment: ${a}\n",
			func(c *Config) bool { return c.Environment == "x7" }, ""},
		{"instance id", nil, nil, "eureka.instance.instance-id: ${spring.application.name}:${server.port}\n",
			func(c *Config) bool { return c.Instance.InstanceID == "eureka-server:8761" }, ""},
		{"dotted env fallback", nil, []string{"MY_HOST=h1"}, "eureka.instance.hostname: ${my.host}\n",
			func(c *Config) bool { return c.Instance.Hostname == "h1" }, ""},
		{"unresolvable", nil, nil, "eureka.instance.hostname: ${NOPE}\n", nil,
			`eureka.instance.hostname="${NOPE}" (application.yml): could not resolve placeholder ${NOPE}`},
		{"cycle", nil, nil, "a: ${b}\nb: ${a}\neureka.environment: ${a}\n", nil, "circular placeholder reference"},
		{"self", nil, nil, "eureka.environment: ${eureka.environment}\n", nil, "circular placeholder reference"},
		{"unterminated", nil, nil, "eureka.environment: ${a\n", nil, "unterminated placeholder"},
		{"resolved then invalid", nil, []string{"P=abc"}, "server.port: ${P}\n", nil, `server.port="abc" (application.yml): not a number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(tc.args, tc.env, setup(t, map[string]string{"application.yml": tc.file}), fakeHost)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("unexpected config: %s", c.Render())
			}
		})
	}
}

func TestEnvMapping(t *testing.T) {
	tests := []struct {
		env string
		key string
		ok  bool
	}{
		{"SERVER_PORT", "server.port", true},
		{"EUREKA_SERVER_ENABLESELFPRESERVATION", "eureka.server.enableselfpreservation", true},
		{"EUREKA_CLIENT_SERVICEURL_DEFAULTZONE", "eureka.client.serviceurl.defaultzone", true},
		{"GOREKA_SNAPSHOT_MAXAGE", "goreka.snapshot.maxage", true},
		{"EUREKA_X_0_Y", "eureka.x[0].y", true},
		{"HOME", "", false},
		{"SPRING_APPLICATION_JSON", "", false},
		{"PATH_SERVER_PORT", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			key, ok := envKey(tc.env)
			if key != tc.key || ok != tc.ok {
				t.Errorf("got %q %v", key, ok)
			}
		})
	}
	c := mustLoad(t, nil, []string{"HOME=/root", "PORT=1", "GOREKA_SNAPSHOT_MAXAGE=2h", "LOGGING_LEVEL_ROOT=debug", "=odd", "NOEQUALS"}, nil)
	if c.Goreka.Snapshot.MaxAge != 2*time.Hour || c.Logging.Root != slog.LevelDebug || c.Logging.Goreka != slog.LevelDebug {
		t.Errorf("env not applied: %s", c.Render())
	}
}

func TestCanonicalKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"eureka.server.enable-self-preservation", "eureka.server.enableselfpreservation"},
		{"Eureka.Server.EnableSelfPreservation", "eureka.server.enableselfpreservation"},
		{"eureka.client.service-url.defaultZone", "eureka.client.serviceurl.defaultZone"},
		{"eureka.client.serviceUrl.default-zone", "eureka.client.serviceurl.defaultZone"},
		{"eureka.client.serviceurl.defaultzone", "eureka.client.serviceurl.defaultZone"},
		{"eureka.client.service-url.myZone[0]", "eureka.client.serviceurl.myZone[0]"},
		{"eureka.instance.metadata-map.management.port", "eureka.instance.metadatamap.management.port"},
		{"eureka.instance.metadata-map[Some.Key]", "eureka.instance.metadatamap.Some.Key"},
		{"a.b[0].c-d", "a.b[0].cd"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := canonicalKey(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPropertiesFile(t *testing.T) {
	src := "# comment\n! also comment\n" +
		"server.port = 8765\n" +
		"eureka.instance.hostname: my\\\n    host\n" +
		"eureka.environment \\u0070rod\\tx\n" +
		"eureka.instance.metadata-map.key\\=x=v=w\n" +
		"eureka.datacenter=\n" +
		"#---\n" +
		"spring.config.activate.on-profile=p\n" +
		"server.port=9999\n"
	c := mustLoad(t, nil, nil, map[string]string{"application.properties": src})
	if c.Server.Port != 8765 || c.Instance.Hostname != "myhost" || c.Environment != "prod\tx" ||
		c.Instance.Metadata["key=x"] != "v=w" || c.Datacenter != "" {
		t.Errorf("got %s", c.Render())
	}
	c = mustLoad(t, []string{"--spring.profiles.active=p"}, nil, map[string]string{"application.properties": src})
	if c.Server.Port != 9999 {
		t.Errorf("profile section: port %d", c.Server.Port)
	}
}

func TestYAMLKeepsText(t *testing.T) {
	c := mustLoad(t, nil, nil, map[string]string{"application.yml": `
eureka:
  server:
    renewal-percent-threshold: 0.50
  instance:
    metadata-map:
      version: 08
      flag: yes
      ratio: 1.10
      empty:
`})
	m := c.Instance.Metadata
	if m["version"] != "08" || m["flag"] != "yes" || m["ratio"] != "1.10" || m["empty"] != "" {
		t.Errorf("metadata %v", m)
	}
	if c.EurekaServer.RenewalPercentThreshold != 0.5 {
		t.Errorf("threshold %v", c.EurekaServer.RenewalPercentThreshold)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"not a number", []string{"--eureka.server.renewal-percent-threshold=abc"}, nil,
			[]string{`eureka.server.renewal-percent-threshold="abc" (command line): not a number`}},
		{"percent range", []string{"--eureka.server.renewal-percent-threshold=1.5"}, nil, []string{"must be in (0,1]"}},
		{"percent zero", []string{"--eureka.server.renewal-percent-threshold=0"}, nil, []string{"must be in (0,1]"}},
		{"port range", []string{"--server.port=70000"}, nil, []string{`server.port="70000" (command line): out of range 0..65535`}},
		{"negative interval", nil, []string{"EUREKA_SERVER_EVICTIONINTERVALTIMERINMS=-5"},
			[]string{`eureka.server.evictionintervaltimerinms="-5" (environment variable EUREKA_SERVER_EVICTIONINTERVALTIMERINMS): must be >= 1`}},
		{"bad bool", []string{"--eureka.server.enable-self-preservation=nope"}, nil, []string{"not a boolean"}},
		{"bad url", []string{"--eureka.client.service-url.defaultZone=ftp://x/eureka"}, nil, []string{"scheme must be http or https"}},
		{"url without host", []string{"--eureka.client.service-url.defaultZone=http:///eureka"}, nil, []string{"no host"}},
		{"bad duration", []string{"--goreka.snapshot.interval=5"}, nil, []string{"missing unit"}},
		{"no batch in flight", []string{"--goreka.replication.max-batches-in-flight=0"}, nil,
			[]string{`goreka.replication.max-batches-in-flight="0" (command line): out of range 1..64`}},
		{"bad size", []string{"--goreka.server.max-body-bytes=lots"}, nil, []string{"not a size"}},
		{"bad level", []string{"--logging.level.root=loud"}, nil, []string{"not a log level"}},
		{"bad format", []string{"--goreka.log.format=xml"}, nil, []string{"must be one of text, json"}},
		{"bad json", nil, []string{"SPRING_APPLICATION_JSON={"}, []string{"parsing SPRING_APPLICATION_JSON"}},
		{"empty option", []string{"--=x"}, nil, []string{"empty property name"}},
		{"missing file", []string{"--spring.config.location=/nonexistent/app.yml"}, nil, []string{"reading config file /nonexistent/app.yml"}},
		{"user without password", []string{"--spring.security.user.name=admin"}, nil, []string{"spring.security.user.password is not set"}},
		{"half tls", []string{"--server.ssl.certificate=cert.pem"}, nil, []string{"must be set together"}},
		{"missing tls files", []string{"--server.ssl.certificate=c.pem", "--server.ssl.certificate-private-key=k.pem"}, nil, []string{"TLS file"}},
		{"joined", []string{"--server.port=x", "--eureka.server.max-time-for-replication=y"}, nil,
			[]string{`server.port="x"`, `eureka.server.max-time-for-replication="y"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(tc.args, tc.env, t.TempDir(), fakeHost)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestOptionalLocation(t *testing.T) {
	c := mustLoad(t, []string{"--spring.config.location=optional:/nonexistent/app.yml,optional:nothere/"}, nil, nil)
	if c.Server.Port != 8761 {
		t.Error("defaults not kept")
	}
	c = mustLoad(t, []string{"--spring.config.location=file:conf/app.yml", "--spring.profiles.active=x"}, nil,
		map[string]string{"conf/app.yml": "server.port: 1\n", "conf/app-x.yml": "server.port: 2\n"})
	if c.Server.Port != 2 {
		t.Errorf("profile variant of a file location: port %d", c.Server.Port)
	}
}

func TestBadFiles(t *testing.T) {
	files, err := filepath.Glob("../../../testdata/config/*.bad.*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("first line must be '# want: <error substring>'")
			}
			name := filepath.Base(f)
			dir := setup(t, map[string]string{name: string(data)})
			_, err = load([]string{"--spring.config.location=" + name}, nil, dir, fakeHost)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want it to contain %q", err, want)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want string // "" = no warning
	}{
		{"other subsystems", []string{"--management.endpoints.web.exposure.include=*", "--info.app=x", "--spring.jpa.x=1", "--logging.level.com.netflix=DEBUG", "--server.servlet.context-path=/x", "--help"}, nil, ""},
		{"ignored", []string{"--eureka.client.registry-fetch-interval-seconds=5"}, nil,
			"eureka.client.registry-fetch-interval-seconds (command line): a Spring Eureka property that goreka ignores"},
		{"ignored prefix", []string{"--eureka.client.timeout.connect-timeout=5"}, nil, "goreka ignores"},
		{"ignored with note", []string{"--eureka.server.batch-replication=true"}, nil, "goreka always replicates in batches"},
		{"typo", []string{"--eureka.server.enable-self-preservaton=false"}, nil, "unknown property; did you mean eureka.server.enable-self-preservation?"},
		{"env typo", nil, []string{"EUREKA_SERVER_ENABLE_SELF_PRESERVATION=false"}, "did you mean eureka.server.enable-self-preservation?"},
		{"goreka typo", []string{"--goreka.snapshot.pth=/x"}, nil, "did you mean goreka.snapshot.path?"},
		{"unknown far", []string{"--eureka.server.completely-different=1"}, nil, "eureka.server.completely-different (command line): unknown property"},
		{"map typo", []string{"--eureka.client.service-urls.defaultZone=http://x/"}, nil, "did you mean eureka.client.service-url.defaultZone?"},
		{"non option", []string{"-server.port=1"}, nil, `argument "-server.port=1" (command line): not an option`},
		{"import", []string{"--spring.config.import=optional:configserver:"}, nil, "spring.config.import is not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLoad(t, tc.args, tc.env, nil)
			if tc.want == "" {
				if len(c.Warnings) != 0 {
					t.Errorf("warnings %q", c.Warnings)
				}
				return
			}
			if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], tc.want) {
				t.Errorf("warnings %q, want one containing %q", c.Warnings, tc.want)
			}
		})
	}
}

func TestExampleFile(t *testing.T) {
	data, err := os.ReadFile("../../../application.example.yml")
	if err != nil {
		t.Fatal(err)
	}
	c := mustLoad(t, nil, nil, map[string]string{"application.yml": string(data)})
	if len(c.Warnings) > 0 {
		t.Errorf("warnings: %q", c.Warnings)
	}
	for _, p := range properties {
		canon := canonicalKey(p.name)
		if p.name == "goreka.tls.cert-file" || p.name == "goreka.tls.key-file" {
			continue // aliases, mentioned in comments
		}
		if !c.IsSet(p.name) && !strings.Contains(string(data), "# "+lastSegment(p.name)+":") {
			t.Errorf("%s (%s) is not in application.example.yml", p.name, canon)
		}
	}
	for _, m := range mapProps {
		if !strings.Contains(string(data), lastSegment(m.name)+":") {
			t.Errorf("%s is not in application.example.yml", m.name)
		}
	}
	for _, l := range listProps {
		if !strings.Contains(string(data), "# "+lastSegment(l.name)+":") {
			t.Errorf("%s is not in application.example.yml", l.name)
		}
	}
	// Every value the example sets equals the default, except the snapshot,
	// which the example turns on (off by default).
	if c.Goreka.Snapshot.Path != "./data/registry.snapshot" {
		t.Errorf("example snapshot path = %q", c.Goreka.Snapshot.Path)
	}
	c.Goreka.Snapshot.Path = ""
	def := mustLoad(t, nil, nil, nil)
	c.set, def.set, c.origin, def.origin = nil, nil, nil, nil
	if !reflect.DeepEqual(c, def) {
		t.Errorf("example differs from defaults:\n%+v\n%+v", c, def)
	}
}

func lastSegment(name string) string {
	return name[strings.LastIndexByte(name, '.')+1:]
}

func TestUsageAndRender(t *testing.T) {
	u := Usage()
	for _, p := range properties {
		if !strings.Contains(u, "--"+p.name+"=") {
			t.Errorf("Usage lacks %s", p.name)
		}
	}
	c := mustLoad(t, []string{"--spring.security.user.password=s3cret", "--server.port=1234"}, nil, nil)
	r := c.Render()
	if strings.Contains(r, "s3cret") {
		t.Error("Render shows the password")
	}
	for _, want := range []string{"server.port=1234", "# command line", "spring.security.user.name=user", "eureka.client.service-url.defaultZone=http://localhost:8761/eureka/"} {
		if !strings.Contains(r, want) {
			t.Errorf("Render lacks %q:\n%s", want, r)
		}
	}
}

func TestTableDefaultsParse(t *testing.T) {
	for _, p := range properties {
		t.Run(p.name, func(t *testing.T) {
			if p.dynamic != "" && p.def == "" {
				return
			}
			if err := p.set(&Config{}, p.def); err != nil {
				t.Errorf("default %q: %v", p.def, err)
			}
		})
	}
}

func TestExpansionBombs(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"placeholders", "a: ${b}${b}${b}${b}\nb: ${c}${c}${c}${c}\nc: ${d}${d}${d}${d}\nd: ${e}${e}${e}${e}\ne: ${f}${f}${f}${f}\nf: ${g}${g}${g}${g}\ng: ${h}${h}${h}${h}\nh: x\neureka.environment: ${a}\n", "placeholder expansions"},
		{"aliases", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n", "more than 100000 properties"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(nil, nil, setup(t, map[string]string{"application.yml": tc.file}), fakeHost)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}
