//go:build chaos

package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// fleetStats is what a fleet process reports every second on stdout.
type fleetStats struct {
	Zone          string `json:"zone"`
	Live          int    `json:"live"`
	Registers     int64  `json:"registers"`
	Reregisters   int64  `json:"reregisters"` // after a heartbeat 404
	RenewOK       int64  `json:"renewOK"`
	RenewFailed   int64  `json:"renewFailed"` // every node failed in one tick
	Failovers     int64  `json:"failovers"`
	Deltas        int64  `json:"deltas"`
	Fulls         int64  `json:"fulls"`
	FetchFailed   int64  `json:"fetchFailed"`
	MaxConsecFull int64  `json:"maxConsecFull"` // the longest run of full fetches of one client
}

// fleetClient is one simulated client: it behaves like Spring's
// DiscoveryClient with RetryableEurekaHttpClient: it registers, renews on
// its interval with the node it last reached (the next one on failure,
// sticky after), registers again on a heartbeat 404, fetches deltas, keeps
// a local copy, reconciles it with apps__hashcode and fetches the full
// registry on a mismatch.
type fleetClient struct {
	f        *fleet
	app, id  string
	cur      int
	local    map[string]map[string]registry.Status // app -> id -> status
	consec   int64
	fetches  bool
	stopping chan struct{}
}

type fleet struct {
	zone, addr string
	tm         timing
	fetchers   int // clients 0..fetchers-1 fetch; the others only register and renew
	apps       int
	gen        int      // churn generation, part of new clients' ids
	nodes      []string // base URLs, preferred first
	http       *http.Client
	st         fleetStats
	mu         sync.Mutex
	clients    []*fleetClient
	wg         sync.WaitGroup
}

func (f *fleet) body(c *fleetClient) string {
	return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":%q,"app":%q,"ipAddr":%q,"status":"UP",
"port":{"$":8080,"@enabled":"true"},"vipAddress":%q,
"leaseInfo":{"renewalIntervalInSecs":%d,"durationInSecs":%d},
"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`,
		c.id, f.addr, c.app, f.addr, strings.ToLower(c.app), int(f.tm.renew.Seconds()), int(f.tm.lease.Seconds()))
}

// do sends one request to node i; code 0 means no answer.
func (f *fleet) do(i int, method, path, body string) (int, []byte) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, f.nodes[i]+path, rd)
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, b
}

// call tries the sticky node, then the others in order, like
// RetryableEurekaHttpClient; it returns the code of the first node that
// answered (not 5xx) and sticks to it.
func (c *fleetClient) call(method, path, body string) (int, []byte) {
	n := len(c.f.nodes)
	for k := range n {
		i := (c.cur + k) % n
		code, b := c.f.do(i, method, path, body)
		if code != 0 && code < 500 {
			if k > 0 {
				atomic.AddInt64(&c.f.st.Failovers, 1)
				c.cur = i
			}
			return code, b
		}
	}
	return 0, nil
}

func (c *fleetClient) register() bool {
	code, _ := c.call(http.MethodPost, "apps/"+c.app, c.f.body(c))
	if code == http.StatusNoContent || code == http.StatusOK {
		atomic.AddInt64(&c.f.st.Registers, 1)
		return true
	}
	return false
}

func (c *fleetClient) renew() {
	code, _ := c.call(http.MethodPut, "apps/"+c.app+"/"+c.id+"?status=UP", "")
	switch code {
	case http.StatusOK:
		atomic.AddInt64(&c.f.st.RenewOK, 1)
	case http.StatusNotFound:
		atomic.AddInt64(&c.f.st.Reregisters, 1)
		c.register()
	default:
		atomic.AddInt64(&c.f.st.RenewFailed, 1)
	}
}

func (c *fleetClient) hash() string {
	apps := &registry.Applications{}
	for name, ins := range c.local {
		a := registry.Application{Name: name}
		for id, st := range ins {
			a.Instances = append(a.Instances, registry.LeaseView{Instance: &registry.Instance{InstanceID: id, Status: st}})
		}
		apps.Apps = append(apps.Apps, a)
	}
	return apps.ReconcileHashCode()
}

