package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

func openBench(b *testing.B, opts *Options) *DB {
	b.Helper()
	db, err := Open(context.Background(), filepath.Join(b.TempDir(), "parley.db"), opts)
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

var benchSeq atomic.Int64

func benchMessage(ws string) *hub.Message {
	id := fmt.Sprintf("01JBENCH%018d", benchSeq.Add(1))
	return &hub.Message{ID: id, Workspace: ws, From: "alice", To: "bob",
		Content: "please review the change in internal/hub/hub.go", Priority: hub.Normal,
		ThreadID: id, CreatedAt: time.Now()}
}

// BenchmarkCreateMessage sends to one recipient. sync=FULL is what Open uses; the
// NORMAL figure shows what durability across power loss costs.
func BenchmarkCreateMessage(b *testing.B) {
	for _, mode := range []string{"FULL", "NORMAL"} {
		b.Run("sync="+mode, func(b *testing.B) {
			db := openBench(b, &Options{synchronous: mode})
			ctx := context.Background()
			recips := []string{"bob"}
			b.ReportAllocs()
			for b.Loop() {
				if err := db.CreateMessage(ctx, benchMessage("ws"), recips); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCreateMessageParallel sends from 8 goroutines at once, each to its own
// recipient; they all queue on the one writer connection.
func BenchmarkCreateMessageParallel(b *testing.B) {
	const workers = 8
	db := openBench(b, nil)
	ctx := context.Background()
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range workers {
		recips := []string{fmt.Sprintf("agent-%d", w)}
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := db.CreateMessage(ctx, benchMessage("ws"), recips); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if c := db.wr.commits.Load(); c > 0 {
		b.ReportMetric(float64(db.wr.writes.Load())/float64(c), "writes/commit")
	}
}

// BenchmarkBroadcast1000 sends one message to a thousand recipients: one
// transaction, one delivery statement.
func BenchmarkBroadcast1000(b *testing.B) {
	db := openBench(b, nil)
	ctx := context.Background()
	recips := make([]string, 1000)
	for i := range recips {
		recips[i] = fmt.Sprintf("agent-%04d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := db.CreateMessage(ctx, benchMessage("ws"), recips); err != nil {
			b.Fatal(err)
		}
	}
}

// seed inserts messages and read deliveries with plain SQL in one transaction:
// nmsg messages in ws from "seeder", each delivered to nrecip agents
// "agent-1".."agent-nrecip", all read except one in unreadEvery (0: none).
func seed(b *testing.B, db *DB, ws string, nmsg, nrecip, unreadEvery int) {
	b.Helper()
	base := benchSeq.Add(int64(nmsg))
	readAt := "1"
	if unreadEvery > 0 {
		readAt = fmt.Sprintf("CASE WHEN m.seq %% %d = 0 THEN NULL ELSE 1 END", unreadEvery)
	}
	onWriter(b, db, func(ctx context.Context, c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `INSERT OR IGNORE INTO workspaces (name) VALUES (?)`, ws); err != nil {
			return err
		}
		_, err := c.ExecContext(ctx, `INSERT INTO messages (id, workspace, sender, to_addr, content, payload,
				priority, reply_to, thread_id, metadata, created_at)
			WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?1)
			SELECT printf('01JSEED%019d', ?2 + x), ?3, 'seeder', '@everyone', 'seeded message number ' || x, NULL,
				'normal', '', '', NULL, x FROM c`, nmsg, base, ws)
		if err != nil {
			return err
		}
		_, err = c.ExecContext(ctx, `INSERT INTO deliveries (workspace, recipient, message_seq, rank, read_at)
			WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < ?1)
			SELECT ?2, 'agent-' || r.x, m.seq, 2, `+readAt+`
			FROM messages m, r WHERE m.workspace = ?2 AND m.sender = 'seeder'
			ORDER BY m.seq, r.x`, nrecip, ws)
		return err
	})
}

// BenchmarkConsume takes one message at a time from an inbox of b.N, read at once.
func BenchmarkConsume(b *testing.B) {
	db := openBench(b, nil)
	ctx := context.Background()
	seed(b, db, "ws", b.N, 1, 1) // every delivery to agent-1 unread
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ms, _, err := db.Take(ctx, hub.TakeQuery{Workspace: "ws", Recipient: "agent-1", MaxRank: 3, Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		if len(ms) != 1 {
			b.Fatalf("Take: got %d messages, want 1", len(ms))
		}
	}
}

// BenchmarkTakeConfirm hands one message at a time to a reader from an inbox
// of b.N, then confirms it: the two writes of a leased read.
func BenchmarkTakeConfirm(b *testing.B) {
	db := openBench(b, nil)
	ctx := context.Background()
	seed(b, db, "ws", b.N, 1, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now := time.Now()
		ds, _, err := db.Take(ctx, hub.TakeQuery{Workspace: "ws", Recipient: "agent-1", Reader: "session-1",
			MaxRank: 3, Limit: 1, Now: now, LeaseUntil: now.Add(time.Minute)})
		if err != nil || len(ds) != 1 {
			b.Fatalf("Take: got %d, %v; want 1", len(ds), err)
		}
		if cs, err := db.Confirm(ctx, "session-1", nil, now); err != nil || len(cs) != 1 {
			b.Fatalf("Confirm: got %d, %v; want 1", len(cs), err)
		}
	}
}

// BenchmarkUnreadWith1MRows: a million deliveries (10,000 messages to 100 agents,
// 1% of them unread), and a recipient whose inbox holds one unread message under
// 10,000 read ones. The partial index on unread rows keeps both calls independent
// of the history's size.
func BenchmarkUnreadWith1MRows(b *testing.B) {
	db := openBench(b, nil)
	ctx := context.Background()
	start := time.Now()
	seed(b, db, "ws", 10_000, 100, 100)
	// The recipient under test: everything read except the newest message.
	execWriter(b, db, `UPDATE deliveries SET read_at = 1 WHERE recipient = 'agent-1'`)
	m := benchMessage("ws")
	if err := db.CreateMessage(ctx, m, []string{"agent-1"}); err != nil {
		b.Fatal(err)
	}
	var rows int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM deliveries`).Scan(&rows); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d deliveries in %v", rows, time.Since(start).Round(time.Millisecond))

	b.Run("Unread", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n, err := db.Unread(ctx, "ws", "agent-1", 3)
			if err != nil || n != 1 {
				b.Fatalf("Unread: got %d, %v; want 1", n, err)
			}
		}
	})
	b.Run("Peek", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ms, err := db.Peek(ctx, "ws", "agent-1", 10)
			if err != nil || len(ms) != 1 {
				b.Fatalf("Peek: got %d, %v; want 1", len(ms), err)
			}
		}
	})
	b.Run("Consume+Unread", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ms, _, err := db.Take(ctx, hub.TakeQuery{Workspace: "ws", Recipient: "agent-1", MaxRank: 3, Limit: 10})
			if err != nil || len(ms) != 1 {
				b.Fatalf("Take: got %d, %v; want 1", len(ms), err)
			}
			n, err := db.Unread(ctx, "ws", "agent-1", 3)
			if err != nil || n != 0 {
				b.Fatalf("Unread: got %d, %v; want 0", n, err)
			}
			// Put the one message back for the next round, off the clock.
			b.StopTimer()
			execWriter(b, db, `UPDATE deliveries SET read_at = NULL
				WHERE workspace = 'ws' AND recipient = 'agent-1' AND message_seq =
				(SELECT seq FROM messages WHERE id = ?)`, m.ID)
			b.StartTimer()
		}
	})
	b.Run("CreateMessage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := db.CreateMessage(ctx, benchMessage("ws"), []string{"agent-2"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
