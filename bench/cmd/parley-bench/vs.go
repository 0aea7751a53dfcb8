package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	flagVs    = flag.String("vs", "", "wake-vs scenario: another parley binary (an older build) to interleave with -parley")
	flagVsEnv = flag.String("vs-env", "", "wake-vs scenario: KEY=VALUE in the environment of the -vs build's daemon and `mcp serve` only (with -vs naming the same binary: one setting on and off)")
)

// vsBlock is how many cycles of each build make one block: the blocks'
// ratios show how much the comparison moves within one run.
const vsBlock = 100

// A vsRow is one row of the wake-vs scenario: both builds' samples,
// taken in alternating cycles.
type vsRow struct {
	name        string
	this, other []time.Duration
}

// add records a sample of build i (0: this build, 1: -vs).
func (r *vsRow) add(i int, d time.Duration) {
	if i == 0 {
		r.this = append(r.this, d)
	} else {
		r.other = append(r.other, d)
	}
}

// sendWakeVsScenario measures send->wake, and one call through `parley mcp
// serve`, on two builds at once: both daemons, and both builds' `parley mcp
// serve`, run side by side, and the cycles alternate between them, the same
// client driving both. Whatever else the machine does (another build, a
// slower minute) falls on both builds alike; two runs of send-wake one after
// the other differ by far more than the builds do (docs/performance.md,
// "The gate, sixth time").
func sendWakeVsScenario(ctx context.Context, b *bench) error {
	if *flagVs == "" {
		return fmt.Errorf("-vs PATH names the other parley binary")
	}
	other, err := filepath.Abs(*flagVs) // its commands run in their state directory
	if err != nil {
		return fmt.Errorf("-vs: %w", err)
	}
	if _, err := os.Stat(other); err != nil {
		return fmt.Errorf("-vs: %w", err)
	}
	if *flagVsEnv != "" && !strings.Contains(*flagVsEnv, "=") {
		return fmt.Errorf("-vs-env %q: want KEY=VALUE", *flagVsEnv)
	}
	var ds [2]*daemon
	for i, bin := range []string{b.bin, other} {
		d, err := b.newHome()
		if err != nil {
			return err
		}
		d.bin = bin
		if i == 1 && *flagVsEnv != "" {
			d.env = append(d.env, *flagVsEnv)
		}
		if err := d.start(); err != nil {
			return err
		}
		ds[i] = d
	}
	for _, p := range vsPaths {
		if err := b.vsWake(ctx, ds, p); err != nil {
			return err
		}
	}
	for _, tool := range []string{"whoami", "send_message"} {
		for _, p := range []vsPath{vsPaths[0], vsPaths[2]} {
			if err := b.vsCall(ctx, ds, p, tool); err != nil {
				return err
			}
		}
	}
	return nil
}

// vsWake adds the row of send->wake on path p.
func (b *bench) vsWake(ctx context.Context, ds [2]*daemon, p vsPath) error {
	ws := "vs" + strconv.Itoa(len(b.vs))
	senders, err := p.openBoth(ctx, ds, ws, "a")
	if err != nil || senders == nil {
		return err
	}
	defer closeAll(senders)
	waiters, err := p.openBoth(ctx, ds, ws, "b")
	if err != nil || waiters == nil {
		return err
	}
	defer closeAll(waiters)
	row := vsRow{name: "send->wake, " + p.name}
	err = interleave(&row, func(i, _ int) (time.Duration, error) {
		lat, err := sendWake(ctx, senders[i], waiters[i], 1)
		if err != nil {
			return 0, err
		}
		return lat[0], nil
	})
	if err != nil {
		return err
	}
	b.addVs(row)
	return nil
}

// vsCall adds the row of one call of tool on path p, the way a client
// calls a tool.
func (b *bench) vsCall(ctx context.Context, ds [2]*daemon, p vsPath, tool string) error {
	ss, err := p.openBoth(ctx, ds, "vscalls", "c")
	if err != nil || ss == nil {
		return err
	}
	defer closeAll(ss)
	row := vsRow{name: tool + ", one call, " + p.name}
	err = interleave(&row, func(i, n int) (time.Duration, error) {
		var args map[string]any
		if tool == "send_message" {
			args = map[string]any{"to": "b", "content": "call " + strconv.Itoa(n)}
		}
		start := time.Now()
		_, err := callOK(ctx, ss[i], tool, args)
		return time.Since(start), err
	})
	if err != nil {
		return err
	}
	b.addVs(row)
	return nil
}