func (c *fleetClient) full() {
	code, b := c.call(http.MethodGet, "apps", "")
	if code != http.StatusOK {
		atomic.AddInt64(&c.f.st.FetchFailed, 1)
		return
	}
	apps, err := compat.DecodeApplications(b, compat.JSON)
	if err != nil {
		atomic.AddInt64(&c.f.st.FetchFailed, 1)
		return
	}
	atomic.AddInt64(&c.f.st.Fulls, 1)
	c.local = map[string]map[string]registry.Status{}
	for _, a := range apps.Apps {
		for _, v := range a.Instances {
			if v.Instance != nil {
				c.put(a.Name, v.Instance)
			}
		}
	}
}

func (c *fleetClient) put(app string, in *registry.Instance) {
	m := c.local[app]
	if m == nil {
		m = map[string]registry.Status{}
		c.local[app] = m
	}
	m[in.InstanceID] = in.Status
}

// fetch is DiscoveryClient.fetchRegistry: a delta merged into the local
// copy, reconciled by hash; a full fetch when there is no copy yet or the
// hashes differ (each one counted as consecutive until a delta reconciles).
func (c *fleetClient) fetch() {
	if c.local == nil {
		c.fullCounted()
		return
	}
	code, b := c.call(http.MethodGet, "apps/delta", "")
	if code != http.StatusOK {
		atomic.AddInt64(&c.f.st.FetchFailed, 1)
		return
	}
	d, err := compat.DecodeApplications(b, compat.JSON)
	if err != nil {
		atomic.AddInt64(&c.f.st.FetchFailed, 1)
		return
	}
	atomic.AddInt64(&c.f.st.Deltas, 1)
	for _, a := range d.Apps {
		for _, v := range a.Instances {
			in := v.Instance
			if in == nil {
				continue
			}
			switch in.ActionType {
			case registry.ActionDeleted:
				delete(c.local[a.Name], in.InstanceID)
				if len(c.local[a.Name]) == 0 {
					delete(c.local, a.Name)
				}
			default:
				c.put(a.Name, in)
			}
		}
	}
	if c.hash() != d.HashCode {
		c.fullCounted()
		return
	}
	c.consec = 0
}

func (c *fleetClient) fullCounted() {
	c.full()
	c.consec++
	for {
		old := atomic.LoadInt64(&c.f.st.MaxConsecFull)
		if c.consec <= old || atomic.CompareAndSwapInt64(&c.f.st.MaxConsecFull, old, c.consec) {
			return
		}
	}
}

func (c *fleetClient) loop(rng *rand.Rand) {
	defer c.f.wg.Done()
	tm := c.f.tm
	jitter := time.Duration(rng.Int64N(int64(tm.renew)))
	select {
	case <-time.After(jitter):
	case <-c.stopping:
		return
	}
	for !c.register() {
		select {
		case <-time.After(tm.renew):
		case <-c.stopping:
			return
		}
	}
	renew := time.NewTicker(tm.renew)
	defer renew.Stop()
	nextFetch := time.Now().Add(time.Duration(rng.Int64N(int64(tm.fetch))))
	for {
		select {
		case <-c.stopping:
			return // stopped like kill -9: no cancel
		case now := <-renew.C:
			c.renew()
			if c.fetches && now.After(nextFetch) {
				c.fetch()
				nextFetch = now.Add(tm.fetch)
			}
		}
	}
}

