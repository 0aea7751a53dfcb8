package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"

	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/store/sqlite"
)

type scenario struct {
	name string
	run  func(ctx context.Context, b *bench) error
	// explicit: run only when -run names it (the org scenario needs
	// PostgreSQL and minutes).
	explicit bool
}

// The order matters only for reading the log: each scenario starts its own daemon.
var scenarios = []scenario{
	{name: "send-wake", run: sendWakeScenario},
	{name: "bridge", run: bridgeScenario},
	{name: "throughput", run: throughputScenario},
	{name: "broadcast", run: broadcastScenario},
	{name: "check", run: checkScenario},
	{name: "cold-start", run: coldStartScenario},
	{name: "rss", run: rssScenario},
	{name: "org", run: orgScenario, explicit: true},
	{name: "wake-vs", run: sendWakeVsScenario, explicit: true},
}

const (
	wakeTarget = "p50 <= 0.5 ms and <= 3x floor"
	// Issue 38's: against Redis with appendfsync always, the durable floor.
	stdioDurableTarget  = "p50 <= 2x durable floor"
	socketDurableTarget = "p50 <= 1.5x durable floor"
	// The row of the bare go-sdk server with one fsync a send: what the
	// SDK's transport and the fsync cost without Parley.
	bareWakeRow = "floor: send->wake, bare go-sdk server + one fsync a send, Streamable HTTP on the socket"
)

// sendWakeScenario: agent B is blocked in wait_for_message; agent A sends; the
// clock runs from A's call until B's wait returns. Once through `parley mcp
// serve` (stdio, the way Claude Code and friends connect), once straight on the
// socket with Streamable HTTP. The floors are Redis, B blocked in BLPOP and A
// LPUSHing: in memory, and durable (-redis-durable: appendfsync always, so
// LPUSH answers after its fsync as a send answers after its commit). Parley
// and the floors take turns in blocks of samples, so that what else the
// machine does falls on all of them alike.
func sendWakeScenario(ctx context.Context, b *bench) error {
	d, err := b.newHome()
	if err != nil {
		return err
	}
	if err := d.start(); err != nil {
		return err
	}
	floors, err := b.wakeFloors()
	if err != nil {
		return err
	}
	defer floors.Close()
	// The transport's own floor: the bare go-sdk server, each send
	// journalled with an fsync before the wait gets it (bare.go); its
	// samples take turns with the socket row's and the Redis floors'.
	bare, err := b.startBareServer(true)
	if err != nil {
		return err
	}
	pair := func(open func(ctx context.Context, ws, agent string) (*mcp.ClientSession, error), ws string) (a, w *mcp.ClientSession, err error) {
		if a, err = open(ctx, ws, "a"); err != nil {
			return nil, nil, err
		}
		if w, err = open(ctx, ws, "b"); err != nil {
			a.Close()
			return nil, nil, err
		}
		if _, err := sendWake(ctx, a, w, 50); err != nil { // warm up
			a.Close()
			w.Close()
			return nil, nil, err
		}
		return a, w, nil
	}
	for _, tr := range []struct {
		name, durableTarget string
		durableShare        float64
		open                func(ctx context.Context, ws, agent string) (*mcp.ClientSession, error)
		bare                bool // the bare server's samples take turns with these
	}{
		{"send->wake, stdio (2x parley mcp serve)", stdioDurableTarget, 2, d.stdioSession, false},
		{"send->wake, Streamable HTTP on the socket", socketDurableTarget, 1.5, d.httpSession, true},
	} {
		ws := "wake" + strconv.Itoa(len(b.lat))
		a, w, err := pair(tr.open, ws)
		if err != nil {
			return err
		}
		var ba, bw *mcp.ClientSession
		var bareLat []time.Duration
		if tr.bare {
			if ba, bw, err = pair(bare.httpSession, ws); err != nil {
				a.Close()
				w.Close()
				return err
			}
		}
		row, err := floors.interleave(*flagN, func(n int) ([]time.Duration, error) {
			lat, err := sendWake(ctx, a, w, n)
			if err != nil || ba == nil {
				return lat, err
			}
			bl, err := sendWake(ctx, ba, bw, n)
			bareLat = append(bareLat, bl...)
			return lat, err
		})
		for _, s := range []*mcp.ClientSession{a, w, ba, bw} {
			if s != nil {
				s.Close()
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tr.name, err)
		}
		row.name = tr.name
		p, f := percentiles(row.parley), percentiles(row.floor)
		if len(bareLat) > 0 {
			bp := percentiles(bareLat)
			b.targets = append(b.targets, target{name: tr.name + ", p50 against the bare go-sdk server + one fsync a send",
				parley: ms(p[0]) + " ms", floor: ms(bp[0]) + " ms",
				floorIs: fmt.Sprintf("the transport and the fsync without Parley, in the same blocks (%.2fx)", float64(p[0])/float64(max(bp[0], 1))),
				goal:    "-", met: "-"})
		}
		met := p[0] <= 500*time.Microsecond
		fl := "-"
		if len(row.floor) > 0 {
			met = met && p[0] <= 3*f[0]
			fl = ms(f[0]) + " ms"
		}
		row.target, row.met = wakeTarget, yes(met)
		b.lat = append(b.lat, row)
		b.targets = append(b.targets, target{name: tr.name + ", p50", parley: ms(p[0]) + " ms", floor: fl,
			floorIs: "redis BLPOP woken by LPUSH", goal: wakeTarget, met: yes(met)})
		if len(row.durable) > 0 {
			df := percentiles(row.durable)
			ratio := float64(p[0]) / float64(max(df[0], 1))
			b.targets = append(b.targets, target{name: tr.name + ", p50 against the durable floor", parley: ms(p[0]) + " ms",
				floor: ms(df[0]) + " ms", floorIs: fmt.Sprintf("redis appendfsync always, BLPOP woken by LPUSH (%.2fx)", ratio),
				goal: tr.durableTarget, met: yes(ratio <= tr.durableShare)})
		}
		logf("   %s: p50 %s ms", tr.name, ms(p[0]))
		if len(bareLat) > 0 {
			// A floor, with no target of its own, beside the same Redis
			// samples.
			b.lat = append(b.lat, latRow{name: bareWakeRow, parley: bareLat, floor: row.floor, durable: row.durable})
			logf("   %s: p50 %s ms", bareWakeRow, ms(percentiles(bareLat)[0]))
		}
	}
	return nil
}

