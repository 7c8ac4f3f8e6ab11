//go:build compat

package suite

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pScenario: per-application write authorization with real clients (compat/README.md).
const pScenario = "p per-app auth"

// perAppClients are the clients of scenario p: the impostor's instance id is set with a JVM system
// property (-Deureka.instance.instance-id=..., through run.sh's JAVA_OPTS), which Spring Boot reads.
var perAppClients = []string{"spring-boot3", "spring-boot4"}

// appUser is one entry of goreka.security.users.
type appUser struct{ name, pass, apps string }

func (u appUser) userinfo() string { return u.name + ":" + u.pass }

// perAppUsers are the users of one client's run of scenario p: pa and pb own their apps, pi (the
// impostor) owns only <client>-pi but runs as application <client>-pb with pb's instance id.
func perAppUsers(client string) (pa, pb, pi appUser) {
	mk := func(role string) appUser {
		app := client + "-" + role
		return appUser{name: app, pass: role + "-secret-" + client, apps: strings.ToUpper(app)}
	}
	return mk("pa"), mk("pb"), mk("pi")
}

// runPerApp is scenario p: its own goreka with goreka.security.users, one user per application, each
// agent with its own user:pass in defaultZone. pa and pb register, renew and see each other; the
// impostor, a real Spring client of application <client>-pb with pb's instance id and its own
// credentials, is refused (403) when it registers over pb and when, on SIGTERM, it cancels pb's
// instance; pb stays listed and renewing; pb's own cancel on SIGTERM is accepted.
func (s *suite) runPerApp(t *testing.T, tg *target, runs []*clientRun, outDir string, buildErr map[string]error) {
	var prs []*clientRun
	for _, r := range runs {
		switch {
		case buildErr[r.client] != nil:
		case tg.usersArgs == nil:
			r.results[pScenario] = result{notApplicable, "n/a: " + tg.notes[pScenario]}
		case !slices.Contains(perAppClients, r.client):
			r.results[pScenario] = result{skip, "Spring clients only (the impostor's instance id is a Spring property)"}
		case s.auth == "":
			r.results[pScenario] = result{skip, "COMPAT_AUTH=off"}
		default:
			prs = append(prs, r)
		}
	}
	if len(prs) == 0 {
		return
	}
	dir := filepath.Join(outDir, "perapp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	user, pass, _ := strings.Cut(s.auth, ":")
	srv := &server{tg: tg, port: port, log: filepath.Join(dir, "server.log"),
		api: eurekaAPI{base: fmt.Sprintf("http://127.0.0.1:%d/eureka/", port), auth: s.auth}}
	var users []appUser
	for _, r := range prs {
		pa, pb, pi := perAppUsers(r.client)
		users = append(users, pa, pb, pi)
	}
	srv.args = append(tg.authArgs(user, pass), tg.usersArgs(users)...)
	if err := s.startServer(srv); err != nil {
		for _, r := range prs {
			r.results[pScenario] = result{fail, "server did not start: " + strings.SplitN(err.Error(), "\n", 2)[0]}
		}
		return
	}
	defer func() { _ = srv.p.stop(syscall.SIGTERM, 20*time.Second) }()
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	var wg sync.WaitGroup
	for _, r := range prs {
		wg.Go(func() {
			start := time.Now()
			d, err := s.perAppClient(r, srv, target, dir)
			r.set(pScenario, err, d)
			if err != nil {
				t.Logf("FAIL %s / %s: %v\n--- %s (tail)\n%s", r.client, pScenario, err, srv.log, tail(srv.log, 25))
			} else {
				t.Logf("%s / %s: pass in %s %s", r.client, pScenario, time.Since(start).Round(100*time.Millisecond), d)
			}
		})
	}
	wg.Wait()
}

func (s *suite) perAppClient(r *clientRun, srv *server, target *url.URL, dir string) (string, error) {
	agentsDir := filepath.Join(s.root, "compat", "agents")
	paU, pbU, piU := perAppUsers(r.client)
	var started []*agent
	defer func() {
		for _, a := range started {
			_ = a.p.stop(syscall.SIGTERM, 15*time.Second)
			a.proxy.Close()
		}
	}()
	start := func(app string, u appUser, env ...string) (*agent, error) {
		a, err := startAgentEnv(s.ps, agentsDir, dir, r.client, app, target, u.userinfo(), "compat=p", env)
		if err != nil {
			return nil, err
		}
		started = append(started, a)
		return a, waitFor(300*time.Second, a.app+" GET /health is 200", func() (bool, string) {
			if a.p.exited() {
				return true, "exited"
			}
			code, body := a.get("/health")
			return code == 200, fmt.Sprintf("%d %s", code, body)
		})
	}
	pa, err := start(paU.name, paU)
	if err != nil {
		return "", err
	}
	pb, err := start(pbU.name, pbU)
	if err != nil {
		return "", err
	}
	for _, a := range []*agent{pa, pb} {
		if a.p.exited() {
			return "", fmt.Errorf("%s exited at start-up", a.app)
		}
		if err := r.withAPI(srv).listed(a.app, []string{a.id + " UP"}, 60*time.Second); err != nil {
			return "", err
		}
	}
	// Reads are open to every user: each sees the other application.
	if err := waitSeen(pa, pb.app, 1, 60*time.Second); err != nil {
		return "", err
	}
	if err := waitSeen(pb, pa.app, 1, 60*time.Second); err != nil {
		return "", err
	}

	// The impostor: application <client>-pb, pb's instance id, its own credentials (user <client>-pi).
	imp, err := start(pbU.name, piU, "JAVA_OPTS=-Deureka.instance.instance-id="+pb.id)
	if err != nil {
		return "", err
	}
	if err := waitFor(60*time.Second, "the impostor's register answered 403", func() (bool, string) {
		snap := imp.proxy.Snapshot()
		return snap["POST register 403"] > 0, imp.proxy.Recent()
	}); err != nil {
		return "", err
	}
	if err := imp.p.stop(syscall.SIGTERM, 30*time.Second); err != nil {
		return "", fmt.Errorf("impostor did not stop on SIGTERM: %w", err)
	}
	snap := imp.proxy.Snapshot()
	if snap["DELETE cancel 403"] < 1 {
		return "", fmt.Errorf("the impostor's cancel of %s was not answered 403; its requests:\n%s", pb.id, imp.proxy.Recent())
	}
	for _, k := range []string{"POST register 204", "PUT renew 200", "DELETE cancel 200", "PUT status 200"} {
		if snap[k] > 0 {
			return "", fmt.Errorf("the impostor's %s: %d writes accepted", k, snap[k])
		}
	}
	// pb is untouched: still listed UP with its own lease, still renewing, and a still sees it.
	before := pb.proxy.Snapshot()
	if err := waitFor(20*time.Second, pb.app+" renews 200 after the impostor left", func() (bool, string) {
		now := pb.proxy.Snapshot()
		return diff(before, now, "PUT renew 200") >= 3, fmt.Sprint(now)
	}); err != nil {
		return "", err
	}
	if got, err := r.withAPI(srv).api.instances(pb.app); err != nil || !slices.Equal(got, []string{pb.id + " UP"}) {
		return "", fmt.Errorf("after the impostor: server lists %s as %q (%v), want [%s UP]", pb.app, got, err, pb.id)
	}
	if n, last := pa.seenCount(pb.app); n != 1 {
		return "", fmt.Errorf("after the impostor: %s sees %d of %s (%s)", pa.app, n, pb.app, last)
	}
	if pbs := pb.proxy.Snapshot(); pbs["PUT renew 403"]+pbs["POST register 403"]+pbs["GET apps/delta 403"] > 0 {
		return "", fmt.Errorf("the owner %s was refused: %v", pb.app, pbs)
	}
	// The owner's own cancel is accepted.
	if err := pb.p.stop(syscall.SIGTERM, 30*time.Second); err != nil {
		return "", fmt.Errorf("%s did not stop on SIGTERM: %w", pb.app, err)
	}
	if n := pb.proxy.Snapshot()["DELETE cancel 200"]; n < 1 {
		return "", fmt.Errorf("%s's own cancel was not answered 200; its requests:\n%s", pb.app, pb.proxy.Recent())
	}
	if err := r.withAPI(srv).listed(pb.app, nil, 20*time.Second); err != nil {
		return "", err
	}
	return fmt.Sprintf("impostor refused: register 403 x%d, renew 403 x%d, cancel 403 x%d; owner renewed on, its cancel 200",
		snap["POST register 403"], snap["PUT renew 403"], snap["DELETE cancel 403"]), nil
}

// withAPI is r with the API of srv (scenario p runs against its own server).
func (r *clientRun) withAPI(srv *server) *clientRun {
	c := *r
	c.api = srv.api
	return &c
}
