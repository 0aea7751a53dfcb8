package postgres

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
)

// reportLatency reports p50 and p99 of lat in milliseconds.
func reportLatency(b *testing.B, prefix string, lat []time.Duration) {
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), prefix+"p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), prefix+"p99-ms")
}

// BenchmarkCrossDaemonWake measures send->wake between two daemons' hubs on
// one database: a hub.Send on A until a hub.Wait blocked on B returns the
// message (through the store, NOTIFY, LISTEN and a take). The floor is one raw
// INSERT plus NOTIFY on one connection until another connection that LISTENs
// receives it. Each iteration runs one round of each, so that both see the
// same machine load: floor-p50-ms and p50-ms are comparable.
func BenchmarkCrossDaemonWake(b *testing.B) {
	dsn := pgtest.Database(b)
	ctx := context.Background()
	listen, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer listen.Close(ctx)
	send, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer send.Close(ctx)
	if _, err := send.Exec(ctx, `CREATE TABLE floor_msgs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text)`); err != nil {
		b.Fatal(err)
	}
	if _, err := listen.Exec(ctx, "LISTEN floor"); err != nil {
		b.Fatal(err)
	}
	a, w := newBenchHub(b, dsn), newBenchHub(b, dsn)
	floor := make([]time.Duration, 0, b.N)
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if _, err := send.Exec(ctx, `WITH i AS (INSERT INTO floor_msgs (body) VALUES ('x') RETURNING id) SELECT pg_notify('floor', id::text) FROM i`); err != nil {
			b.Fatal(err)
		}
		if _, err := listen.WaitForNotification(ctx); err != nil {
			b.Fatal(err)
		}
		floor = append(floor, time.Since(start))

		got := make(chan time.Time, 1)
		go func() {
			m, err := w.hub.Wait(ctx, hub.WaitRequest{Workspace: "ws", Agent: "bob", Timeout: time.Minute})
			if err != nil || m == nil {
				b.Errorf("wait: %v, %v", m, err)
			}
			got <- time.Now()
		}()
		for w.hub.Waiters("ws", "bob") == 0 { // the wait registers within microseconds
			time.Sleep(50 * time.Microsecond)
		}
		start = time.Now()
		if _, err := a.hub.Send(ctx, hub.SendRequest{Workspace: "ws", From: "alice", To: "bob", Content: "x"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(start))
	}
	reportLatency(b, "floor-", floor)
	reportLatency(b, "", lat)
}

func newBenchHub(b *testing.B, dsn string) *daemonHub {
	db, err := Open(context.Background(), dsn, nil)
	if err != nil {
		b.Fatal(err)
	}
	n := db.NewNotifier()
	h := hub.New(db, &hub.Options{Notifier: n})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx, h); close(done) }()
	b.Cleanup(func() { cancel(); <-done; db.Close() })
	for !n.Listening() {
		time.Sleep(time.Millisecond)
	}
	return &daemonHub{db: db, n: n, hub: h}
}

// BenchmarkDurableSends64 measures durable sends (each committed with
// synchronous_commit on before it returns) from 64 concurrent senders through
// one hub with the notifier, in messages per second. It has two floors, both
// 64 concurrent clients committing into a table with only a primary key:
// floor-msg/s commits each one-row INSERT alone (PostgreSQL's own group
// commit shares the flushes); batch-floor-msg/s gathers the clients' rows as
// the sends do (batch.go) and commits each batch as one INSERT, which is the
// most any batching of durable sends can reach on this machine. The three
// alternate in phases of 512 operations, so that all see the same machine
// load. The *-cpu-us figures are the CPU time per operation of this process
// (client) and of the server's processes, less sensitive to other load than
// the rates.
func BenchmarkDurableSends64(b *testing.B) {
	const senders, phase = 64, 512
	dsn := pgtest.Database(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := Open(ctx, dsn, &Options{MaxConns: senders})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.pool.Exec(ctx, `CREATE TABLE floor_sends (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text)`); err != nil {
		b.Fatal(err)
	}
	n := db.NewNotifier()
	h := hub.New(db, &hub.Options{Notifier: n})
	done := make(chan struct{})
	go func() { n.Run(ctx, h); close(done) }()
	defer func() { cancel(); <-done }()

	type floorRow struct {
		body string
		done chan error
	}
	var rows batcher[floorRow]
	rows.start(committers, func(batch []*floorRow) {
		bodies := make([]string, len(batch))
		for i, r := range batch {
			bodies[i] = r.body
		}
		_, err := db.pool.Exec(context.Background(), `INSERT INTO floor_sends (body) SELECT unnest($1::text[])`, bodies)
		for _, r := range batch {
			r.done <- err
		}
	})
	defer rows.stop()

	type phaseCost struct{ wall, client, server time.Duration }
	// run does ops operations from 64 goroutines and returns what they cost.
	run := func(ops int, op func(i int) error) phaseCost {
		var next atomic.Int64
		var failed atomic.Value
		var wg sync.WaitGroup
		server := serverCPU(b, db) // first: its reads of /proc are not the phase's
		client := processCPU(b)
		start := time.Now()
		for range senders {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > int64(ops) {
						return
					}
					if err := op(int(i)); err != nil {
						failed.Store(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		return phaseCost{time.Since(start), processCPU(b) - client, serverCPU(b, db) - server}
	}
	floor := func(i int) error {
		_, err := db.pool.Exec(ctx, `INSERT INTO floor_sends (body) VALUES ($1)`, "x")
		return err
	}
	batchFloor := func(i int) error {
		r := &floorRow{body: "x", done: make(chan error, 1)}
		if err := rows.submit(ctx, db, "floor", r); err != nil {
			return err
		}
		return <-r.done
	}
	send := func(i int) error {
		_, err := h.Send(ctx, hub.SendRequest{Workspace: "ws", From: fmt.Sprint("s", i%senders), To: fmt.Sprint("r", i%senders), Content: "x"})
		return err
	}
	batches, calls := db.sends.batches.Load(), db.sends.calls.Load()
	var cFloor, cBatch, cSend phaseCost
	add := func(sum *phaseCost, c phaseCost) {
		sum.wall, sum.client, sum.server = sum.wall+c.wall, sum.client+c.client, sum.server+c.server
	}
	b.ResetTimer()
	for left := b.N; left > 0; left -= phase {
		ops := min(left, phase)
		add(&cFloor, run(ops, floor))
		add(&cBatch, run(ops, batchFloor))
		add(&cSend, run(ops, send))
	}
	b.StopTimer()
	b.ReportMetric(float64(db.sends.calls.Load()-calls)/float64(db.sends.batches.Load()-batches), "sends/batch")
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(b.N) }
	for _, r := range []struct {
		prefix string
		c      phaseCost
	}{{"floor-", cFloor}, {"batch-floor-", cBatch}, {"", cSend}} {
		b.ReportMetric(float64(b.N)/r.c.wall.Seconds(), r.prefix+"msg/s")
		b.ReportMetric(us(r.c.client), r.prefix+"client-cpu-us")
		b.ReportMetric(us(r.c.server), r.prefix+"server-cpu-us")
	}
}

// serverCPU is the CPU time (user and system) that the server's processes
// now running have used: its backends and background workers. The server is
// on this machine in the benchmarks; the pool keeps its backends for the run.
func serverCPU(b *testing.B, db *DB) time.Duration {
	rows, err := db.pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity`)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	var ticks int64
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // ended meanwhile
		}
		// The fields after the command (which may hold spaces): utime and
		// stime are the 12th and 13th after its closing parenthesis.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// clockTicks is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTicks = 100
