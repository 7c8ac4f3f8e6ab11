package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ladderCmd prints the scale ladder's Markdown table from bench/ladder.sh's
// results: DIR/N/{goreka,java,baseline}.json, DIR/N/join.txt (seconds, RSS
// KiB) and DIR/N/converge.json for each rung N.
func ladderCmd(args []string) int {
	fs := flag.NewFlagSet("goreka-bench ladder", flag.ExitOnError)
	dir := fs.String("dir", "out/bench/ladder", "results directory")
	rungs := fs.String("rungs", "10000 100000 1000000", "space-separated rungs")
	fs.Parse(args)
	var ls []ladderRung
	for _, s := range strings.Fields(*rungs) {
		n, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "goreka-bench ladder: bad rung", s)
			return 2
		}
		d := filepath.Join(*dir, s)
		r := ladderRung{n: n, g: readResult(filepath.Join(d, "goreka.json")), j: readResult(filepath.Join(d, "java.json")),
			b: readResult(filepath.Join(d, "baseline.json")), conv: readResult(filepath.Join(d, "converge.json"))}
		if b, err := os.ReadFile(filepath.Join(d, "join.txt")); err == nil {
			f := strings.Fields(string(b))
			if len(f) > 0 {
				r.joinSec, _ = strconv.ParseFloat(f[0], 64)
			}
			if len(f) > 1 {
				kib, _ := strconv.ParseFloat(f[1], 64)
				r.joinRSS = kib / 1024
			}
		}
		if r.g != nil {
			ls = append(ls, r)
		}
	}
	writeLadder(os.Stdout, ls)
	return 0
}

type ladderRung struct {
	n             int
	g, j, b, conv *Result
	joinSec       float64
	joinRSS       float64 // MiB
}

func readResult(path string) *Result {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var r Result
	if json.Unmarshal(b, &r) != nil {
		return nil
	}
	return &r
}

func writeLadder(w io.Writer, ls []ladderRung) {
	if len(ls) == 0 {
		fmt.Fprintln(w, "(no results)")
		return
	}
	g0 := ls[0].g
	fmt.Fprintf(w, "Scale ladder, %d instances per application; each phase the median of %d rounds of %s at concurrency %d, servers interleaved round by round; one run. Server CPU per request (µs, from /proc) is the primary figure: the load tool takes one of the two cores.\n\n",
		50, g0.Rounds, g0.Duration, g0.Concurrency)
	fmt.Fprintln(w, "| rung | metric | goreka | Java | gin floor | goreka/Java | goreka/floor |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	var renew10k float64
	for _, l := range ls {
		rung := fmt.Sprintf("%dk", l.n/1000)
		row := func(name string, get func(*Result) (float64, bool)) {
			gv, gs := ladderCell(l.g, get)
			jv, js := ladderCell(l.j, get)
			bv, bs := ladderCell(l.b, get)
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", rung, name, gs, js, bs, ratio(gs, gv, js, jv), ratio(gs, gv, bs, bv))
		}
		for _, p := range []struct{ name, phase string }{
			{"server CPU per renew (µs)", "renew"}, {"server CPU per full fetch (µs)", "full"},
			{"server CPU per delta fetch (µs)", "delta"}, {"server CPU per registration, burst (µs)", "burst"},
			{"server CPU per registration, loading (µs)", "load"},
		} {
			row(p.name, perReq(p.phase))
		}
		if v, ok := perReq("renew")(l.g); ok && l.n == 10000 {
			renew10k = v
		} else if ok && renew10k > 0 {
			fmt.Fprintf(w, "| %s | goreka renew CPU vs its 10k figure | %.2fx | | | | |\n", rung, v/renew10k)
		}
		for _, p := range []string{"renew", "full", "delta", "burst"} {
			row(p+" throughput (req/s)", phaseGet(p, "", rps))
		}
		row("RSS after loading (MiB)", func(r *Result) (float64, bool) { return mib(r.RSSLoaded), r.RSSLoaded > 0 })
		row("RSS at the end (MiB)", func(r *Result) (float64, bool) { return mib(r.RSSEnd), r.RSSEnd > 0 })
		row("full fetch (KiB gzip)", func(r *Result) (float64, bool) { return float64(r.FullBytes) / 1024, r.FullBytes > 0 })
		row("propagation right after loading, worst (s)", func(r *Result) (float64, bool) {
			return maxOf(r.PropagationLoaded)
		})
		row("propagation at steady state, worst (s)", func(r *Result) (float64, bool) { return maxOf(r.Propagation) })
		row("start-up to first GET /apps 200, empty (s)", func(r *Result) (float64, bool) { return r.StartupSec, r.StartupSec > 0 })
		if l.joinSec > 0 {
			fmt.Fprintf(w, "| %s | node joining goreka: exec to first GET /apps 200, after the start-up sync (s) | %s | | | | |\n", rung, num(l.joinSec))
			fmt.Fprintf(w, "| %s | joined node RSS (MiB) | %s | | | | |\n", rung, num(l.joinRSS))
		}
		if l.conv != nil && l.conv.ConvergeN > 0 {
			fmt.Fprintf(w, "| %s | two goreka nodes: %d registrations on A visible on B (s) | %s | | | | |\n", rung, l.conv.ConvergeN, num(l.conv.ConvergeSec))
		}
		var errs []string
		for _, r := range []*Result{l.g, l.j, l.b} {
			if r == nil {
				continue
			}
			var n int64
			for _, p := range r.Phases {
				n += p.Errors
			}
			errs = append(errs, fmt.Sprintf("%s %d", r.Label, n))
		}
		fmt.Fprintf(w, "| %s | errors over all phases | %s | | | | |\n", rung, strings.Join(errs, ", "))
	}
}

func ladderCell(r *Result, get func(*Result) (float64, bool)) (float64, string) {
	if r == nil {
		return 0, "–"
	}
	v, ok := get(r)
	if !ok {
		return 0, "–"
	}
	return v, num(v)
}

func maxOf(xs []float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	return slices.Max(xs), true
}
