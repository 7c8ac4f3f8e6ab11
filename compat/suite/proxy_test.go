package suite

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// countingProxy sits between one client and the server under test. It counts requests by operation
// (see opKey) and by operation + status code, so the scenarios check every server the same way.
type countingProxy struct {
	name string
	srv  *http.Server
	port int

	mu     sync.Mutex
	counts map[string]int
	recent []string // last requests, for failure messages
	auth   int      // requests that carried an Authorization header
}

func newCountingProxy(name string, target *url.URL) (*countingProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for proxy %s: %w", name, err)
	}
	p := &countingProxy{name: name, port: ln.Addr().(*net.TCPAddr).Port, counts: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		// While the server is down the client gets a 502: close enough to "connection refused" for the
		// Eureka clients (both count as a failed call and are retried next interval).
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
			rp.ServeHTTP(rec, r)
			p.record(r, rec.status)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go p.srv.Serve(ln)
	return p, nil
}

func (p *countingProxy) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", p.port) }

func (p *countingProxy) Close() { p.srv.Close() }

func (p *countingProxy) record(r *http.Request, status int) {
	op := opKey(r.Method, r.URL.Path)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[op]++
	p.counts[fmt.Sprintf("%s %d", op, status)]++
	if rg := r.URL.Query().Get("regions"); rg != "" {
		// Remote-region fetches (eureka.client.fetch-remote-regions-registry) are also counted as such.
		p.counts[op+" regions="+rg]++
		p.counts[fmt.Sprintf("%s regions=%s %d", op, rg, status)]++
	}
	if r.Header.Get("Authorization") != "" {
		p.auth++
	}
	p.recent = append(p.recent, fmt.Sprintf("%s %s %s -> %d", time.Now().Format("15:04:05.000"), r.Method, r.URL.RequestURI(), status))
	if len(p.recent) > 30 {
		p.recent = p.recent[len(p.recent)-30:]
	}
}

// Snapshot returns a copy of the counters.
func (p *countingProxy) Snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// Recent returns the last requests seen, oldest first, one per line.
func (p *countingProxy) Recent() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.recent, "\n")
}

func (p *countingProxy) AuthCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.auth
}

// diff returns after[k] - before[k].
func diff(before, after map[string]int, k string) int { return after[k] - before[k] }

var versionPrefix = regexp.MustCompile(`^(/ns/[^/]+)?/eureka/(v\d/)?`)

// opKey maps a request to the Eureka operation it is: "GET apps/", "GET apps/delta", "POST register",
// "PUT renew", "DELETE cancel", "PUT status", "DELETE status", "PUT metadata", "GET app", "GET instance";
// anything else is "METHOD path".
func opKey(method, path string) string {
	rest := versionPrefix.ReplaceAllString(path, "")
	if rest == path {
		return method + " " + path
	}
	seg := strings.Split(strings.Trim(rest, "/"), "/")
	if seg[0] != "apps" {
		return method + " " + strings.Trim(rest, "/")
	}
	switch {
	case len(seg) == 1 && method == http.MethodGet:
		return "GET apps/"
	case len(seg) == 2 && seg[1] == "delta" && method == http.MethodGet:
		return "GET apps/delta"
	case len(seg) == 2 && method == http.MethodPost:
		return "POST register"
	case len(seg) == 2 && method == http.MethodGet:
		return "GET app"
	case len(seg) == 3 && method == http.MethodPut:
		return "PUT renew"
	case len(seg) == 3 && method == http.MethodDelete:
		return "DELETE cancel"
	case len(seg) == 3 && method == http.MethodGet:
		return "GET instance"
	case len(seg) == 4 && (seg[3] == "status" || seg[3] == "metadata"):
		return method + " " + seg[3]
	}
	return method + " " + strings.Trim(rest, "/")
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