func sendWake(ctx context.Context, a, w *mcp.ClientSession, n int) ([]time.Duration, error) {
	type woke struct {
		at  time.Time
		err error
	}
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		got := make(chan woke, 1)
		go func() {
			res, err := callOK(ctx, w, "wait_for_message", map[string]any{"timeout": 30})
			at := time.Now()
			if err == nil {
				if st, _ := res.StructuredContent.(map[string]any)["status"].(string); st != "message_received" {
					err = fmt.Errorf("wait_for_message: status %q, want message_received", st)
				}
			}
			got <- woke{at, err}
		}()
		// Let B's wait reach the daemon and block: the scenario is the wake-up
		// of a blocked waiter (a wait that comes late still gets the message).
		time.Sleep(time.Millisecond)
		start := time.Now()
		if _, err := callOK(ctx, a, "send_message", map[string]any{"to": "b", "content": "ping " + strconv.Itoa(i)}); err != nil {
			return nil, err
		}
		r := <-got
		if r.err != nil {
			return nil, r.err
		}
		lat = append(lat, r.at.Sub(start))
	}
	return lat, nil
}

// wakeFloors are the Redis floors of a send->wake, each warmed up: in
// memory (-redis) and durable (-redis-durable); either may be absent.
type wakeFloors struct{ mem, durable *redisWaker }

