//go:build capture

package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/internal/proctest"
)

// TestCaptureStock re-captures testdata/stock/<target>/ from the stock Java
// server: for each target it starts compat/stock-server (the target's
// line, built once by its build.sh) on a free loopback port with the target's arguments, runs
// stockSteps, waits for the server's read cache to refresh, and stores every
// stockFetches answer normalised by stockNormalize.
//
//	go test -tags capture -run TestCaptureStock ./server/
//
// GOREKA_STOCK_TARGET=<dir> captures one target only. GOREKA_STOCK_URL=
// http://127.0.0.1:8762 uses a server already running instead (with one
// target: it must run that target's line and arguments and hold no
// registrations).
func TestCaptureStock(t *testing.T) {
	dir := filepath.Join("..", "compat", "stock-server")
	built := map[string]bool{}
	for _, tg := range stockTargets {
		if only := os.Getenv("GOREKA_STOCK_TARGET"); only != "" && only != tg.dir {
			continue
		}
		t.Run(tg.dir, func(t *testing.T) {
			base := os.Getenv("GOREKA_STOCK_URL")
			if base == "" {
				if !built[tg.line] {
					build := exec.Command("./build.sh")
					build.Dir, build.Stdout, build.Stderr = dir, os.Stderr, os.Stderr
					build.Env = append(os.Environ(), "STOCK_LINE="+tg.line)
					if err := build.Run(); err != nil {
						t.Fatalf("building the stock server (line %s): %v", tg.line, err)
					}
					built[tg.line] = true
				}
				args := tg.args
				if tg.regions {
					args = append(slices.Clone(args), stockRemoteArgs(stockRemote(t).URL+"/eureka/")...)
				}
				base = startStock(t, dir, tg.line, args)
			} else if tg.regions {
				t.Skip("GOREKA_STOCK_URL: the regions target needs its own remote region")
			}
			out := filepath.Join("..", "testdata", "stock", tg.dir)
			if tg.held {
				captureStockHeld(t, base, out)
				return
			}
			captureStock(t, base, out, tg.regions)
		})
	}
}

func startStock(t *testing.T, dir, line string, args []string) string {
	t.Helper()
	port := proctest.Port(t) // not from :0: the JVM binds seconds later
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "./run.sh", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port), "STOCK_LINE="+line)
	logf, err := os.Create(filepath.Join(t.TempDir(), "stock.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(120 * time.Second)
	for {
		resp, err := http.Get(base + "/eureka/apps")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("stock server did not answer within 120 s:\n%s", b)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func captureStock(t *testing.T, base, out string, regions bool) {
	t.Helper()
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	fetch := func(reads []stockRead) {
		for _, f := range stockFetches(reads) {
			code, h, body := stockDo(t, base, "GET", f.path, "", f.hdr)
			if err := os.WriteFile(filepath.Join(out, f.file), stockAnswer(code, h.Get("Content-Type"), body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	fetch(stockEmptyReads)
	for _, st := range stockSteps {
		code, _, body := stockDo(t, base, st.method, st.path, st.body, map[string]string{"Content-Type": "application/json"})
		if code != st.want {
			t.Fatalf("%s %s = %d (%s), want %d", st.method, st.path, code, body, st.want)
		}
	}
	// The read-only response cache refreshes every second in
	// compat/stock-server's configuration.
	time.Sleep(2500 * time.Millisecond)
	fetch(stockReads)
	if regions {
		fetch(stockRegionReads)
	}
}

func stockDo(t *testing.T, base, method, path, body string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// captureStockHeld runs the held-lease scenario (stock_held_test.go): it
// registers the two instances, renews the live one ten times a second
// throughout, reads the held lease once it has expired (shown: renewals
// are still below the threshold, self-preservation keeps expiration off),
// waits until the same read hides it (renewals of a full minute above the
// threshold: expiration on, the eviction run holds the lease back), then
// posts the batch and reads again.
func captureStockHeld(t *testing.T, base, out string) {
	t.Helper()
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	store := func(file string, code int, h http.Header, body []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(out, file), stockAnswer(code, h.Get("Content-Type"), body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range stockHeldSteps {
		code, _, body := stockDo(t, base, st.method, st.path, st.body, map[string]string{"Content-Type": "application/json"})
		if code != st.want {
			t.Fatalf("%s %s = %d (%s), want %d", st.method, st.path, code, body, st.want)
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			req, _ := http.NewRequest("PUT", base+stockHeldRenew, nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}()
	defer func() { close(stop); <-done }()

	time.Sleep(2 * time.Second) // the 1-s lease has expired
	code, h, body := stockDo(t, base, "GET", stockHeldPath, "", stockJSON)
	if code != http.StatusOK {
		t.Fatalf("held lease read = %d before renewals passed the threshold: the server started too late in its first minute, run again", code)
	}
	store("instance-held.json", code, h, body)
	deadline := time.Now().Add(150 * time.Second)
	for code == http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the expired lease is still shown after 150 s of renewals above the threshold")
		}
		time.Sleep(500 * time.Millisecond)
		code, h, body = stockDo(t, base, "GET", stockHeldPath, "", stockJSON)
	}
	store("instance-hidden.json", code, h, body)
	// Held, not evicted: the application still lists it (the read-only
	// cache is refreshed every second).
	time.Sleep(2500 * time.Millisecond)
	if _, _, app := stockDo(t, base, "GET", "/eureka/apps/"+heldApp, "", stockJSON); !strings.Contains(string(app), `"instanceId":"`+heldID+`"`) {
		t.Fatalf("the expired lease was evicted, not held: %s", app)
	}
	code, h, body = stockDo(t, base, "POST", "/eureka/peerreplication/batch/", stockHeldBatch, stockBatchHdr)
	store("batch.json", code, h, body)
	code, h, body = stockDo(t, base, "GET", stockHeldPath, "", stockJSON)
	store("instance-after.json", code, h, body)
	time.Sleep(2500 * time.Millisecond)
	code, h, body = stockDo(t, base, "GET", "/eureka/apps/"+heldApp, "", stockJSON)
	store("app-after.json", code, h, body)
}
