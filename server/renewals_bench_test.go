package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"syscall"
	"testing"

	"github.com/goreka/goreka/compat"
)

// BenchmarkHeartbeatDirectVsAggregated is the core's cost per client
// heartbeat, parsing of the request included (not the socket): a client's
// own PUT apps/{app}/{id}, and one item of a relay's aggregated
// POST goreka/renewals of 1,000 (issue 28's target: at most 0.05x). Read
// cpu-ns/heartbeat (the process's CPU time, which on a shared machine is
// steadier than the wall time of ns/heartbeat).
func BenchmarkHeartbeatDirectVsAggregated(b *testing.B) {
	const n, per = 10000, 1000
	srv, _ := benchServer(b, n)
	head := "Host: core:8761\r\nAccept: application/json\r\nUser-Agent: Java-EurekaClient/v1.10.17\r\n" +
		"DiscoveryIdentity-Name: DefaultClient\r\nDiscoveryIdentity-Version: 1.4\r\nAccept-Encoding: gzip\r\n"
	serve := func(b *testing.B, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			b.Fatal(err)
		}
		w := &discard{h: http.Header{}}
		srv.ServeHTTP(w, req)
	}
	b.Run("direct", func(b *testing.B) {
		raws := make([][]byte, n)
		for i := range raws {
			app := fmt.Sprintf("APP-%03d", i%200)
			raws[i] = fmt.Appendf(nil, "PUT /eureka/apps/%s/host-%05d:%s:8080?status=UP HTTP/1.1\r\n%sContent-Length: 0\r\n\r\n", app, i, app, head)
		}
		b.ReportAllocs()
		cpu := cpuTime()
		i := 0
		for b.Loop() {
			serve(b, raws[i%n])
			i++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/heartbeat")
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/heartbeat")
	})
	b.Run(fmt.Sprint("aggregated-", per), func(b *testing.B) {
		var raws [][]byte
		for start := 0; start < n; start += per {
			items := make([]compat.ReplicationItem, per)
			for j := range items {
				i := start + j
				app := fmt.Sprintf("APP-%03d", i%200)
				items[j] = compat.ReplicationItem{AppName: app, ID: fmt.Sprintf("host-%05d:%s:8080", i, app), Status: "UP", Action: compat.ActionHeartbeat}
			}
			body := compat.AppendReplicationList(nil, items)
			raws = append(raws, fmt.Appendf(nil, "POST /eureka/%s HTTP/1.1\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				compat.RenewalsPath, head, len(body), body))
		}
		b.ReportAllocs()
		cpu := cpuTime()
		i := 0
		for b.Loop() {
			serve(b, raws[i%len(raws)])
			i++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/heartbeat")
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N*per), "cpu-ns/heartbeat")
	})
}

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
