// Command goreka runs a Eureka-compatible service registry. It takes its
// configuration the way a Spring Boot Eureka server does: --name=value
// arguments, environment variables and application.yml; see --help.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/goreka/goreka/cmd/goreka/config"
	"github.com/goreka/goreka/ctl"
)

func main() {
	// Most of goreka's heap is the registry itself, alive for the life of the
	// process, and it allocates little per request (a heartbeat allocates
	// nothing). Go's default GOGC=100 lets the heap grow to twice the live
	// registry between collections; 50 keeps resident memory about a sixth
	// lower (10k instances: 60 -> 50 MiB) for a collection cost that does not
	// show in the load tool's throughput. GOGC (and GOMEMLIMIT) in the
	// environment still take precedence.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(args, environ []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "ctl" {
		return ctl.Run(args[1:], environ, stdout, stderr)
	}
	for _, a := range args {
		if a == "--help" || a == "-h" {
			fmt.Fprint(stdout, config.Usage())
			fmt.Fprint(stdout, "\nThe same binary is also a client of a running goreka: goreka ctl -h\n")
			return 0
		}
	}
	wd, _ := os.Getwd()
	cfg, err := config.Load(args, environ, wd)
	if err != nil {
		fmt.Fprintf(stderr, "goreka: invalid configuration: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		return 2
	}
	if cfg.Goreka.PrintConfig {
		fmt.Fprint(stdout, cfg.Render())
		return 0
	}
	log := newLogger(cfg, stderr)
	for _, w := range cfg.Warnings {
		log.Warn("configuration: " + w)
	}
	// SIGHUP is caught before the port is bound: a reload asked for as soon
	// as the server answers must not end the process (its default action).
	hup, stopHup := notifyHangup()
	defer stopHup()
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		fmt.Fprintf(stderr, "goreka: cannot listen on %s: %v\n", cfg.Addr(), errors.Unwrap(err))
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a, err := newApp(cfg, log, time.Now)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "goreka: invalid configuration: %v\n", err)
		return 2
	}
	// SIGHUP re-reads the configuration: static registrations are applied
	// at once (reloadOnHangup), and the same signal wakes the peer watcher,
	// which re-reads the service URLs (as does the timer of
	// eureka.server.peer-eureka-nodes-update-interval-ms).
	load := func() (*config.Config, error) { return config.Load(args, environ, wd) }
	a.reload = func() ([]string, error) {
		c, err := load()
		if err != nil {
			return nil, err
		}
		return c.ReplicationURLs(), nil
	}
	peerHup := make(chan struct{}, 1)
	a.hup = peerHup
	go a.reloadOnHangup(ctx, hup, load, peerHup)
	if err := a.run(ctx, ln); err != nil {
		log.Error("server stopped", "err", err)
		return 1
	}
	return 0
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.Logging.Goreka}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.Goreka.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(h)
}
