package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/proc"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
)

// The org scenario (issue 29): N daemons, as on N machines, on one
// PostgreSQL database; M agents spread over them, each a receiver that reads
// with receipts (leased until it confirms, as `parley mcp serve` does);
// senders sending at a fixed rate for -org-dur, nine in ten to agents of
// other daemons (one in ten to the sender's daemon's, for the local wake
// beside the cross-daemon one);
// one daemon killed with -9 halfway. An agent holds each message it reads
// for -org-work (leased, as while it works on it) before it confirms it.
// Its agents move to the survivors (as a
// laptop's `mcp serve --server` would to another team server), and a
// survivor gives back what the dead one held once it has missed its beats
// for daemon_timeout. It reports the rate, the cross-daemon send->wake
// latency, the time from the kill to the reclaim, and the messages lost
// (acknowledged to their sender, never received) and repeated (received
// twice: each must be marked redelivered). The floor of the wake is
// PostgreSQL's own: INSERT + pg_notify on one connection until another that
// LISTENs hears it, at the same rate.
var (
	flagOrgDaemons = flag.Int("org-daemons", 3, "org scenario: daemon processes on one PostgreSQL database")
	flagOrgAgents  = flag.Int("org-agents", 90, "org scenario: agents, spread over the daemons")
	flagOrgRate    = flag.Int("org-rate", 150, "org scenario: messages a second, all senders together")
	flagOrgDur     = flag.Duration("org-dur", 60*time.Second, "org scenario: how long the senders send (a daemon is killed halfway)")
	flagOrgTimeout = flag.Duration("org-daemon-timeout", 5*time.Second, "org scenario: daemon_timeout of its daemons")
	flagOrgWork    = flag.Duration("org-work", 200*time.Millisecond, "org scenario: how long an agent holds a message (leased) before it confirms it, as an agent works on it")
	flagPostgres   = flag.String("postgres", "", "org scenario: a PostgreSQL URL whose user may create databases (empty: a private cluster from the installed binaries)")
)

// orgResult is the org scenario's row.
type orgResult struct {
	daemons, agents, rate   int
	dur                     time.Duration
	sent, sendErrors        int
	received                int // distinct messages received
	repeats, unmarked, lost int // received again; of those not marked redelivered; acked and never received
	lateDelivered           int // received but never acknowledged to their sender (the kill cut the answer)
	wake, wakeAfter, local  [3]time.Duration
	ack                     [3]time.Duration // a send's answer (committed), before the kill
	floor                   [3]time.Duration
	killedAt, reclaimAfter  time.Duration
	reclaimed               string  // what the survivor's log says it gave back
	daemonCPU, pgCPU        float64 // µs per received message, all daemons / all PostgreSQL processes
	daemonCores, pgCores    float64 // CPU used over the run, in cores
	idleDaemonCores         float64 // CPU used idle (agents blocked in waits, nothing sent), all daemons, in cores
	idlePGCores             float64 // the same, PostgreSQL
	wakes                   int     // samples of the wake latency, before the kill
	drained                 time.Duration
	fail                    *failResult // the failure phases (orgfail.go), nil without them
}

// orgAgent is one agent: the daemon it reads and sends through now.
type orgAgent struct {
	name string
	at   atomic.Int32 // index of its daemon
}

type orgRun struct {
	ds     []*daemon
	dead   atomic.Int32 // index of the killed daemon, -1 while all live
	agents []*orgAgent

	mu       sync.Mutex
	seqAt    map[int]time.Time // when the send of "org SEQ" began
	local    []time.Duration   // wakes of messages to an agent of the sender's daemon
	acks     []time.Duration   // sends, from the call to its answer (committed), before the kill
	acked    map[string]bool
	ackAt    map[string]time.Time // when each acknowledged send was answered
	ackVia   map[string]int       // and the daemon it went through
	got      map[string]int       // message id: receipts
	lat      []time.Duration
	latAfter []time.Duration
	killed   time.Time
	unmarked int
	repeats  int
}