// TestFleetHelper is the fleet process: the parent runs this test binary
// again in a client namespace with CHAOS_FLEET set. It stops by itself
// after CHAOS_FLEET_MAX, or when stdin closes or says quit.
func TestFleetHelper(t *testing.T) {
	if os.Getenv("CHAOS_FLEET") == "" {
		t.Skip("run by TestChaos inside a client namespace")
	}
	n, _ := strconv.Atoi(os.Getenv("CHAOS_CLIENTS"))
	apps, _ := strconv.Atoi(os.Getenv("CHAOS_APPS"))
	seed, _ := strconv.ParseUint(os.Getenv("CHAOS_SEED"), 10, 64)
	maxRun, err := time.ParseDuration(os.Getenv("CHAOS_FLEET_MAX"))
	if err != nil || n <= 0 || apps <= 0 {
		t.Fatalf("bad fleet environment: %v", os.Environ())
	}
	f := &fleet{zone: os.Getenv("CHAOS_ZONE"), addr: os.Getenv("CHAOS_ADDR"), nodes: strings.Split(os.Getenv("CHAOS_NODES"), ","),
		tm: chaosTiming, fetchers: n, apps: apps}
	for name, d := range map[string]*time.Duration{"CHAOS_RENEW": &f.tm.renew, "CHAOS_LEASE": &f.tm.lease, "CHAOS_FETCH": &f.tm.fetch} {
		if v := os.Getenv(name); v != "" {
			if *d, err = time.ParseDuration(v); err != nil {
				t.Fatalf("%s=%q: %v", name, v, err)
			}
		}
	}
	if v, err := strconv.Atoi(os.Getenv("CHAOS_FETCHERS")); err == nil && v >= 0 {
		f.fetchers = v
	}
	f.st.Zone = f.zone
	f.http = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second,
	}}
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range n {
		f.add(fmt.Sprintf("CHAOS-APP-%02d", i%apps), fmt.Sprintf("%s-%03d", f.zone, i), i < f.fetchers, rand.New(rand.NewPCG(seed, uint64(i)+2)))
	}
	out := json.NewEncoder(os.Stdout)
	var outMu sync.Mutex
	emit := func(kind string, v any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprint(os.Stdout, kind+" ")
		_ = out.Encode(v)
	}
	quit := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			words := strings.Fields(sc.Text())
			switch {
			case len(words) == 1 && words[0] == "quit":
				close(quit)
				return
			case len(words) == 2 && words[0] == "stop":
				k, _ := strconv.Atoi(words[1])
				emit("stopped", stopSome(rng, f, k))
			case len(words) == 2 && words[0] == "churn":
				// k clients stop without cancel and k new ones start
				// (new ids), like instances replaced in a deployment.
				k, _ := strconv.Atoi(words[1])
				stopped := stopSome(rng, f, k)
				f.gen++
				var started []string
				for i := range len(stopped) {
					app, id := fmt.Sprintf("CHAOS-APP-%02d", rng.IntN(f.apps)), fmt.Sprintf("%s-g%d-%03d", f.zone, f.gen, i)
					f.add(app, id, false, rand.New(rand.NewPCG(seed, uint64(f.gen)<<32|uint64(i))))
					started = append(started, app+"/"+id)
				}
				emit("churned", [2][]string{stopped, started})
			}
		}
		close(quit)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	end := time.After(maxRun)
	for {
		select {
		case <-tick.C:
			emit("stat", f.snapshot())
		case <-quit:
			f.stopAll()
			return
		case <-end:
			f.stopAll()
			return
		}
	}
}

// add starts one client.
func (f *fleet) add(app, id string, fetches bool, rng *rand.Rand) {
	c := &fleetClient{f: f, app: app, id: id, fetches: fetches, stopping: make(chan struct{})}
	f.mu.Lock()
	f.clients = append(f.clients, c)
	f.mu.Unlock()
	f.wg.Add(1)
	go c.loop(rng)
}

func stopSome(rng *rand.Rand, f *fleet, k int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, i := range rng.Perm(len(f.clients)) {
		if len(ids) == k {
			break
		}
		c := f.clients[i]
		select {
		case <-c.stopping:
			continue
		default:
		}
		close(c.stopping)
		ids = append(ids, c.app+"/"+c.id)
	}
	return ids
}

func (f *fleet) snapshot() fleetStats {
	f.mu.Lock()
	live := 0
	for _, c := range f.clients {
		select {
		case <-c.stopping:
		default:
			live++
		}
	}
	f.mu.Unlock()
	s := fleetStats{Zone: f.zone, Live: live}
	s.Registers = atomic.LoadInt64(&f.st.Registers)
	s.Reregisters = atomic.LoadInt64(&f.st.Reregisters)
	s.RenewOK = atomic.LoadInt64(&f.st.RenewOK)
	s.RenewFailed = atomic.LoadInt64(&f.st.RenewFailed)
	s.Failovers = atomic.LoadInt64(&f.st.Failovers)
	s.Deltas = atomic.LoadInt64(&f.st.Deltas)
	s.Fulls = atomic.LoadInt64(&f.st.Fulls)
	s.FetchFailed = atomic.LoadInt64(&f.st.FetchFailed)
	s.MaxConsecFull = atomic.LoadInt64(&f.st.MaxConsecFull)
	return s
}

func (f *fleet) stopAll() {
	f.mu.Lock()
	for _, c := range f.clients {
		select {
		case <-c.stopping:
		default:
			close(c.stopping)
		}
	}
	f.mu.Unlock()
	f.wg.Wait()
}
