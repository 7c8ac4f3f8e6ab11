//go:build compat

package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// agent is one running client agent (compat/README.md, "client-agent convention") and its proxy.
type agent struct {
	client string // agent directory name, e.g. spring-boot3
	app    string // APP_NAME
	port   int
	id     string // instance id, <app>:<port>
	proxy  *countingProxy
	p      *proc
}

func startAgent(ps *procs, agentsDir, outDir, client, app string, server *url.URL, auth, metadata string) (*agent, error) {
	return startAgentEnv(ps, agentsDir, outDir, client, app, server, auth, metadata, nil)
}

// startAgentEnv is startAgent with extra environment entries for run.sh (JAVA_OPTS=...).
func startAgentEnv(ps *procs, agentsDir, outDir, client, app string, server *url.URL, auth, metadata string, extra []string) (*agent, error) {
	return startAgentAt(ps, agentsDir, outDir, client, app, server, "/eureka/", auth, metadata, extra)
}

// startAgentAt is startAgentEnv with the path of the client's defaultZone on its proxy (/eureka/, or
// /ns/dev/eureka/ for a goreka namespace): the client itself uses that URL, the proxy passes paths on.
func startAgentAt(ps *procs, agentsDir, outDir, client, app string, server *url.URL, eurekaPath, auth, metadata string, extra []string) (*agent, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	px, err := newCountingProxy(app, server)
	if err != nil {
		return nil, err
	}
	eurekaURL := px.URL() + eurekaPath
	if auth != "" {
		eurekaURL = "http://" + auth + "@" + strings.TrimPrefix(eurekaURL, "http://")
	}
	env := []string{"APP_NAME=" + app, "PORT=" + strconv.Itoa(port), "EUREKA_URL=" + eurekaURL}
	if metadata != "" {
		env = append(env, "METADATA="+metadata)
	}
	env = append(env, extra...)
	dir := filepath.Join(agentsDir, client)
	p, err := ps.start(app, filepath.Join(outDir, app+".log"), dir, env, "bash", filepath.Join(dir, "run.sh"))
	if err != nil {
		px.Close()
		return nil, err
	}
	return &agent{client: client, app: app, port: port, id: fmt.Sprintf("%s:%d", app, port), proxy: px, p: p}, nil
}

var agentHTTP = &http.Client{Timeout: 8 * time.Second}

// get returns the status and body of GET path on the agent.
func (a *agent) get(path string) (int, string) {
	resp, err := agentHTTP.Get(fmt.Sprintf("http://127.0.0.1:%d%s", a.port, path))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// seenCount is GET /seen/<svc>/count; -1 and the error text when it cannot be read.
func (a *agent) seenCount(svc string) (int, string) {
	code, body := a.get("/seen/" + svc + "/count")
	if code != http.StatusOK {
		return -1, fmt.Sprintf("GET /seen/%s/count: %d %s", svc, code, body)
	}
	n, err := strconv.Atoi(body)
	if err != nil {
		return -1, "GET /seen/" + svc + "/count: " + body
	}
	return n, body
}

type seenInstance struct {
	InstanceID string            `json:"instanceId"`
	Host       string            `json:"host"`
	Port       int               `json:"port"`
	Metadata   map[string]string `json:"metadata"`
}

func (a *agent) seen(svc string) ([]seenInstance, string) {
	code, body := a.get("/seen/" + svc)
	if code != http.StatusOK {
		return nil, fmt.Sprintf("GET /seen/%s: %d %s", svc, code, body)
	}
	var out []seenInstance
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		return nil, fmt.Sprintf("GET /seen/%s: %v: %s", svc, err, body)
	}
	return out, body
}

type rawView struct {
	LocalHashCode string              `json:"localHashCode"`
	Apps          map[string][]string `json:"apps"`
}

func (a *agent) raw() (rawView, string) {
	var v rawView
	code, body := a.get("/raw")
	if code != http.StatusOK {
		return v, fmt.Sprintf("GET /raw: %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return v, fmt.Sprintf("GET /raw: %v: %s", err, body)
	}
	return v, body
}

// waitFor polls check until it reports true or the deadline passes; the error names what was awaited
// and the last value observed.
func waitFor(deadline time.Duration, what string, check func() (bool, string)) error {
	end := time.Now().Add(deadline)
	for {
		ok, last := check()
		if ok {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s: not within %s; last observed: %s", what, deadline, last)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// waitSeen waits until a sees exactly n UP instances of svc.
func waitSeen(a *agent, svc string, n int, deadline time.Duration) error {
	return waitFor(deadline, fmt.Sprintf("%s sees %d instance(s) of %s", a.app, n, svc), func() (bool, string) {
		got, last := a.seenCount(svc)
		return got == n, last
	})
}
