package sqlite

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// A message's expiry is found one of two ways (migration 15).
//
// Most messages take the daemon's default time to live, so their expiry
// times rise with their seq. Such a message is stored expiryByCursor, and
// DueExpiries walks those in seq order from expiry_cursor, stopping at the
// first whose time has not come: a queued send writes no index entry for
// its time to live. Any other message with a time to live (a shorter one
// after a longer one, a time to live past hub.DefaultTTL, a seq the cursor
// has passed) is stored expiryIndexed, in messages_expiry_due.
const (
	expiryIndexed  = 0 // not reported; in messages_expiry_due if it has a time to live
	expiryReported = 1 // reported, or nothing to report
	expiryByCursor = 2 // not reported; found by the cursor
)

const (
	// maxExpiries bounds one sweep's expired messages; the next sweep
	// takes the rest.
	maxExpiries = 1000
	// cursorScan bounds the messages one sweep's cursor walks past.
	cursorScan = 4096
)

// expiry is what the writer knows of the cursor. Its fields only ever
// move up, and may run ahead of what committed (a write rolled back after
// it moved them): each then sends more messages to the index, never fewer.
type expiry struct {
	// last is the latest expiry of a message stored expiryByCursor; a
	// message expiring before it would stop the cursor too late.
	last atomic.Int64
	// passed is the highest seq the cursor has been moved to.
	passed atomic.Int64
}

// load reads the cursor and the latest expiry after it.
func (e *expiry) load(ctx context.Context, c *sql.Conn) error {
	var passed, last int64
	if err := c.QueryRowContext(ctx, `SELECT seq FROM expiry_cursor`).Scan(&passed); err != nil {
		return err
	}
	err := c.QueryRowContext(ctx, `SELECT expires_at FROM messages WHERE seq > ? AND expiry_reported = ?
		ORDER BY seq DESC LIMIT 1`, passed, expiryByCursor).Scan(&last)
	if err != nil && err != sql.ErrNoRows {
		return err
	}
	e.passed.Store(passed)
	e.last.Store(last)
	return nil
}

// mark is the expiry_reported m is stored with. A message whose every copy
// is handed to a waiting reader leaves nothing for its time to live to
// report (DueExpiries reports only copies nothing reached). Writer only.
func (e *expiry) mark(m *hub.Message, handedAll bool) int {
	switch {
	case handedAll:
		return expiryReported
	case m.ExpiresAt.IsZero():
		return expiryIndexed // no time to live: outside the index too
	}
	exp := nanos(m.ExpiresAt)
	if exp < e.last.Load() || m.ExpiresAt.Sub(m.CreatedAt) > hub.DefaultTTL {
		return expiryIndexed
	}
	e.last.Store(exp)
	return expiryByCursor
}

// ahead reports whether seq is past every position the cursor has taken.
func (e *expiry) ahead(seq int64) bool { return seq > e.passed.Load() }

// DueExpiries reports, once each, the messages whose time to live ended,
// with their copies that nothing reached.
func (db *DB) DueExpiries(ctx context.Context, now time.Time) ([]*hub.Delivery, error) {
	const op = "due expiries"
	var out []*hub.Delivery
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		out = nil
		seqs, err := querySeqs(ctx, c, `UPDATE messages SET expiry_reported = 1
			WHERE seq IN (SELECT seq FROM messages WHERE expires_at > 0 AND expiry_reported = 0 AND expires_at <= ?
				ORDER BY expires_at LIMIT ?)
			RETURNING seq`, nanos(now), maxExpiries)
		if err != nil {
			return err
		}
		more, err := db.walkCursor(ctx, c, nanos(now), maxExpiries-len(seqs))
		if err != nil || len(seqs)+len(more) == 0 {
			return err
		}
		seqs = append(seqs, more...)
		_, out, err = queryDeliveries(ctx, stmtOn{c, `SELECT d.id, ` + delCols + `, ` + msgCols + `
			FROM deliveries d JOIN messages m ON m.seq = d.message_seq
			WHERE d.message_seq IN (SELECT value FROM json_each(?)) AND d.read_at IS NULL AND d.reader IS NULL
			AND d.delivery_count = 0 AND d.woke_via = '' ORDER BY d.workspace, d.recipient, d.id`}, true, jsonList(seqs))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// walkCursor moves the cursor past the messages stored expiryByCursor whose
// time to live ended at or before now (at most limit of them), marks those
// reported and returns their seqs. It stops at the first whose time has not
// come: every later one expires after it.
func (db *DB) walkCursor(ctx context.Context, c *sql.Conn, now int64, limit int) ([]int64, error) {
	var from int64
	if err := c.QueryRowContext(ctx, `SELECT seq FROM expiry_cursor`).Scan(&from); err != nil {
		return nil, err
	}
	rows, err := c.QueryContext(ctx, `SELECT seq, expires_at, expiry_reported FROM messages
		WHERE seq > ? ORDER BY seq LIMIT ?`, from, cursorScan)
	if err != nil {
		return nil, err
	}
	var due []int64
	to := from
	for rows.Next() {
		var seq, exp int64
		var state int
		if err := rows.Scan(&seq, &exp, &state); err != nil {
			rows.Close()
			return nil, err
		}
		if state == expiryByCursor {
			if exp > now || len(due) == limit {
				break
			}
			due = append(due, seq)
		}
		to = seq
	}
	rows.Close()
	if err := rows.Err(); err != nil || to == from {
		return nil, err
	}
	if len(due) > 0 {
		if _, err := c.ExecContext(ctx, `UPDATE messages SET expiry_reported = 1
			WHERE seq IN (SELECT value FROM json_each(?))`, jsonList(due)); err != nil {
			return nil, err
		}
	}
	if _, err := c.ExecContext(ctx, `UPDATE expiry_cursor SET seq = ?`, to); err != nil {
		return nil, err
	}
	if to > db.expiry.passed.Load() {
		db.expiry.passed.Store(to)
	}
	return due, nil
}

// querySeqs runs a query that returns seqs.
func querySeqs(ctx context.Context, c *sql.Conn, query string, args ...any) ([]int64, error) {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var seqs []int64
	for rows.Next() {
		var s int64
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		seqs = append(seqs, s)
	}
	return seqs, rows.Err()
}
