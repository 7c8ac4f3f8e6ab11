package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// op is one request kind of a phase; it returns an error for a transport
// failure or an unexpected status.
type op func(ctx context.Context, seq int) error

// PhaseResult is what a phase measured.
type PhaseResult struct {
	Requests   int64   `json:"requests"`
	Errors     int64   `json:"errors"`
	Seconds    float64 `json:"seconds"`
	RPS        float64 `json:"rps"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	ClientCPU  float64 `json:"client_cpu_cores"`           // CPU the load tool used, in cores
	ServerCPU  float64 `json:"server_cpu_cores,omitempty"` // CPU the server used, in cores (needs --server-pid)
	FirstError string  `json:"first_error,omitempty"`
	// RoundValues holds the figure each round was ranked by (see --rounds).
	RoundValues []float64 `json:"round_values,omitempty"`
	// Parts splits a mixed phase by request kind.
	Parts map[string]*PhaseResult `json:"parts,omitempty"`
}

// recorder collects latencies of one worker; merged at the end.
type recorder struct {
	lat    []time.Duration
	errors int64
	first  string
}

func (r *recorder) add(d time.Duration, err error) {
	r.lat = append(r.lat, d)
	if err != nil {
		r.errors++
		if r.first == "" {
			r.first = err.Error()
		}
	}
}

func summarize(recs []*recorder, elapsed time.Duration) *PhaseResult {
	var all []time.Duration
	res := &PhaseResult{Seconds: elapsed.Seconds()}
	for _, r := range recs {
		all = append(all, r.lat...)
		res.Errors += r.errors
		if res.FirstError == "" {
			res.FirstError = r.first
		}
	}
	res.Requests = int64(len(all))
	if elapsed > 0 {
		res.RPS = float64(res.Requests-res.Errors) / elapsed.Seconds()
	}
	if len(all) > 0 {
		slices.Sort(all)
		q := func(p float64) float64 {
			return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
		}
		res.P50ms, res.P99ms, res.MaxMs = q(0.50), q(0.99), float64(all[len(all)-1].Microseconds())/1000
	}
	return res
}

// closedLoop runs workers that each send the next request as soon as the
// previous answered, until d has passed or max requests were sent.
func closedLoop(ctx context.Context, workers int, d time.Duration, max int64, f op) *PhaseResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var seq atomic.Int64
	recs := make([]*recorder, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		recs[w] = &recorder{lat: make([]time.Duration, 0, 4096)}
		wg.Go(func() {
			r := recs[w]
			for ctx.Err() == nil {
				s := seq.Add(1)
				if s > max {
					return
				}
				t0 := time.Now()
				err := f(ctx, int(s-1))
				if ctx.Err() != nil && err != nil {
					return // cut off by the deadline: not the server's error
				}
				r.add(time.Since(t0), err)
			}
		})
	}
	wg.Wait()
	return summarize(recs, time.Since(start))
}

// stream is one open-loop request kind of a mixed phase: f at a fixed rate.
type stream struct {
	name string
	rate float64 // requests per second
	f    op
}

// openLoop sends each stream's requests at its rate, whatever the server's
// latency, from a pool of workers; latency runs from the moment a request
// was handed to the pool, so time spent waiting for a free worker counts.
func openLoop(ctx context.Context, workers int, d time.Duration, max int64, streams []stream) *PhaseResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type job struct {
		kind int
		seq  int
		at   time.Time
	}
	jobs := make(chan job, workers*4)
	recs := make([][]*recorder, len(streams))
	for k := range streams {
		recs[k] = make([]*recorder, workers)
		for w := range workers {
			recs[k][w] = &recorder{}
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for j := range jobs {
				err := streams[j.kind].f(ctx, j.seq)
				if ctx.Err() != nil && err != nil {
					continue
				}
				recs[j.kind][w].add(time.Since(j.at), err)
			}
		})
	}
	var sent atomic.Int64
	var dispatchers sync.WaitGroup
	start := time.Now()
	for k, s := range streams {
		if s.rate <= 0 {
			continue
		}
		dispatchers.Go(func() {
			interval := time.Duration(float64(time.Second) / s.rate)
			for i := 0; ; i++ {
				next := start.Add(time.Duration(i) * interval)
				if wait := time.Until(next); wait > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(wait):
					}
				}
				if ctx.Err() != nil || sent.Add(1) > max {
					return
				}
				select {
				case jobs <- job{kind: k, seq: i, at: time.Now()}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	dispatchers.Wait()
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	total := &PhaseResult{Seconds: elapsed.Seconds(), Parts: map[string]*PhaseResult{}}
	var flat []*recorder
	for k, s := range streams {
		p := summarize(recs[k], elapsed)
		total.Parts[s.name] = p
		flat = append(flat, recs[k]...)
	}
	sum := summarize(flat, elapsed)
	sum.Parts = total.Parts
	return sum
}

// cpuMeter measures CPU used by this process and, if pid > 0, the server.
type cpuMeter struct {
	pid        int
	wall       time.Time
	self, serv time.Duration
}

func startCPU(pid int) cpuMeter {
	return cpuMeter{pid: pid, wall: time.Now(), self: selfCPU(), serv: procCPU(pid)}
}

// stop returns the cores used by the load tool and by the server since start.
func (m cpuMeter) stop() (client, server float64) {
	wall := time.Since(m.wall).Seconds()
	client = (selfCPU() - m.self).Seconds() / wall
	if m.pid > 0 {
		server = (procCPU(m.pid) - m.serv).Seconds() / wall
	}
	return client, server
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// drain reads a response body to the end and closes it, so the connection
// goes back to the pool; it returns the number of bytes read.
func drain(resp *http.Response) int64 {
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return n
}
