package postgres

import (
	"context"
	"fmt"
	"slices"
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
// one hub with the notifier, in messages per second. The floor: 64 connections
// each committing one-row INSERTs into a plain table. The two alternate in
// phases of 512 operations, so that both see the same machine load.
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

	// run does ops operations from 64 goroutines and returns how long they took.
	run := func(ops int, op func(i int) error) time.Duration {
		var next atomic.Int64
		var failed atomic.Value
		var wg sync.WaitGroup
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
		return time.Since(start)
	}
	floor := func(i int) error {
		_, err := db.pool.Exec(ctx, `INSERT INTO floor_sends (body) VALUES ($1)`, "x")
		return err
	}
	send := func(i int) error {
		_, err := h.Send(ctx, hub.SendRequest{Workspace: "ws", From: fmt.Sprint("s", i%senders), To: fmt.Sprint("r", i%senders), Content: "x"})
		return err
	}
	var tFloor, tSend time.Duration
	b.ResetTimer()
	for left := b.N; left > 0; left -= phase {
		ops := min(left, phase)
		tFloor += run(ops, floor)
		tSend += run(ops, send)
	}
	b.ReportMetric(float64(b.N)/tFloor.Seconds(), "floor-msg/s")
	b.ReportMetric(float64(b.N)/tSend.Seconds(), "msg/s")
}