// vsWarm is how many samples of each build come first and are not kept.
const vsWarm = 50

// interleave takes -n samples of each build into row with measure (i: 0 for
// this build, 1 for -vs; n: the sample's number, negative while warming
// up), alternating which build goes first, so that neither always follows
// the other.
func interleave(row *vsRow, measure func(i, n int) (time.Duration, error)) error {
	for n := -vsWarm; n < *flagN; n++ {
		for k := range 2 {
			i := (n + vsWarm + k) % 2
			d, err := measure(i, n)
			if err != nil {
				return fmt.Errorf("%s: %w", row.name, err)
			}
			if n >= 0 {
				row.add(i, d)
			}
		}
	}
	return nil
}

// A vsPath is one way a client reaches a daemon.
type vsPath struct {
	name string
	open func(d *daemon, ctx context.Context, ws, agent string) (*mcp.ClientSession, error)
	// optional: a daemon may not offer it (an older one's stream speaks
	// another protocol); its rows are left out then.
	optional bool
}

var vsPaths = []vsPath{
	{name: "stdio (2x parley mcp serve)", open: (*daemon).stdioSession},
	{name: "Streamable HTTP on the socket", open: (*daemon).httpSession},
	{name: "stream on the socket (no bridge process)", open: (*daemon).streamSession, optional: true},
}

func closeAll(ss []*mcp.ClientSession) {
	for _, s := range ss {
		s.Close()
	}
}

// openBoth opens a session of agent on each daemon. It returns nil, and no error, when an optional path is not
// offered by one of them.
func (p vsPath) openBoth(ctx context.Context, ds [2]*daemon, ws, agent string) ([]*mcp.ClientSession, error) {
	var ss []*mcp.ClientSession
	for _, d := range ds {
		s, err := p.open(d, ctx, ws, agent)
		if err != nil {
			closeAll(ss)
			if p.optional {
				logf("   %s: left out: %s: %v", p.name, d.bin, err)
				return nil, nil
			}
			return nil, err
		}
		ss = append(ss, s)
	}
	return ss, nil
}

func (b *bench) addVs(row vsRow) {
	b.vs = append(b.vs, row)
	r := row.ratio()
	logf("   %s: p50 %s ms against %s ms (%.2f)", row.name, ms(r.this), ms(r.other), r.ratio)
}

// vsRatio sums up a vsRow.
type vsRatio struct {
	this, other time.Duration // p50s
	ratio       float64       // this over other
	blockMedian float64       // the median of the blocks' p50 ratios
	worse, of   int           // blocks where this build's p50 is higher, of all blocks
}

func (r vsRow) ratio() vsRatio {
	p := func(ds []time.Duration) time.Duration { return percentiles(slices.Clone(ds))[0] }
	out := vsRatio{this: p(r.this), other: p(r.other)}
	out.ratio = float64(out.this) / float64(max(out.other, 1))
	var blocks []float64
	for i := 0; i+vsBlock <= len(r.this); i += vsBlock {
		a, o := p(r.this[i:i+vsBlock]), p(r.other[i:i+vsBlock])
		blocks = append(blocks, float64(a)/float64(max(o, 1)))
		if a > o {
			out.worse++
		}
	}
	out.of = len(blocks)
	if len(blocks) > 0 {
		slices.Sort(blocks)
		out.blockMedian = blocks[len(blocks)/2]
	}
	return out
}

func (b *bench) printVs(w *os.File) {
	if len(b.vs) == 0 {
		return
	}
	vs := *flagVs
	if *flagVsEnv != "" {
		vs += " with " + *flagVsEnv
	}
	fmt.Fprintf(w, "\nInterleaved with -vs %s (alternating cycles; ratio is this build over -vs, above 1 is slower):\n\n", vs)
	fmt.Fprintln(w, "| scenario | this p50 | -vs p50 | ratio | median of block ratios | blocks slower |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, row := range b.vs {
		r := row.ratio()
		fmt.Fprintf(w, "| %s | %s | %s | %.3f | %.3f | %d of %d |\n", row.name, ms(r.this), ms(r.other), r.ratio, r.blockMedian, r.worse, r.of)
	}
}