func (b *bench) wakeFloors() (*wakeFloors, error) {
	var f wakeFloors
	var err error
	if b.redis != "" {
		if f.mem, err = newRedisWaker(b.redis); err != nil {
			return nil, err
		}
	}
	if *flagRedisDurable != "" {
		if f.durable, err = newRedisWaker(*flagRedisDurable); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &f, nil
}

func (f *wakeFloors) Close() {
	for _, w := range []*redisWaker{f.mem, f.durable} {
		if w != nil {
			w.Close()
		}
	}
}

// interleave takes n samples of parley and of each floor, in turns of
// blocks of 100.
func (f *wakeFloors) interleave(n int, parley func(n int) ([]time.Duration, error)) (latRow, error) {
	var row latRow
	for done := 0; done < n; {
		k := min(100, n-done)
		lat, err := parley(k)
		if err != nil {
			return row, err
		}
		row.parley = append(row.parley, lat...)
		for _, fl := range []struct {
			w   *redisWaker
			out *[]time.Duration
		}{{f.mem, &row.floor}, {f.durable, &row.durable}} {
			if fl.w == nil {
				continue
			}
			lat, err := fl.w.wake(k)
			if err != nil {
				return row, err
			}
			*fl.out = append(*fl.out, lat...)
		}
		done += k
	}
	return row, nil
}

// redisWaker is the floor of a send->wake: w blocked in BLPOP, a LPUSHing.
type redisWaker struct{ a, w *respConn }

func newRedisWaker(addr string) (*redisWaker, error) {
	a, err := dialRedis(addr)
	if err != nil {
		return nil, err
	}
	w, err := dialRedis(addr)
	if err != nil {
		a.Close()
		return nil, err
	}
	r := &redisWaker{a, w}
	if _, err := a.do("DEL", "wake"); err != nil {
		r.Close()
		return nil, err
	}
	if _, err := r.wake(50); err != nil { // warm up
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *redisWaker) Close() { r.a.Close(); r.w.Close() }

func (r *redisWaker) wake(n int) ([]time.Duration, error) {
	type woke struct {
		at  time.Time
		err error
	}
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		got := make(chan woke, 1)
		go func() {
			_, err := r.w.do("BLPOP", "wake", "30")
			got <- woke{time.Now(), err}
		}()
		time.Sleep(time.Millisecond)
		start := time.Now()
		if _, err := r.a.do("LPUSH", "wake", "ping "+strconv.Itoa(i)); err != nil {
			return nil, err
		}
		res := <-got
		if res.err != nil {
			return nil, res.err
		}
		lat = append(lat, res.at.Sub(start))
	}
	return lat, nil
}

// throughputScenario: c senders, each its own MCP session on the socket, send
// to one recipient as fast as their acknowledgements come back; every
// acknowledgement means the message is committed (synchronous=FULL). The same
// through the JSON API. The floor is the bare server (bare.go): the same
// transports and clients answering the same calls without storing anything,
// so it bounds what the go-sdk, net/http and the clients on these cores allow.
// Redis LPUSH from c connections (not durable) is noted beside it.
func throughputScenario(ctx context.Context, b *bench) error {
	d, err := b.newHome()
	if err != nil {
		return err
	}
	if err := d.start(); err != nil {
		return err
	}
	bare, err := b.startBare()
	if err != nil {
		return err
	}
	for _, f := range strings.Split(*flagSend, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			return fmt.Errorf("-senders: %q is not a sender count", f)
		}
		ws := "tput" + strconv.Itoa(c)
		redis := "-"
		if b.redis != "" {
			r, err := redisThroughput(b.redis, c, *flagDur)
			if err != nil {
				return err
			}
			redis = num(r) + "/s"
		}
		mcpRate := func(d *daemon) (float64, float64, error) {
			sessions := make([]*mcp.ClientSession, c)
			for i := range sessions {
				if sessions[i], err = d.httpSession(ctx, ws, "s"+strconv.Itoa(i)); err != nil {
					return 0, 0, err
				}
			}
			defer func() {
				for _, s := range sessions {
					s.Close()
				}
			}()
			cpu0 := cpuTime(d.pid)
			rate, err := measureRate(c, *flagDur, func(i, j int) error {
				_, err := callOK(ctx, sessions[i], "send_message", map[string]any{"to": "sink", "content": fmt.Sprintf("m %d %d", i, j)})
				return err
			})
			return rate, perMsg(cpuTime(d.pid)-cpu0, rate), err
		}
		apiRate := func(d *daemon) (float64, float64, error) {
			cpu0 := cpuTime(d.pid)
			rate, err := measureRate(c, *flagDur, func(i, j int) error {
				return d.api(ctx, "POST", "/messages", ws, "j"+strconv.Itoa(i), map[string]any{"to": "sink", "content": fmt.Sprintf("m %d %d", i, j)}, nil)
			})
			return rate, perMsg(cpuTime(d.pid)-cpu0, rate), err
		}
		for _, door := range []struct {
			name, floorIs, target string
			goal                  float64
			measure               func(*daemon) (float64, float64, error)
		}{
			{"MCP send_message on the socket", "bare go-sdk server", ">= 20,000 msg/s", 20000, mcpRate},
			{"JSON API POST /api/v1/messages", "bare net/http handler", ">= 40,000 msg/s", 40000, apiRate},
		} {
			floor, floorCPU, err := door.measure(bare)
			if err != nil {
				return fmt.Errorf("bare server, %s: %w", door.name, err)
			}
			rate, cpu, err := door.measure(d)
			if err != nil {
				return err
			}
			r := valRow{name: fmt.Sprintf("send throughput, %d sender(s), %s", c, door.name), unit: "msg/s", parley: rate, floor: floor,
				floorIs: door.floorIs,
				note:    fmt.Sprintf("durable (acknowledged after commit); daemon CPU %s µs/msg (floor %s); redis LPUSH %s", num(cpu), num(floorCPU), redis)}
			if c == 64 {
				r.target, r.met, r.listed = door.target, yes(rate >= door.goal), true
				b.targets = append(b.targets, target{name: "durable throughput, 64 senders, " + door.name, parley: num(rate) + " msg/s",
					floor: num(floor) + " msg/s", floorIs: door.floorIs + ", storing nothing", goal: door.target, met: r.met})
				if door.goal == 20000 {
					b.targets = append(b.targets, target{name: "daemon CPU per MCP send, 64 senders", parley: num(cpu) + " µs",
						floor: num(floorCPU) + " µs", floorIs: "bare go-sdk server, CPU per call", goal: "<= 60 µs", met: yes(cpu <= 60)})
				}
			}
			b.val = append(b.val, r)
			logf("   %s, %d senders: %.0f msg/s, %s µs/msg (floor %.0f msg/s, %s µs/msg)", door.name, c, rate, num(cpu), floor, num(floorCPU))
		}
	}
	return nil
}

