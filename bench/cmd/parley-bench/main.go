// Command parley-bench measures a real Parley daemon against a floor: it starts
// `parley daemon start` in temporary state directories, drives it the way agents
// do (through `parley mcp serve` over stdio, and over the socket with Streamable
// HTTP), measures the same request/wake pattern on Redis over loopback, and
// prints a markdown table. scripts/bench builds parley, starts redis-server and
// runs it; see docs/performance.md.
//
// Usage:
//
//	parley-bench -parley PATH -redis 127.0.0.1:PORT [-n 2000] [-dur 5s] [-run REGEXP]
//	parley-bench -parley PATH -run org [-org-daemons 3] [-org-agents 90] [-org-rate 150] [-org-dur 60s]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

var (
	flagParley       = flag.String("parley", "", "the parley binary to measure (required)")
	flagRedis        = flag.String("redis", "", "host:port of a redis-server for the floor (empty: no floor)")
	flagRedisDurable = flag.String("redis-durable", "", "host:port of a redis-server with appendfsync always, the durable floor of send->wake (empty: none)")
	flagN            = flag.Int("n", 2000, "samples per latency scenario")
	flagDur          = flag.Duration("dur", 5*time.Second, "duration of each throughput scenario")
	flagRun          = flag.String("run", "", "run only scenarios whose name matches this regexp")
	flagSeed         = flag.Int("seed-messages", 1_000_000, "messages stored before the check_messages scenario")
	flagAgents       = flag.Int("agents", 1000, "agents of the broadcast scenario")
	flagSess         = flag.Int("sessions", 10000, "MCP sessions of the RSS scenario")
	flagGOGC         = flag.String("daemon-gogc", "", "GOGC for the daemons (and mcp serve), to measure the collector's share")
	flagSend         = flag.String("senders", "1,8,64", "sender counts of the throughput scenario, comma-separated")
	flagBare         = flag.String("bare-serve", "", "internal: serve the bare floor server (bare.go) on this Unix socket until stdin closes")
	flagBareJournal  = flag.String("bare-journal", "", "internal: with -bare-serve, append each send to this file and fsync it before answering")
)

