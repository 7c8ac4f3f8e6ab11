package cache

import (
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
)

// registryJSON builds an /eureka/apps JSON payload in the legacy codec's shape with n
// instances spread over n/20 applications: about 1 KB per instance.
func registryJSON(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	b := []byte(`{"applications":{"versions__delta":"1","apps__hashcode":"UP_` + strconv.Itoa(n) + `_","application":[`)
	apps := max(n/20, 1)
	for a := range apps {
		if a > 0 {
			b = append(b, ',')
		}
		name := fmt.Sprintf("SERVICE-%04d", a)
		b = fmt.Appendf(b, `{"name":"%s","instance":[`, name)
		for i := range n / apps {
			if i > 0 {
				b = append(b, ',')
			}
			ip := fmt.Sprintf("10.%d.%d.%d", rng.IntN(256), rng.IntN(256), rng.IntN(256))
			host := fmt.Sprintf("ip-%s.eu-west-1.compute.internal", ip)
			ts := 1735689600000 + rng.Int64N(86400000)
			b = fmt.Appendf(b, `{"instanceId":"%s:%s:%d","hostName":"%s","app":"%s","ipAddr":"%s","status":"UP",`+
				`"overriddenStatus":"UNKNOWN","port":{"$":8080,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},`+
				`"countryId":1,"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},`+
				`"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90,"registrationTimestamp":%d,"lastRenewalTimestamp":%d,`+
				`"evictionTimestamp":0,"serviceUpTimestamp":%d},"metadata":{"management.port":"8080","zone":"zone%d","version":"%d.%d.%d"},`+
				`"homePageUrl":"http://%s:8080/","statusPageUrl":"http://%s:8080/actuator/info","healthCheckUrl":"http://%s:8080/actuator/health",`+
				`"vipAddress":"%s","secureVipAddress":"%s","isCoordinatingDiscoveryServer":"false","lastUpdatedTimestamp":"%d",`+
				`"lastDirtyTimestamp":"%d","actionType":"ADDED"}`,
				host, name, rng.IntN(65536), host, name, ip, ts, ts+rng.Int64N(3600000), ts+rng.Int64N(60000), rng.IntN(3),
				rng.IntN(3), rng.IntN(20), rng.IntN(100), host, host, host, name, name, ts, ts)
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}}"...)
}

var (
	payloadOnce sync.Once
	payload10MB []byte
)

func bigPayload(b *testing.B) []byte {
	payloadOnce.Do(func() { payload10MB = registryJSON(10000) })
	b.SetBytes(int64(len(payload10MB)))
	return payload10MB
}

func BenchmarkReadOnlyHit(b *testing.B) {
	p := bigPayload(b)
	c := New(DefaultConfig(), func(Key) ([]byte, bool, error) { return p, true, nil })
	k := Key{Entity: Application, Name: AllApps, JSON: true}
	if _, err := c.Get(k); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v, _ := c.Get(k)
			if v.GzipLen() == 0 {
				b.Error("empty value")
			}
		}
	})
}

func BenchmarkReadWriteHit(b *testing.B) {
	p := bigPayload(b)
	cfg := DefaultConfig()
	cfg.UseReadOnly = false
	c := New(cfg, func(Key) ([]byte, bool, error) { return p, true, nil })
	k := Key{Entity: Application, Name: AllApps, JSON: true}
	if _, err := c.Get(k); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Get(k); err != nil {
				b.Error(err)
			}
		}
	})
}

// BenchmarkMissLoad10MB is a rebuild of one key through the cache at the chosen gzip level:
// invalidate, then Get loads and compresses the 10 MB payload again.
func BenchmarkMissLoad10MB(b *testing.B) {
	p := bigPayload(b)
	cfg := DefaultConfig()
	cfg.UseReadOnly = false
	c := New(cfg, func(Key) ([]byte, bool, error) { return p, true, nil })
	k := Key{Entity: Application, Name: AllApps, JSON: true}
	b.ReportAllocs()
	var gz int
	for b.Loop() {
		c.Invalidate("", "", "")
		v, err := c.Get(k)
		if err != nil {
			b.Fatal(err)
		}
		gz = v.GzipLen()
	}
	b.ReportMetric(100*float64(gz)/float64(len(p)), "gzip%")
}

// BenchmarkGzipLevel10MB compares levels for the 10 MB payload; gzipLevel's comment records
// the outcome.
func BenchmarkGzipLevel10MB(b *testing.B) {
	levels := []struct {
		name  string
		level int
	}{
		{"HuffmanOnly", gzip.HuffmanOnly},
		{"BestSpeed", gzip.BestSpeed},
		{"2", 2},
		{"4", 4},
		{"5", 5},
		{"Default", gzip.DefaultCompression},
		{"BestCompression", gzip.BestCompression},
	}
	for _, l := range levels {
		b.Run(l.name, func(b *testing.B) {
			p := bigPayload(b)
			b.ReportAllocs()
			var gz int
			for b.Loop() {
				v, err := buildValue(p, true, l.level, benchTime)
				if err != nil {
					b.Fatal(err)
				}
				gz = v.GzipLen()
			}
			b.ReportMetric(100*float64(gz)/float64(len(p)), "gzip%")
		})
	}
}

var benchTime = newClock().Now()

// BenchmarkInvalidate is one registry change on a cache serving the full
// registry and its delta (JSON, gzip) and a few applications: what every
// registration pays.
func BenchmarkInvalidate(b *testing.B) {
	c := New(DefaultConfig(), func(k Key) ([]byte, bool, error) { return []byte(k.String()), true, nil })
	for _, k := range []Key{{Entity: Application, Name: AllApps, JSON: true}, {Entity: Application, Name: AllAppsDelta, JSON: true},
		{Entity: Application, Name: "APP1", JSON: true}} {
		if _, err := c.Get(k); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		c.Invalidate("APP1", "app1", "app1")
	}
}
