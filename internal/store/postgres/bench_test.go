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
// message (through the store, NOTIFY, LISTEN and a consume). The floor, in the
// same run: one raw INSERT plus NOTIFY on one connection until another
// connection that LISTENs receives it.
func BenchmarkCrossDaemonWake(b *testing.B) {
	dsn := pgtest.Database(b)
	b.Run("floor-insert-notify-listen", func(b *testing.B) {
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
		if _, err := send.Exec(ctx, `CREATE TABLE IF NOT EXISTS floor_msgs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text)`); err != nil {
			b.Fatal(err)
		}
		if _, err := listen.Exec(ctx, "LISTEN floor"); err != nil {
			b.Fatal(err)
		}
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if _, err := send.Exec(ctx, `WITH i AS (INSERT INTO floor_msgs (body) VALUES ('x') RETURNING id) SELECT pg_notify('floor', id::text) FROM i`); err != nil {
				b.Fatal(err)
			}
			if _, err := listen.WaitForNotification(ctx); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		reportLatency(b, "", lat)
	})
	b.Run("parley-hub-to-hub", func(b *testing.B) {
		a, w := newBenchHub(b, dsn), newBenchHub(b, dsn)
		ctx := context.Background()
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			got := make(chan time.Time, 1)
			go func() {
				m, err := w.hub.Wait(ctx, hub.WaitRequest{Workspace: "ws", Agent: "bob", Timeout: time.Minute})
				if err != nil || m == nil {
					b.Errorf("wait: %v, %v", m, err)
				}
				got <- time.Now()
			}()
			for w.hub.Waiters("ws", "bob") == 0 { // spin: the wait registers within microseconds
				time.Sleep(50 * time.Microsecond)
			}
			start := time.Now()
			if _, err := a.hub.Send(ctx, hub.SendRequest{Workspace: "ws", From: "alice", To: "bob", Content: "x"}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, (<-got).Sub(start))
		}
		reportLatency(b, "", lat)
	})
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
// one hub with the notifier, in messages per second. The floor, in the same
// run: 64 connections each committing one-row INSERTs into a plain table.
func BenchmarkDurableSends64(b *testing.B) {
	const senders = 64
	dsn := pgtest.Database(b)
	run := func(b *testing.B, send func(ctx context.Context, i int) error) {
		var next atomic.Int64
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		var failed atomic.Value
		for range senders {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > int64(b.N) {
						return
					}
					if err := send(context.Background(), int(i)); err != nil {
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
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
	}
	b.Run("floor-pgx-insert", func(b *testing.B) {
		db, err := Open(context.Background(), dsn, &Options{MaxConns: senders})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if _, err := db.pool.Exec(context.Background(), `CREATE TABLE IF NOT EXISTS floor_sends (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text)`); err != nil {
			b.Fatal(err)
		}
		run(b, func(ctx context.Context, i int) error {
			_, err := db.pool.Exec(ctx, `INSERT INTO floor_sends (body) VALUES ($1)`, "x")
			return err
		})
	})
	b.Run("parley-hub-send", func(b *testing.B) {
		db, err := Open(context.Background(), dsn, &Options{MaxConns: senders})
		if err != nil {
			b.Fatal(err)
		}
		n := db.NewNotifier()
		h := hub.New(db, &hub.Options{Notifier: n})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { n.Run(ctx, h); close(done) }()
		defer func() { cancel(); <-done; db.Close() }()
		run(b, func(ctx context.Context, i int) error {
			_, err := h.Send(ctx, hub.SendRequest{Workspace: "ws", From: fmt.Sprint("s", i%senders), To: fmt.Sprint("r", i%senders), Content: "x"})
			return err
		})
	})
}
