package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func printResult(w io.Writer, r *Result) {
	fmt.Fprintf(w, "\n%s: %d instances in %d apps, median of %d rounds of %s per phase at concurrency %d\n", r.Label, r.Instances, r.Apps, r.Rounds, r.Duration, r.Concurrency)
	fmt.Fprintf(w, "%-14s %9s %7s %10s %9s %9s %9s %10s %10s %12s\n", "phase", "requests", "errors", "req/s", "p50 ms", "p99 ms", "max ms", "tool cpu", "server cpu", "server us/req")
	line := func(name string, p *PhaseResult) {
		fmt.Fprintf(w, "%-14s %9d %7d %10.0f %9.2f %9.2f %9.1f %10.2f %10.2f %12.1f\n", name, p.Requests, p.Errors, p.RPS, p.P50ms, p.P99ms, p.MaxMs, p.ClientCPU, p.ServerCPU, cpuPerReq(p))
	}
	if r.Load != nil {
		line("load", r.Load)
	}
	for _, name := range []string{"renew", "full", "delta", "burst", "mix"} {
		if p := r.Phases[name]; p != nil {
			line(name, p)
			for _, k := range []string{"renew", "delta", "full"} {
				if q := p.Parts[k]; q != nil {
					line("  "+k, q)
				}
			}
		}
	}
	for _, p := range r.Phases {
		if p.FirstError != "" {
			fmt.Fprintf(w, "first error: %s\n", p.FirstError)
			break
		}
	}
	if r.FullBytes > 0 {
		fmt.Fprintf(w, "full fetch %d bytes gzip (%d JSON), delta %d bytes gzip; fleet visible %.1fs after loading\n", r.FullBytes, r.FullRaw, r.DeltaBytes, r.SettleSec)
	}
	if r.RSSLoaded > 0 {
		fmt.Fprintf(w, "server RSS after loading %.1f MiB, at the end %.1f MiB\n", mib(r.RSSLoaded), mib(r.RSSEnd))
	}
	if len(r.Propagation) > 0 {
		fmt.Fprintf(w, "propagation (register -> in /apps/delta): %v s\n", r.Propagation)
	}
	if r.ConvergeN > 0 {
		fmt.Fprintf(w, "convergence of %d registrations on the peer: %.2f s\n", r.ConvergeN, r.ConvergeSec)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// reportCmd reads the JSON of the three runs (and the extra goreka checks)
// and prints a Markdown table with the ratios goreka/Java and
// goreka/baseline, checking each against the target of the issue.
func reportCmd(args []string) int {
	fs := flag.NewFlagSet("goreka-bench report", flag.ExitOnError)
	gPath := fs.String("goreka", "", "goreka's result JSON")
	jPath := fs.String("java", "", "the stock Java server's result JSON")
	bPath := fs.String("baseline", "", "the gin baseline's result JSON")
	bigPath := fs.String("goreka-100k", "", "goreka's memory run with 100k instances (optional)")
	convPath := fs.String("converge", "", "goreka's two-node convergence run (optional)")
	fs.Parse(args)
	load := func(p string) *Result {
		if p == "" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "goreka-bench report:", err)
			return nil
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			fmt.Fprintf(os.Stderr, "goreka-bench report: %s: %v\n", p, err)
			return nil
		}
		return &r
	}
	g, j, b := load(*gPath), load(*jPath), load(*bPath)
	if g == nil {
		fmt.Fprintln(os.Stderr, "goreka-bench report: need --goreka")
		return 2
	}
	writeReport(os.Stdout, g, j, b, load(*bigPath), load(*convPath))
	return 0
}

// metric is one row: get extracts the value (ok false when absent).
type metric struct {
	name   string
	unit   string
	get    func(*Result) (float64, bool)
	vsJava string // target on goreka/Java, e.g. ">=10"
	vsBase string // target on goreka/baseline
}

func phaseGet(name, part string, f func(*PhaseResult) float64) func(*Result) (float64, bool) {
	return func(r *Result) (float64, bool) {
		p := r.Phases[name]
		if p != nil && part != "" {
			p = p.Parts[part]
		}
		if p == nil || p.Requests == 0 {
			return 0, false
		}
		return f(p), true
	}
}

func rps(p *PhaseResult) float64 { return p.RPS }

// cpuPerReq is the server's CPU time per request in microseconds: the fair
// figure on a small machine where the load tool takes a core of its own.
func cpuPerReq(p *PhaseResult) float64 {
	if p.Requests == 0 {
		return 0
	}
	return p.ServerCPU * p.Seconds / float64(p.Requests) * 1e6
}

// perReq reads a phase's server CPU per request, when the server's CPU was
// measured.
func perReq(name string) func(*Result) (float64, bool) {
	return func(r *Result) (float64, bool) {
		p := r.Phases[name]
		if name == "load" {
			p = r.Load
		}
		if p == nil || p.Requests == 0 || p.ServerCPU == 0 {
			return 0, false
		}
		return cpuPerReq(p), true
	}
}
func p99(p *PhaseResult) float64 { return p.P99ms }
func p50(p *PhaseResult) float64 { return p.P50ms }