func orgScenario(ctx context.Context, b *bench) error {
	n, m := *flagOrgDaemons, *flagOrgAgents
	if n < 2 || m < n {
		return fmt.Errorf("-org-daemons must be at least 2 and -org-agents at least as many")
	}
	dsn, pm, cluster, err := b.orgDatabase(ctx)
	if err != nil {
		return err
	}
	r := &orgRun{seqAt: map[int]time.Time{}, acked: map[string]bool{}, ackAt: map[string]time.Time{}, ackVia: map[string]int{}, got: map[string]int{}}
	r.dead.Store(-1)
	conf := fmt.Sprintf("daemon_timeout = %q\n", flagOrgTimeout.String())
	for i := 0; i < n; i++ {
		d, err := b.newHome()
		if err != nil {
			return err
		}
		d.env = []string{"PARLEY_STORE=" + dsn}
		if err := os.WriteFile(filepath.Join(d.home, "config.toml"), []byte(conf), 0o600); err != nil {
			return err
		}
		if err := d.start(); err != nil {
			return err
		}
		r.ds = append(r.ds, d)
	}
	const ws = "org"
	for i := 0; i < m; i++ {
		a := &orgAgent{name: fmt.Sprintf("a%04d", i)}
		a.at.Store(int32(i % n))
		if err := r.ds[i%n].api(ctx, "POST", "/agents", ws, "", map[string]any{"name": a.name, "role": "dev"}, nil); err != nil {
			return err
		}
		r.agents = append(r.agents, a)
	}
	// The failure phases need a cluster of our own to stop and start.
	var f *orgFail
	dur, killAt := *flagOrgDur, *flagOrgDur/2
	settle := 3 * *flagOrgTimeout
	if cluster != nil && (*flagOrgRestart > 0 || *flagOrgOutage > 0) {
		f = &orgFail{cluster: cluster, tasks: map[string]time.Time{}, claims: map[string]int{}, done: map[string]int{}}
		dur = max(dur, killAt+phasesTake(settle))
		for i := range r.ds {
			for k := range 2 {
				if err := r.ds[i].api(ctx, "POST", "/agents", ws, "", map[string]any{"name": fmt.Sprintf("w%d-%d", i, k), "role": "worker"}, nil); err != nil {
					return err
				}
			}
		}
	}
	floor, err := notifyFloor(ctx, dsn, *flagOrgRate, min(*flagOrgDur/4, 10*time.Second))
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	logf("   %d daemons, %d agents, %d msg/s for %s; floor (INSERT+pg_notify -> LISTEN) p50 %s ms", n, m, *flagOrgRate, *flagOrgDur, ms(floor[0]))

	rctx, stopReceivers := context.WithCancel(ctx)
	var recv sync.WaitGroup
	for _, a := range r.agents {
		recv.Go(func() { r.receive(rctx, ws, a) })
	}
	pctx, stopProducer := context.WithCancel(ctx)
	defer stopProducer()
	if f != nil {
		for i, d := range r.ds {
			s := &orgStream{heard: map[string]int{}, first: map[string]time.Time{}}
			f.streams = append(f.streams, s)
			recv.Go(func() { f.watch(rctx, d, ws, s) })
			for k := range 2 {
				recv.Go(func() { f.work(rctx, r, ws, fmt.Sprintf("w%d-%d", i, k), i) })
			}
		}
	}
	// Idle first: every agent blocked in its wait, nothing sent. What the
	// daemons and PostgreSQL spend then (heartbeats, sweeps, the waits'
	// renewals) is the fixed cost the run's per-message figures include.
	daemonsCPU := func(ds []*daemon) (t time.Duration) {
		for _, d := range ds {
			t += cpuTime(d.pid)
		}
		return t
	}
	const idle = 10 * time.Second
	time.Sleep(2 * time.Second) // the receivers' first waits reach their daemons
	i0, ipg0 := daemonsCPU(r.ds), pgCPU(pm)
	time.Sleep(idle)
	res0 := orgResult{idleDaemonCores: (daemonsCPU(r.ds) - i0).Seconds() / idle.Seconds(), idlePGCores: (pgCPU(pm) - ipg0).Seconds() / idle.Seconds()}
	cpu0 := make([]time.Duration, n)
	for i, d := range r.ds {
		cpu0[i] = cpuTime(d.pid)
	}
	pg0 := pgCPU(pm)
	if f != nil {
		f.pm, f.pgFrom = pm, pg0
	}
	start := time.Now()
	if f != nil {
		recv.Go(func() { f.produce(pctx, r, ws) })
		recv.Go(func() { f.phases(pctx, start, killAt+settle, settle) })
	}
	sent, sendErrs := r.send(ctx, ws, *flagOrgRate, dur, killAt, func() {
		// Halfway: daemon 0 dies, as a machine does.
		if err := proc.Kill(r.ds[0].pid); err != nil {
			logf("   kill -9 daemon 0: %v", err)
			return
		}
		r.mu.Lock()
		r.killed = time.Now()
		r.mu.Unlock()
		r.dead.Store(0)
		logf("   killed daemon 0 (pid %d) at %s", r.ds[0].pid, time.Since(start).Round(time.Millisecond))
	})
	sendEnd := time.Now()
	stopProducer()
	// Drain: every acknowledged message must arrive, those held by the dead
	// daemon after the reclaim.
	drainBy := time.Now().Add(3**flagOrgTimeout + 60*time.Second)
	for time.Now().Before(drainBy) {
		r.mu.Lock()
		missing := 0
		for id := range r.acked {
			if r.got[id] == 0 {
				missing++
			}
		}
		r.mu.Unlock()
		if f != nil {
			missing += f.missingTasks()
		}
		if missing == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	drained := time.Since(sendEnd)
	stopReceivers()
	recv.Wait()

	res := res0
	res.daemons, res.agents, res.rate, res.dur, res.sent, res.sendErrors, res.drained, res.floor = n, m, *flagOrgRate, dur, sent, sendErrs, drained, floor
	if f != nil {
		fr := f.result(r)
		res.fail = &fr
	}
	r.mu.Lock()
	for id := range r.acked {
		if r.got[id] == 0 {
			res.lost++
		}
	}
	for id := range r.got {
		if !r.acked[id] {
			res.lateDelivered++
		}
	}
	res.received, res.repeats, res.unmarked = len(r.got), r.repeats, r.unmarked
	res.wakes, res.ack = len(r.lat), percentiles(r.acks)
	res.wake, res.wakeAfter, res.local = percentiles(r.lat), percentiles(r.latAfter), percentiles(r.local)
	res.killedAt = r.killed.Sub(start)
	killed := r.killed
	r.mu.Unlock()
	if at, what, ok := reclaimLog(r.ds[1:]); ok {
		res.reclaimAfter, res.reclaimed = at.Sub(killed), what
	}
	var cpu time.Duration
	for i, d := range r.ds[1:] {
		cpu += cpuTime(d.pid) - cpu0[i+1]
	}
	// The dead daemon's CPU until its death is lost with it: the survivors'
	// carry the whole run's, the dead one's half is left out.
	took := time.Since(start)
	res.daemonCPU = float64(cpu.Microseconds()) / float64(max(res.received, 1))
	res.daemonCores = cpu.Seconds() / took.Seconds()
	if pm > 0 {
		pg := pgCPU(pm) - pg0
		if f != nil {
			pg = f.pgSince()
		}
		res.pgCPU = float64(pg.Microseconds()) / float64(max(res.received, 1))
		res.pgCores = pg.Seconds() / took.Seconds()
	}
	b.org = append(b.org, res)
	logf("   sent %d (%d errors), received %d, lost %d, repeats %d (%d unmarked), reclaim %s after the kill, drained %s",
		res.sent, res.sendErrors, res.received, res.lost, res.repeats, res.unmarked, res.reclaimAfter.Round(time.Millisecond), drained.Round(time.Millisecond))
	return nil
}

// orgDatabase returns a fresh database for the run, on -postgres or on a
// private cluster, and the cluster's postmaster pid (0 when not ours).
func (b *bench) orgDatabase(ctx context.Context) (dsn string, postmaster int, cluster *pgtest.Cluster, err error) {
	admin := *flagPostgres
	if admin == "" {
		c, err := pgtest.NewCluster()
		if err != nil {
			return "", 0, nil, err
		}
		b.cleanups = append(b.cleanups, func() { c.Close() })
		admin, cluster = c.DSN("postgres"), c
		postmaster = postmasterPID(c)
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", 0, nil, err
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("parley_org_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", 0, nil, err
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", 0, nil, err
	}
	u.Path = "/" + name
	return u.String(), postmaster, cluster, nil
}

// postmasterPID is the pid of c's running postmaster, 0 if unknown.
func postmasterPID(c *pgtest.Cluster) int {
	b, err := os.ReadFile(filepath.Join(c.Dir, "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	return pid
}

// receive is one agent's reader: wait with receipts on its daemon, note the
// message, confirm it; when its daemon is gone, move to a live one.
func (r *orgRun) receive(ctx context.Context, ws string, a *orgAgent) {
	backoff := 10 * time.Millisecond
	for ctx.Err() == nil {
		i := int(a.at.Load())
		if int(r.dead.Load()) == i {
			a.at.Store(int32(r.survivor(i)))
			continue
		}
		d := r.ds[i]
		waitFrom := time.Now()
		var res struct {
			Message *struct {
				ID            string `json:"message_id"`
				Content       string `json:"content"`
				Redelivered   bool   `json:"redelivered"`
				DeliveryCount int    `json:"delivery_count"`
			} `json:"message"`
		}
		h, err := d.apiHeader(ctx, "POST", "/inbox/wait", ws, a.name, http.Header{"Parley-Receipts": {"1"}}, map[string]any{"timeout": 30}, &res)
		if err != nil {
			if ctx.Err() == nil && int(r.dead.Load()) != i {
				// A hiccup of a live daemon, or its store away: try again,
				// less often while it lasts.
				time.Sleep(backoff)
				backoff = min(2*backoff, 500*time.Millisecond)
			}
			continue
		}
		backoff = 10 * time.Millisecond
		if res.Message == nil {
			continue
		}
		at := time.Now()
		id := res.Message.ID
		r.mu.Lock()
		r.got[id]++
		if r.got[id] > 1 {
			r.repeats++
			if !res.Message.Redelivered || res.Message.DeliveryCount < 2 {
				r.unmarked++
			}
		} else if seq, err := strconv.Atoi(strings.TrimPrefix(res.Message.Content, "org ")); err != nil {
			// not the run's
		} else if t, ok := r.seqAt[seq]; ok && t.After(waitFrom) {
			// A wake: the agent was blocked in its wait when the send
			// began (a message that waited behind another is queueing,
			// not waking).
			if seq%10 == 0 {
				if r.killed.IsZero() {
					r.local = append(r.local, at.Sub(t))
				}
			} else if r.killed.IsZero() {
				r.lat = append(r.lat, at.Sub(t))
			} else {
				r.latAfter = append(r.latAfter, at.Sub(t))
			}
		}
		r.mu.Unlock()
		// The agent works on it, then confirms, as a bridge confirms once
		// its client has the message: a death in between gives it again,
		// marked, to wherever the agent reads next.
		select {
		case <-time.After(*flagOrgWork):
		case <-ctx.Done():
			return
		}
		d.apiHeader(ctx, "POST", "/inbox/receipts", ws, a.name, http.Header{"Parley-Reader": {h.Get("Parley-Reader")}},
			map[string]any{"message_ids": []string{id}, "received": true}, nil)
	}
}

// survivor is the live daemon an agent of daemon i moves to.
func (r *orgRun) survivor(i int) int {
	for j := 1; j < len(r.ds); j++ {
		if k := (i + j) % len(r.ds); k != int(r.dead.Load()) {
			return k
		}
	}
	return i
}

// send sends rate messages a second for dur, each from a random agent to a
// random agent of another daemon (of the same one for one in ten), through
// the sender's daemon; kill runs at killAt. It returns the sends
// acknowledged and those that failed.
func (r *orgRun) send(ctx context.Context, ws string, rate int, dur, killAt time.Duration, kill func()) (sent, failed int) {
	const tick = 10 * time.Millisecond
	jobs := make(chan int, rate*2)
	var ok, bad atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for seq := range jobs {
				from := r.agents[rand.IntN(len(r.agents))]
				fi := int(from.at.Load())
				if int(r.dead.Load()) == fi {
					fi = r.survivor(fi)
					from.at.Store(int32(fi))
				}
				// One in ten to an agent of the same daemon: the local wake,
				// beside which the cross-daemon one is read.
				local := seq%10 == 0
				var to *orgAgent
				for try := 0; to == nil || to == from || ((int(to.at.Load()) == fi) != local && try < 1000); try++ {
					// (After the kill, with two daemons, every agent is on
					// the survivor: no other daemon's agent is left.)
					to = r.agents[rand.IntN(len(r.agents))]
				}
				r.mu.Lock()
				r.seqAt[seq] = time.Now()
				r.mu.Unlock()
				var res struct {
					ID string `json:"message_id"`
				}
				err := r.ds[fi].api(ctx, "POST", "/messages", ws, from.name, map[string]any{"to": to.name, "content": "org " + strconv.Itoa(seq)}, &res)
				if err != nil {
					bad.Add(1)
					continue
				}
				ok.Add(1)
				r.mu.Lock()
				r.acked[res.ID] = true
				r.ackAt[res.ID] = time.Now()
				r.ackVia[res.ID] = fi
				if r.killed.IsZero() {
					r.acks = append(r.acks, time.Since(r.seqAt[seq]))
				}
				r.mu.Unlock()
			}
		})
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	start := time.Now()
	seq, killed := 0, false
	for now := range t.C {
		el := now.Sub(start)
		if el >= dur {
			break
		}
		if !killed && el >= killAt {
			killed = true
			go kill()
		}
		for want := int(el.Seconds() * float64(rate)); seq < want; seq++ {
			select {
			case jobs <- seq:
			default: // the senders are behind: the rate is what they keep
			}
		}
	}
	close(jobs)
	wg.Wait()
	return int(ok.Load()), int(bad.Load())
}

// notifyFloor measures PostgreSQL's own cross-connection wake at rate for
// dur: one connection commits INSERT + pg_notify, another LISTENs.
func notifyFloor(ctx context.Context, dsn string, rate int, dur time.Duration) ([3]time.Duration, error) {
	lc, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return [3]time.Duration{}, err
	}
	defer lc.Close(ctx)
	sc, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return [3]time.Duration{}, err
	}
	defer sc.Close(ctx)
	if _, err := sc.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_floor (id bigserial PRIMARY KEY, body text)`); err != nil {
		return [3]time.Duration{}, err
	}
	if _, err := lc.Exec(ctx, "LISTEN bench_floor"); err != nil {
		return [3]time.Duration{}, err
	}
	n := max(int(dur.Seconds()*float64(rate)), 50)
	every := time.Second / time.Duration(max(rate, 1))
	sentAt := make([]time.Time, n)
	var lat []time.Duration
	done := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			nt, err := lc.WaitForNotification(ctx)
			if err != nil {
				done <- err
				return
			}
			k, _ := strconv.Atoi(nt.Payload)
			lat = append(lat, time.Since(sentAt[k]))
		}
		done <- nil
	}()
	for i := 0; i < n; i++ {
		sentAt[i] = time.Now()
		_, err := sc.Exec(ctx, `WITH i AS (INSERT INTO bench_floor (body) VALUES ($1) RETURNING id) SELECT pg_notify('bench_floor', $2) FROM i`,
			"floor message", strconv.Itoa(i))
		if err != nil {
			return [3]time.Duration{}, err
		}
		time.Sleep(every)
	}
	if err := <-done; err != nil {
		return [3]time.Duration{}, err
	}
	return percentiles(lat), nil
}

// reclaimLog finds, in the survivors' logs, when one reclaimed the dead
// daemon and what it gave back.
func reclaimLog(ds []*daemon) (time.Time, string, bool) {
	for _, d := range ds {
		for _, l := range reclaimLines(d) {
			var what []string
			for _, k := range []string{"deliveries=", "reservations=", "agents="} {
				if i := strings.Index(l.text, k); i >= 0 {
					v, _, _ := strings.Cut(l.text[i:], " ")
					what = append(what, v)
				}
			}
			return l.at, strings.Join(what, " "), true
		}
	}
	return time.Time{}, "", false
}

type logLine struct {
	at   time.Time
	text string
}

// reclaimLines are d's log lines that say it took a daemon for dead.
func reclaimLines(d *daemon) []logLine {
	f, err := os.Open(filepath.Join(d.home, "daemon.log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.Contains(l, "a daemon on the store is dead") {
			continue
		}
		ts, _, _ := strings.Cut(strings.TrimPrefix(l, "time="), " ")
		if at, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			out = append(out, logLine{at, l})
		}
	}
	return out
}

// pgCPU is the CPU time of the postmaster pm and its children (the backends
// that serve the daemons), 0 without one.
func pgCPU(pm int) time.Duration {
	if pm <= 0 {
		return 0
	}
	total := cpuTime(pm)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 2 && f[1] == strconv.Itoa(pm) {
			total += cpuTime(pid)
		}
	}
	return total
}

// apiHeader is api with request headers, returning the response's.
func (d *daemon) apiHeader(ctx context.Context, method, path, ws, agent string, h http.Header, in, out any) (http.Header, error) {
	var body bytes.Buffer
	if in != nil {
		json.NewEncoder(&body).Encode(in)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://parley/api/v1"+path, &body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Parley-Workspace", ws)
	if agent != "" {
		req.Header.Set("Parley-Agent", agent)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e, _ := io.ReadAll(resp.Body)
		return nil, errors.New(resp.Status + ": " + strings.TrimSpace(string(e)))
	}
	if out == nil {
		return resp.Header, nil
	}
	return resp.Header, json.NewDecoder(resp.Body).Decode(out)
}

// printOrg writes the org scenario's table.
func printOrg(w io.Writer, rs []orgResult) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Org scenario (issue 29): daemons on one PostgreSQL, agents spread over them, sends at a fixed rate (9 in 10 to agents of other daemons), daemon 0 killed with -9 halfway:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| daemons x agents | rate asked | sent (errors) | received | msg/s | cross-daemon wake p50 / p99 | same-daemon wake p50 / p99 | floor p50 / p99 | after the kill p50 / p99 | reclaim after the kill | lost | repeats (unmarked) | daemons' CPU / msg (cores) | PostgreSQL CPU / msg (cores) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		rec := "**never**"
		if r.reclaimAfter > 0 {
			rec = fmt.Sprintf("%.1f s (%s)", r.reclaimAfter.Seconds(), r.reclaimed)
		}
		fmt.Fprintf(w, "| %d x %d | %d/s | %d (%d) | %d | %s | %s / %s ms | %s / %s ms | %s / %s ms | %s / %s ms | %s | %d | %d (%d) | %.0f µs (%.2f) | %.0f µs (%.2f) |\n",
			r.daemons, r.agents, r.rate, r.sent, r.sendErrors, r.received, num(float64(r.received)/r.dur.Seconds()),
			ms(r.wake[0]), ms(r.wake[1]), ms(r.local[0]), ms(r.local[1]), ms(r.floor[0]), ms(r.floor[1]), ms(r.wakeAfter[0]), ms(r.wakeAfter[1]),
			rec, r.lost, r.repeats, r.unmarked, r.daemonCPU, r.daemonCores, r.pgCPU, r.pgCores)
	}
	fmt.Fprintln(w)
	for _, r := range rs {
		fmt.Fprintf(w, "%d x %d: sent for %s, killed at %s, daemon_timeout %s, each message held %s before its receipt, drained %s after the last send; %d wake samples before the kill (messages whose recipient was blocked in its wait); a send answered (committed) in %s / %s ms p50 / p99 before the kill; idle beforehand (every agent blocked in a wait), the daemons used %.3f cores and PostgreSQL %.3f; %d received that were never acknowledged to their sender (the kill cut the answer).\n",
			r.daemons, r.agents, r.dur, r.killedAt.Round(time.Millisecond), *flagOrgTimeout, *flagOrgWork, r.drained.Round(time.Millisecond), r.wakes, ms(r.ack[0]), ms(r.ack[1]), r.idleDaemonCores, r.idlePGCores, r.lateDelivered)
	}
}
