package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/registry"
)

// benchServer is a server with n instances and Eureka's default cache
// (readOnly tier on), the way production runs.
func benchServer(b testing.TB, n int) (*Server, *registry.Registry) {
	b.Helper()
	reg := registry.New(registry.Options{})
	for i := range n {
		app := fmt.Sprintf("APP-%03d", i%200)
		id := fmt.Sprintf("host-%05d:%s:8080", i, app)
		_, err := reg.Register(&registry.Instance{
			InstanceID: id, HostName: fmt.Sprintf("host-%05d", i), App: app, IPAddr: "10.0.0.1", Status: registry.StatusUp,
			Port: registry.Port{Number: 8080, Enabled: true}, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
			Metadata:    map[string]string{"management.port": "8080", "zone": "z1"},
			HomePageURL: "http://h:8080/", StatusPageURL: "http://h:8080/actuator/info", HealthCheckURL: "http://h:8080/actuator/health",
			VIPAddress: app, SecureVIPAddress: app,
		}, false)
		if err != nil {
			b.Fatal(err)
		}
	}
	return New(Config{}, Deps{Registry: reg}), reg
}

// staticGzip is the baseline: a bare handler writing fixed gzip JSON bytes.
func staticGzip(body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(body)
	})
}

// renewRequests builds n heartbeats for instances of benchServer.
func renewRequests(n int) []*http.Request {
	reqs := make([]*http.Request, n)
	for i := range reqs {
		app := fmt.Sprintf("APP-%03d", i%200)
		reqs[i] = httptest.NewRequest("PUT", fmt.Sprintf("/eureka/apps/%s/host-%05d:%s:8080?status=UP", app, i, app), nil)
	}
	return reqs
}

type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

func fullFetchRequest() *http.Request {
	r := httptest.NewRequest("GET", "/eureka/apps/", nil)
	r.Header.Set("Accept", "application/json")
	r.Header.Set("Accept-Encoding", "gzip")
	return r
}

// BenchmarkFullFetch10kGzipJSON serves GET /eureka/apps/ (gzip JSON, as Spring
// clients ask) through the router and the cache; compare with
// BenchmarkStaticBytes10k, a bare handler writing the same bytes.
func BenchmarkFullFetch10kGzipJSON(b *testing.B) {
	s, _ := benchServer(b, 10_000)
	r := fullFetchRequest()
	s.ServeHTTP(&discard{h: http.Header{}}, r) // warm the cache
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &discard{h: http.Header{}}
		for pb.Next() {
			clear(w.h)
			s.ServeHTTP(w, r)
		}
	})
}

func BenchmarkStaticBytes10k(b *testing.B) {
	s, _ := benchServer(b, 10_000)
	v, err := s.cache.Get(cache.Key{Entity: cache.Application, Name: cache.AllApps, JSON: true})
	if err != nil {
		b.Fatal(err)
	}
	h := staticGzip(v.Gzip())
	r := fullFetchRequest()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &discard{h: http.Header{}}
		for pb.Next() {
			clear(w.h)
			h.ServeHTTP(w, r)
		}
	})
}

// BenchmarkRenewHTTP10k is a heartbeat through the router.
func BenchmarkRenewHTTP10k(b *testing.B) {
	s, _ := benchServer(b, 10_000)
	reqs := renewRequests(1000)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &discard{h: http.Header{}}
		for pb.Next() {
			s.ServeHTTP(w, reqs[n.Add(1)%int64(len(reqs))])
		}
	})
}

// BenchmarkRenewHTTP10kDuringFullFetches runs heartbeats while other
// goroutines fetch the full registry: renew throughput must not depend on
// readers.
func BenchmarkRenewHTTP10kDuringFullFetches(b *testing.B) {
	s, _ := benchServer(b, 10_000)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &discard{h: http.Header{}}
		r := fullFetchRequest()
		for {
			select {
			case <-stop:
				return
			default:
				clear(w.h)
				s.ServeHTTP(w, r)
			}
		}
	}()
	reqs := renewRequests(1000)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &discard{h: http.Header{}}
		for pb.Next() {
			s.ServeHTTP(w, reqs[n.Add(1)%int64(len(reqs))])
		}
	})
	b.StopTimer()
	close(stop)
	<-done
}