func main() {
	flag.Parse()
	if *flagBare != "" {
		if err := serveBare(*flagBare, *flagBareJournal); err != nil {
			fmt.Fprintf(os.Stderr, "parley-bench: bare server: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *flagParley == "" {
		fmt.Fprintln(os.Stderr, "parley-bench: -parley PATH is required (scripts/bench builds it)")
		os.Exit(2)
	}
	re, err := regexp.Compile(*flagRun)
	if err != nil {
		fmt.Fprintf(os.Stderr, "parley-bench: -run: %v\n", err)
		os.Exit(2)
	}
	load0, _ := os.ReadFile("/proc/loadavg")
	bin, err := filepath.Abs(*flagParley) // the daemons' commands run in their state directories
	if err != nil {
		fmt.Fprintf(os.Stderr, "parley-bench: -parley: %v\n", err)
		os.Exit(2)
	}
	b := &bench{bin: bin, redis: *flagRedis, load0: strings.Join(strings.Fields(string(load0))[:3], " ")}
	ctx := context.Background()
	start := time.Now()
	for _, s := range scenarios {
		if !re.MatchString(s.name) || (s.explicit && *flagRun == "") {
			continue
		}
		logf("== %s", s.name)
		// A failed scenario is reported, not fatal: the others' rows are
		// worth printing (a run takes minutes).
		if err := s.run(ctx, b); err != nil {
			fmt.Fprintf(os.Stderr, "parley-bench: %s: %v\n", s.name, err)
			b.failed = append(b.failed, s.name+": "+err.Error())
		}
		b.cleanup()
	}
	b.print(os.Stdout, time.Since(start))
	if len(b.failed) > 0 {
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// A latRow is one latency scenario: Parley's samples and the floor's.
type latRow struct {
	name, what  string
	parley      []time.Duration
	floor       []time.Duration
	durable     []time.Duration // the durable floor's (redis appendfsync always)
	target      string
	met         string // "yes", "no" or ""
	floorAbsent string // why there is no floor, if none
}

// A valRow is one throughput or memory scenario.
type valRow struct {
	name, unit    string
	parley, floor float64
	floorIs       string // what the floor is
	target, met   string
	note          string
	listed        bool // already in bench.targets
}

// A target is one line of issue 16's table: each target with its floor,
// measured in the same run, and whether it is met.
type target struct {
	name, parley, floor, floorIs, goal, met string
}

type bench struct {
	bin, redis string
	load0      string // load average before the first scenario
	lat        []latRow
	val        []valRow
	org        []orgResult
	vs         []vsRow
	targets    []target
	failed     []string // scenarios that failed, with their error
	cleanups   []func()
}

func (b *bench) cleanup() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
	b.cleanups = nil
}

func (b *bench) print(w *os.File, took time.Duration) {
	host, _ := os.Hostname()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(w, "Measured %s on %s (%s, %d CPUs, %s); load average before: %s, after (the bench's own load included): %s\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), host, cpuModel(), runtime.NumCPU(), runtime.Version(),
		b.load0, strings.Join(strings.Fields(string(load))[:3], " "))
	if len(b.lat) > 0 {
		fmt.Fprintln(w, "| scenario | parley p50 | p99 | p999 | redis floor p50 | floor p99 | ratio p50 | durable floor p50 | durable p99 | ratio p50 | target | met |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	}
	for _, r := range b.lat {
		p := percentiles(r.parley)
		floor := func(ds []time.Duration, digits int) (p50, p99, ratio string) {
			if len(ds) == 0 {
				return "-", "-", "-"
			}
			f := percentiles(ds)
			return ms(f[0]), ms(f[1]), fmt.Sprintf("%.*fx", digits, float64(p[0])/float64(max(f[0], 1)))
		}
		f50, f99, fr := floor(r.floor, 1)
		d50, d99, dr := floor(r.durable, 2)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.name, ms(p[0]), ms(p[1]), ms(p[2]), f50, f99, fr, d50, d99, dr, dash(r.target), dash(r.met))
	}
	if len(b.val) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| scenario | parley | floor | floor is | target | met | note |")
		fmt.Fprintln(w, "|---|---:|---:|---|---|---|---|")
	}
	for _, r := range b.val {
		fl := "-"
		if r.floor > 0 {
			fl = num(r.floor) + " " + r.unit
		}
		is := r.floorIs
		if is == "" {
			is = "-"
		}
		fmt.Fprintf(w, "| %s | %s %s | %s | %s | %s | %s | %s |\n", r.name, num(r.parley), r.unit, fl, is, dash(r.target), dash(r.met), dash(r.note))
	}
	// Rows with a target that no scenario listed among the targets itself
	// (the bridge's) join them, their note saying what the floor is.
	targets := b.targets
	for _, r := range b.val {
		if r.target != "" && !r.listed {
			is := r.floorIs
			if is == "" {
				is = r.note
			}
			targets = append(targets, target{name: r.name, parley: num(r.parley) + " " + r.unit,
				floor: num(r.floor) + " " + r.unit, floorIs: is, goal: r.target, met: r.met})
		}
	}
	if len(targets) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Issue 16's targets, each beside its floor from this run:")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| target | parley | floor | floor is | goal | met |")
		fmt.Fprintln(w, "|---|---:|---:|---|---|---|")
		for _, t := range targets {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", t.name, t.parley, t.floor, t.floorIs, t.goal, t.met)
		}
	}
	printOrg(w, b.org)
	printFail(w, b.org)
	b.printVs(w)
	for _, f := range b.failed {
		fmt.Fprintf(w, "\n**Failed:** %s\n", f)
	}
	fmt.Fprintf(w, "\nLatencies in milliseconds; %d samples per latency row; throughput over %s per row; whole run %s.\n",
		*flagN, *flagDur, took.Round(time.Second))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d.Nanoseconds())/1e6) }

func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			if i := strings.Index(l, ":"); i >= 0 {
				return strings.TrimSpace(l[i+1:])
			}
		}
	}
	return runtime.GOARCH
}