func writeReport(w io.Writer, g, j, b, big, conv *Result) {
	rows := []metric{
		{"server CPU per renew", "µs", perReq("renew"), "", "<=1.1"},
		{"server CPU per full fetch", "µs", perReq("full"), "", "<=1.1"},
		{"server CPU per delta fetch", "µs", perReq("delta"), "", ""},
		{"server CPU per registration (burst)", "µs", perReq("burst"), "<=0.3", "<=1.5"},
		{"server CPU per registration (loading)", "µs", perReq("load"), "", ""},
		{"renew throughput", "req/s", phaseGet("renew", "", rps), ">=10", ">=0.7"},
		{"renew p50 / p99", "ms", nil, "", ""},
		{"full fetch throughput (gzip JSON)", "req/s", phaseGet("full", "", rps), ">=10", ">=0.8"},
		{"full fetch p99", "ms", phaseGet("full", "", p99), "", ""},
		{"delta fetch throughput", "req/s", phaseGet("delta", "", rps), "", ""},
		{"registration burst", "req/s", phaseGet("burst", "", rps), "", ""},
		{"fleet mix: renew p99", "ms", phaseGet("mix", "renew", p99), "<=0.1", ""},
		{"fleet mix: delta p99", "ms", phaseGet("mix", "delta", p99), "", ""},
		{"fleet mix: full p99", "ms", phaseGet("mix", "full", p99), "", ""},
		{"RSS after loading", "MiB", func(r *Result) (float64, bool) { return mib(r.RSSLoaded), r.RSSLoaded > 0 }, "<=0.1", ""},
		{"start-up to first GET /apps 200", "s", func(r *Result) (float64, bool) { return r.StartupSec, r.StartupSec > 0 }, "<=0.01", ""},
		{"propagation, worst sample", "s", func(r *Result) (float64, bool) {
			if len(r.Propagation) == 0 {
				return 0, false
			}
			return slices.Max(r.Propagation), true
		}, "", ""},
		{"full fetch size", "KiB gzip", func(r *Result) (float64, bool) { return float64(r.FullBytes) / 1024, r.FullBytes > 0 }, "", ""},
		{"load tool CPU during renew", "cores", phaseGet("renew", "", func(p *PhaseResult) float64 { return p.ClientCPU }), "", ""},
		{"server CPU during renew", "cores", phaseGet("renew", "", func(p *PhaseResult) float64 { return p.ServerCPU }), "", ""},
	}
	fmt.Fprintf(w, "%d instances in %d applications; each phase the median of %d rounds of %s at concurrency %d, the servers interleaved round by round; same machine, one run.\n\n", g.Instances, g.Apps, g.Rounds, g.Duration, g.Concurrency)
	fmt.Fprintln(w, "| metric | goreka | Java (stock) | gin baseline | goreka/Java | goreka/baseline | target |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|")
	cell := func(r *Result, m metric) (float64, string) {
		if r == nil {
			return 0, "–"
		}
		v, ok := m.get(r)
		if !ok {
			return 0, "–"
		}
		return v, num(v)
	}
	for _, m := range rows {
		if m.get == nil { // renew latency: two numbers in one cell
			lat := func(r *Result) string {
				if r == nil || r.Phases["renew"] == nil {
					return "–"
				}
				p := r.Phases["renew"]
				return num(p50(p)) + " / " + num(p99(p))
			}
			fmt.Fprintf(w, "| %s (%s) | %s | %s | %s | | | |\n", m.name, m.unit, lat(g), lat(j), lat(b))
			continue
		}
		gv, gs := cell(g, m)
		jv, js := cell(j, m)
		bv, bs := cell(b, m)
		rj, rb := ratio(gs, gv, js, jv), ratio(gs, gv, bs, bv)
		var targets []string
		if m.vsJava != "" {
			targets = append(targets, "vs Java "+m.vsJava+" "+verdict(rj, jv, gv, m.vsJava))
		}
		if m.vsBase != "" {
			targets = append(targets, "vs baseline "+m.vsBase+" "+verdict(rb, bv, gv, m.vsBase))
		}
		if m.name == "propagation, worst sample" && gs != "–" {
			targets = append(targets, "goreka <= 1 s "+mark(gv <= 1))
		}
		fmt.Fprintf(w, "| %s (%s) | %s | %s | %s | %s | %s | %s |\n", m.name, m.unit, gs, js, bs, rj, rb, strings.Join(targets, "; "))
	}
	if big != nil && big.RSSLoaded > 0 {
		fmt.Fprintf(w, "| RSS with %d instances (MiB) | %s | | | | | <= 512 MiB %s |\n", big.Instances, num(mib(big.RSSLoaded)), mark(mib(big.RSSLoaded) <= 512))
	}
	if conv != nil && conv.ConvergeN > 0 {
		fmt.Fprintf(w, "| two goreka nodes: %d registrations on A visible on B (s) | %s | | | | | <= 5 s %s |\n", conv.ConvergeN, num(conv.ConvergeSec), mark(conv.ConvergeSec <= 5))
	}
	errs := func(r *Result) int64 {
		if r == nil {
			return 0
		}
		var n int64
		for _, p := range r.Phases {
			n += p.Errors
		}
		return n
	}
	fmt.Fprintf(w, "\nErrors over all phases: goreka %d, Java %d, baseline %d.\n", errs(g), errs(j), errs(b))
}

func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

func ratio(gs string, gv float64, os string, ov float64) string {
	if gs == "–" || os == "–" || ov == 0 {
		return "–"
	}
	r := gv / ov
	if r >= 10 {
		return fmt.Sprintf("%.0fx", r)
	}
	return fmt.Sprintf("%.2fx", r)
}

// verdict checks a ratio string against a target like ">=10" or "<=0.1".
func verdict(r string, other, g float64, target string) string {
	if r == "–" || other == 0 {
		return "(n/a)"
	}
	var want float64
	fmt.Sscanf(target[2:], "%g", &want)
	v := g / other
	if strings.HasPrefix(target, ">=") {
		return mark(v >= want)
	}
	return mark(v <= want)
}

func mark(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}