// benchHTTPFetch runs parallel full fetches over loopback HTTP against h,
// reading every body: the throughput a client sees.
func benchHTTPFetch(b *testing.B, h http.Handler) {
	ts := httptest.NewServer(h)
	defer ts.Close()
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 64<<10)
		for pb.Next() {
			req, _ := http.NewRequest("GET", ts.URL+"/eureka/apps/", nil)
			req.Header.Set("Accept", "application/json")
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					break
				}
			}
			resp.Body.Close()
		}
	})
}

// BenchmarkFullFetchHTTP10k and BenchmarkStaticHTTP10k compare goreka's full
// fetch (gzip JSON, 10k instances) with a bare handler writing the same bytes,
// both over loopback HTTP. Compare them within one run: ns/op ratio.
func BenchmarkFullFetchHTTP10k(b *testing.B) {
	s, _ := benchServer(b, 10_000)
	benchHTTPFetch(b, s)
}

func BenchmarkStaticHTTP10k(b *testing.B) {
	s, _ := benchServer(b, 10_000)
	v, err := s.cache.Get(cache.Key{Entity: cache.Application, Name: cache.AllApps, JSON: true})
	if err != nil {
		b.Fatal(err)
	}
	benchHTTPFetch(b, staticGzip(v.Gzip()))
}

// BenchmarkRegisterHTTP10k is a registration of a new instance (a Spring
// Boot client's body) through the router into a 10k registry: decode,
// validation, insert and the answer, without cmd's listeners.
func BenchmarkRegisterHTTP10k(b *testing.B) {
	s, _ := benchServer(b, 10_000)
	const body = `{"instance":{"instanceId":"%[1]s","hostName":"%[1]s","app":"BURST","ipAddr":"10.1.0.1","status":"UP",` +
		`"overriddenStatus":"UNKNOWN","port":{"$":8080,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},` +
		`"countryId":1,"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},` +
		`"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90},"metadata":{"management.port":"8080","zone":"z1"},` +
		`"homePageUrl":"http://%[1]s:8080/","statusPageUrl":"http://%[1]s:8080/actuator/info",` +
		`"healthCheckUrl":"http://%[1]s:8080/actuator/health","vipAddress":"burst","secureVipAddress":"burst",` +
		`"isCoordinatingDiscoveryServer":"false","lastUpdatedTimestamp":"1700000000000","lastDirtyTimestamp":"1700000000000"}}`
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &discard{h: http.Header{}}
		for pb.Next() {
			id := fmt.Sprintf("burst-%d", n.Add(1))
			r := httptest.NewRequest("POST", "/eureka/apps/BURST", strings.NewReader(fmt.Sprintf(body, id)))
			r.Header.Set("Content-Type", "application/json")
			s.ServeHTTP(w, r)
		}
	})
}

// BenchmarkFullFetchHTTPSize is BenchmarkFullFetchHTTP10k and
// BenchmarkStaticHTTP10k at 10k and 100k instances (a 100k document is
// served as a few hundred pieces, the cache's segments): compare goreka
// with static within a size, in one run.
func BenchmarkFullFetchHTTPSize(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		s, _ := benchServer(b, n)
		v, err := s.cache.Get(cache.Key{Entity: cache.Application, Name: cache.AllApps, JSON: true})
		if err != nil {
			b.Fatal(err)
		}
		body := v.Gzip()
		b.Run(fmt.Sprintf("size=%d/goreka", n), func(b *testing.B) { benchHTTPFetch(b, s) })
		b.Run(fmt.Sprintf("size=%d/static", n), func(b *testing.B) { benchHTTPFetch(b, staticGzip(body)) })
	}
}