// perMsg is CPU time spent over *flagDur at rate messages/s in µs per message.
func perMsg(cpu time.Duration, rate float64) float64 {
	n := rate * flagDur.Seconds()
	if n == 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / n
}

// measureRate runs c workers calling op(worker, i) for dur and returns ops/s.
func measureRate(c int, dur time.Duration, op func(worker, i int) error) (float64, error) {
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	stop := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < c; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; time.Now().Before(stop); j++ {
				if err := op(i, j); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds(), firstErr
}

func redisThroughput(addr string, c int, dur time.Duration) (float64, error) {
	conns := make([]*respConn, c)
	for i := range conns {
		var err error
		if conns[i], err = dialRedis(addr); err != nil {
			return 0, err
		}
		defer conns[i].Close()
	}
	return measureRate(c, dur, func(i, j int) error {
		_, err := conns[i].do("LPUSH", "tput", fmt.Sprintf("m %d %d", i, j))
		return err
	})
}

// broadcastScenario: one broadcast_message to every other agent of a workspace
// of *flagAgents agents, acknowledged after commit. The floor is one pipeline of
// as many LPUSHes, one per list.
func broadcastScenario(ctx context.Context, b *bench) error {
	d, err := b.newHome()
	if err != nil {
		return err
	}
	if err := d.start(); err != nil {
		return err
	}
	const ws = "bcast"
	for i := 0; i < *flagAgents; i++ {
		if err := d.api(ctx, "POST", "/agents", ws, "", map[string]any{"name": "r" + strconv.Itoa(i), "role": "worker"}, nil); err != nil {
			return err
		}
	}
	s, err := d.httpSession(ctx, ws, "caster")
	if err != nil {
		return err
	}
	defer s.Close()
	n := max(*flagN/20, 20)
	var lat []time.Duration
	for i := 0; i < n+5; i++ {
		start := time.Now()
		res, err := callOK(ctx, s, "broadcast_message", map[string]any{"content": "all hands " + strconv.Itoa(i)})
		if err != nil {
			return err
		}
		if i < 5 {
			continue
		}
		lat = append(lat, time.Since(start))
		if got := recipientsOf(res); got != *flagAgents {
			return fmt.Errorf("broadcast reached %d agents, want %d", got, *flagAgents)
		}
	}
	var floor []time.Duration
	if b.redis != "" {
		r, err := dialRedis(b.redis)
		if err != nil {
			return err
		}
		defer r.Close()
		for i := 0; i < n+5; i++ {
			start := time.Now()
			for k := 0; k < *flagAgents; k++ {
				r.write("LPUSH", "inbox:"+strconv.Itoa(k), "all hands "+strconv.Itoa(i))
			}
			if err := r.w.Flush(); err != nil {
				return err
			}
			for k := 0; k < *flagAgents; k++ {
				if _, err := r.read(); err != nil {
					return err
				}
			}
			if i >= 5 {
				floor = append(floor, time.Since(start))
			}
		}
	}
	b.lat = append(b.lat, latRow{name: fmt.Sprintf("broadcast_message to %d agents", *flagAgents), parley: lat, floor: floor})
	p := percentiles(lat)
	b.val = append(b.val, valRow{name: fmt.Sprintf("broadcast deliveries (%d per message)", *flagAgents), unit: "deliveries/s",
		parley: float64(*flagAgents) / p[0].Seconds(), note: "at the p50 latency"})
	logf("   broadcast p50 %s ms", ms(p[0]))
	return nil
}

func recipientsOf(res *mcp.CallToolResult) int {
	b, _ := json.Marshal(res.StructuredContent)
	var v struct {
		TotalSent int `json:"total_sent"`
	}
	json.Unmarshal(b, &v)
	return v.TotalSent
}

// checkScenario: check_messages of an agent whose workspace stores
// *flagSeedMessages messages (written straight into parley.db before the daemon
// starts). Each sample: a message arrives (not timed), then check_messages.
// The floor: LPUSH (not timed), then LPOP with a count.
func checkScenario(ctx context.Context, b *bench) error {
	d, err := b.newHome()
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := seed(ctx, filepath.Join(d.home, "parley.db"), *flagSeed); err != nil {
		return fmt.Errorf("seed %d messages: %w", *flagSeed, err)
	}
	logf("   seeded %d messages in %s", *flagSeed, time.Since(t0).Round(time.Millisecond))
	if err := d.start(); err != nil {
		return err
	}
	s, err := d.httpSession(ctx, "bench", "reader")
	if err != nil {
		return err
	}
	defer s.Close()
	var lat []time.Duration
	for i := 0; i < *flagN+50; i++ {
		if err := d.api(ctx, "POST", "/messages", "bench", "feeder", map[string]any{"to": "reader", "content": "news " + strconv.Itoa(i)}, nil); err != nil {
			return err
		}
		start := time.Now()
		res, err := callOK(ctx, s, "check_messages", nil)
		if err != nil {
			return err
		}
		el := time.Since(start)
		var v struct {
			Messages []json.RawMessage `json:"messages"`
		}
		bs, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(bs, &v)
		if len(v.Messages) != 1 {
			return fmt.Errorf("check_messages returned %d messages, want 1 (round %d): %s", len(v.Messages), i, bs)
		}
		if i >= 50 {
			lat = append(lat, el)
		}
	}
	var floor []time.Duration
	if b.redis != "" {
		r, err := dialRedis(b.redis)
		if err != nil {
			return err
		}
		defer r.Close()
		for i := 0; i < *flagN+50; i++ {
			if _, err := r.do("LPUSH", "check", "news "+strconv.Itoa(i)); err != nil {
				return err
			}
			start := time.Now()
			if _, err := r.do("LPOP", "check", "50"); err != nil {
				return err
			}
			if i >= 50 {
				floor = append(floor, time.Since(start))
			}
		}
	}
	p := percentiles(lat)
	b.lat = append(b.lat, latRow{name: fmt.Sprintf("check_messages with %s messages stored", human(*flagSeed)), parley: lat, floor: floor,
		target: "p99 <= 5 ms", met: yes(p[1] <= 5*time.Millisecond)})
	logf("   check p50 %s p99 %s ms", ms(p[0]), ms(p[1]))
	return nil
}

func human(n int) string {
	if n >= 1_000_000 && n%1_000_000 == 0 {
		return strconv.Itoa(n/1_000_000) + "M"
	}
	return strconv.Itoa(n)
}

// seed writes n messages into a new Parley database at path: the store makes
// the schema, then one INSERT ... SELECT per table fills it. One message in ten
// went to "reader", the rest to 999 other agents; every one is already read, so
// the reader's inbox is empty and 1M rows of history sit beside it.
func seed(ctx context.Context, path string, n int) error {
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		return err
	}
	st.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)&_pragma=temp_store(MEMORY)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	now := time.Now().UnixNano()
	stmts := []string{
		`INSERT OR IGNORE INTO workspaces (name) VALUES ('bench')`,
		fmt.Sprintf(`WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x+1 FROM c WHERE x < 998)
			INSERT INTO agents (workspace, name, role, module, status, created_at, last_seen)
			SELECT 'bench', 'a' || x, 'worker', '', 'ready', %d, %d FROM c`, now, now),
		fmt.Sprintf(`INSERT INTO agents (workspace, name, role, module, status, created_at, last_seen)
			VALUES ('bench', 'reader', 'worker', '', 'ready', %d, %d), ('bench', 'feeder', 'worker', '', 'ready', %d, %d)`, now, now, now, now),
		fmt.Sprintf(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < %d)
			INSERT INTO messages (seq, id, workspace, sender, to_addr, content, priority, reply_to, thread_id, created_at)
			SELECT x, printf('01SEED%%020d', x), 'bench', 'a' || ((x + 1) %% 999),
				CASE WHEN x %% 10 = 0 THEN 'reader' ELSE 'a' || (x %% 999) END,
				'seeded message number ' || x || ': the quick brown fox jumps over the lazy dog', 'normal', '',
				printf('01SEED%%020d', x), %d + x FROM c`, n, now-int64(n)*1000),
		fmt.Sprintf(`INSERT INTO deliveries (id, workspace, recipient, message_seq, rank, read_at)
			SELECT seq, 'bench', to_addr, seq, 2, %d FROM messages`, now),
		// Index them for search as a daemon would have (one pass each).
		`INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')`,
		`INSERT INTO messages_words (messages_words) VALUES ('rebuild')`,
		`DELETE FROM search_pending`,
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			tx.Rollback()
			return fmt.Errorf("%w (has the schema in internal/store/sqlite/migrations changed?)", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

// coldStartScenario: `parley mcp serve` from spawn to the initialize result,
// with the daemon running. The floor: `redis-cli PING` from spawn to exit.
func coldStartScenario(ctx context.Context, b *bench) error {
	d, err := b.newHome()
	if err != nil {
		return err
	}
	if err := d.start(); err != nil {
		return err
	}
	n := max(*flagN/20, 20)
	init := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n")
	var lat []time.Duration
	for i := 0; i < n+3; i++ {
		c := d.cmd("mcp", "serve", "--workspace", "bench", "--agent", "cold")
		stdin, _ := c.StdinPipe()
		stdout, _ := c.StdoutPipe()
		start := time.Now()
		if err := c.Start(); err != nil {
			return err
		}
		stdin.Write(init)
		line, err := bufio.NewReader(stdout).ReadBytes('\n')
		el := time.Since(start)
		stdin.Close()
		c.Wait()
		if err != nil || !strings.Contains(string(line), `"result"`) {
			return fmt.Errorf("initialize through mcp serve: %v %s", err, line)
		}
		if i >= 3 {
			lat = append(lat, el)
		}
	}
	var floor []time.Duration
	if b.redis != "" {
		host, port, _ := strings.Cut(b.redis, ":")
		for i := 0; i < n+3; i++ {
			start := time.Now()
			out, err := exec.Command("redis-cli", "-h", host, "-p", port, "PING").Output()
			if err != nil || !strings.Contains(string(out), "PONG") {
				return fmt.Errorf("redis-cli PING: %v %s", err, out)
			}
			if i >= 3 {
				floor = append(floor, time.Since(start))
			}
		}
	}
	b.lat = append(b.lat, latRow{name: "parley mcp serve cold start to initialize result (floor: redis-cli PING)", parley: lat, floor: floor})
	logf("   cold start p50 %s ms", ms(percentiles(lat)[0]))
	return nil
}

// rssScenario: the daemon's VmRSS idle, then with *flagSess MCP sessions open
// (go-sdk clients on Streamable HTTP on the socket, each with the standalone
// SSE stream the client keeps open by default). The floors: redis-server idle
// and with as many connections, and the bare go-sdk server (bare.go) with as
// many sessions of the same clients, which is what the SDK and net/http need
// per session before Parley adds anything.
func rssScenario(ctx context.Context, b *bench) error {
	d, err := b.newHome()
	if err != nil {
		return err
	}
	if err := d.start(); err != nil {
		return err
	}
	time.Sleep(time.Second)
	idle, err := rss(d.pid)
	if err != nil {
		return err
	}
	var rpid int
	var ridle, rbusy int64
	if b.redis != "" {
		r, err := dialRedis(b.redis)
		if err != nil {
			return err
		}
		// Earlier scenarios left lists behind: start the floor empty too.
		if _, err := r.do("FLUSHALL"); err != nil {
			r.Close()
			return err
		}
		info, err := r.do("INFO", "server")
		r.Close()
		if err != nil {
			return err
		}
		for _, l := range strings.Split(fmt.Sprint(info), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
				rpid, _ = strconv.Atoi(v)
			}
		}
		if ridle, err = rss(rpid); err != nil {
			return err
		}
	}
	sessions, err := openSessions(ctx, d, *flagSess)
	defer closeSessions(sessions)
	if err != nil {
		return err
	}
	// Every session answers, so all of them are really open.
	for _, s := range sessions[:10] {
		if _, err := callOK(ctx, s, "whoami", nil); err != nil {
			return err
		}
	}
	var st struct {
		Sessions int `json:"mcp_sessions"`
	}
	if err := d.api(ctx, "GET", "/status", "rss", "", nil, &st); err != nil {
		return err
	}
	if st.Sessions < *flagSess {
		return fmt.Errorf("daemon counts %d sessions, want %d", st.Sessions, *flagSess)
	}
	time.Sleep(time.Second)
	busy, err := rss(d.pid)
	if err != nil {
		return err
	}
	// Close them before the floors' connections: both sets at once would
	// pass this process's limit of open files.
	for i, s := range sessions {
		s.Close()
		sessions[i] = nil
	}
	bareRSS, err := b.bareRSS(ctx)
	if err != nil {
		return err
	}
	if rpid != 0 {
		conns := make([]*respConn, *flagSess)
		for i := range conns {
			if conns[i], err = dialRedis(b.redis); err != nil {
				return err
			}
			defer conns[i].Close()
			if _, err := conns[i].do("PING"); err != nil {
				return err
			}
		}
		if rbusy, err = rss(rpid); err != nil {
			return err
		}
	}
	const mb = 1 << 20
	b.val = append(b.val,
		valRow{name: "daemon RSS, idle", unit: "MB", parley: float64(idle) / mb, floor: float64(ridle) / mb, floorIs: "redis-server, idle"},
		valRow{name: fmt.Sprintf("daemon RSS, %d open MCP sessions", *flagSess), unit: "MB", parley: float64(busy) / mb, floor: float64(rbusy) / mb,
			floorIs: "redis-server with as many connections", target: "<= 500 MB at 10,000", met: yes(*flagSess >= 10000 && busy <= 500*mb), listed: true},
	)
	b.val = append(b.val, valRow{name: fmt.Sprintf("daemon RSS, %d open MCP sessions, beside the SDK alone", *flagSess), unit: "MB",
		parley: float64(busy) / mb, floor: float64(bareRSS) / mb, floorIs: "bare go-sdk server (bare.go), same clients"})
	b.targets = append(b.targets, target{name: fmt.Sprintf("daemon RSS with %d connected MCP sessions", *flagSess),
		parley: num(float64(busy)/mb) + " MB", floor: num(float64(rbusy)/mb) + " MB; bare go-sdk server " + num(float64(bareRSS)/mb) + " MB",
		floorIs: "redis-server with as many connections; the SDK alone with as many sessions",
		goal:    "10,000 sessions in <= 500 MB", met: yes(*flagSess >= 10000 && busy <= 500*mb)})
	logf("   rss idle %.1f MB, %d sessions %.1f MB (bare go-sdk server %.1f MB)", float64(idle)/mb, *flagSess, float64(busy)/mb, float64(bareRSS)/mb)
	return nil
}

// bareRSS is the VmRSS of the bare go-sdk server with *flagSess sessions of
// the same clients open: the SDK's and net/http's own cost per session.
func (b *bench) bareRSS(ctx context.Context) (int64, error) {
	bare, err := b.startBare()
	if err != nil {
		return 0, err
	}
	sessions, err := openSessions(ctx, bare, *flagSess)
	defer closeSessions(sessions)
	if err != nil {
		return 0, err
	}
	time.Sleep(time.Second)
	return rss(bare.pid)
}

// openSessions opens n MCP sessions on d over Streamable HTTP, 16 at a time,
// each as its own agent.
func openSessions(ctx context.Context, d *daemon, n int) ([]*mcp.ClientSession, error) {
	sessions := make([]*mcp.ClientSession, n)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range sessions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s, err := d.httpSession(ctx, "rss", "s"+strconv.Itoa(i))
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			sessions[i] = s
		}()
	}
	wg.Wait()
	return sessions, firstErr
}

// closeSessions closes the sessions openSessions opened.
func closeSessions(sessions []*mcp.ClientSession) {
	for _, s := range sessions {
		if s != nil {
			s.Close()
		}
	}
}
