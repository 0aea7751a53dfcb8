package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// delCols are a delivery's columns as scanDelivery reads them, for deliveries
// aliased d joined with their messages aliased m.
const delCols = `d.workspace, d.recipient, m.id, d.reader, d.lease_until, d.delivered_at,
	d.delivery_count, d.read_at, d.acked_at, d.woke_via, d.woke_at, d.seen_at, d.bounced_at, d.bounce_reason,
	d.letter, d.door_state, d.door_note, d.door_at, d.door_until`

// scanDelivery reads d.id and delCols, then msgCols if withMessage.
func scanDelivery(sc rowScanner, withMessage bool) (int64, *hub.Delivery, error) {
	var (
		id                      int64
		d                       hub.Delivery
		reader                  sql.NullString
		lease, delivered, acked int64
		read                    sql.NullInt64
		woke, seen, bounced     int64
		doorAt, doorUntil       int64
		dest                    = []any{&id, &d.Workspace, &d.Recipient, &d.MessageID, &reader, &lease, &delivered, &d.Count, &read, &acked, &d.WokeVia, &woke,
			&seen, &bounced, &d.BounceReason, &d.Letter, &d.Door, &d.DoorNote, &doorAt, &doorUntil}
		err error
	)
	if withMessage {
		d.Message, err = scanMessage(sc, dest...)
	} else {
		err = sc.Scan(dest...)
	}
	if err != nil {
		return 0, nil, err
	}
	d.Reader = reader.String
	d.LeaseUntil = fromNanos(lease)
	d.DeliveredAt = fromNanos(delivered)
	d.ReadAt = fromNanos(read.Int64)
	d.AckedAt = fromNanos(acked)
	d.WokeAt = fromNanos(woke)
	d.SeenAt = fromNanos(seen)
	d.BouncedAt = fromNanos(bounced)
	d.DoorAt, d.DoorUntil = fromNanos(doorAt), fromNanos(doorUntil)
	switch {
	case acked != 0:
		d.State = hub.Acked
	case bounced != 0 && d.Door == hub.DoorDeclined:
		d.State = hub.Declined
	case bounced != 0:
		d.State = hub.Bounced
	case read.Valid:
		d.State = hub.Read
	case reader.Valid:
		d.State = hub.Delivered
	case d.Count > 0:
		d.State = hub.Redelivered
	default:
		d.State = hub.Queued
	}
	return id, &d, nil
}

// queryDeliveries runs a query that selects d.id, delCols (and msgCols if
// withMessage) and returns the rowids and deliveries.
func queryDeliveries(ctx context.Context, q interface {
	QueryContext(context.Context, ...any) (*sql.Rows, error)
}, withMessage bool, args ...any) ([]int64, []*hub.Delivery, error) {
	rows, err := q.QueryContext(ctx, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var (
		ids []int64
		ds  []*hub.Delivery
	)
	for rows.Next() {
		id, d, err := scanDelivery(rows, withMessage)
		if err != nil {
			return nil, nil, err
		}
		ids = append(ids, id)
		ds = append(ds, d)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return ids, ds, rows.Close()
}

// stmtOn adapts a query string on a connection to queryDeliveries.
type stmtOn struct {
	c interface {
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	}
	q string
}

func (s stmtOn) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	return s.c.QueryContext(ctx, s.q, args...)
}

// jsonList encodes values for json_each.
func jsonList[T any](vs []T) string {
	b, _ := json.Marshal(vs) // ints and strings always encode
	return string(b)
}

// nullable binds the empty string as NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Take hands inbox deliveries to a reader (see hub.Store), after it
// confirms q.Confirm. The select and the update run on the one writer
// connection inside one transaction, so concurrent calls never hand out the
// same delivery.
func (db *DB) Take(ctx context.Context, q hub.TakeQuery) (taken, confirmed []*hub.Delivery, err error) {
	const op = "take"
	if q.Limit <= 0 && len(q.Confirm) == 0 {
		return nil, nil, nil
	}
	now := nanos(q.Now)
	if now == 0 {
		now = time.Now().UnixNano()
	}
	// Lazy: a hand-out lost in a power cut comes back as queued, and is
	// handed out again: never lost.
	err = db.writeLazy(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		taken, confirmed = nil, nil
		if len(q.Confirm) > 0 && q.Reader != "" {
			var err error
			if confirmed, err = db.confirmOn(ctx, q.Reader, q.Confirm, now); err != nil {
				return err
			}
		}
		if q.Limit <= 0 {
			return nil
		}
		var repliers any // NULL: anyone
		if q.Repliers != nil {
			repliers = jsonList(q.Repliers)
		}
		ids, ds, err := queryDeliveries(ctx, db.stmts.wTakeSel, true, q.Workspace, q.Recipient, q.MaxRank, q.Limit, q.Thread, q.After,
			repliers, q.ResultOf)
		if err != nil || len(ds) == 0 {
			return err
		}
		var lease, readAt any
		if q.Reader == "" {
			readAt = now
		} else {
			lease = nanos(q.LeaseUntil)
		}
		if lease == nil {
			lease = int64(0)
		}
		res, err := db.stmts.wTakeUpd.ExecContext(ctx, nullable(q.Reader), lease, now, readAt, jsonList(ids), string(q.Via))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(ds)) {
			return hub.Errorf(op, hub.Internal, "handed out %d deliveries, want %d (%v)", n, len(ds), err)
		}
		for _, d := range ds {
			d.Count++
			d.DeliveredAt = fromNanos(now)
			if d.WokeVia == "" && q.Via != "" {
				d.WokeVia, d.WokeAt = q.Via, fromNanos(now)
			}
			if q.Reader == "" {
				d.State, d.ReadAt = hub.Read, fromNanos(now)
			} else {
				d.State, d.Reader, d.LeaseUntil = hub.Delivered, q.Reader, q.LeaseUntil.UTC()
			}
		}
		taken = ds
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return taken, confirmed, nil
}

// Unread counts recipient's inbox deliveries with rank <= maxRank.
func (db *DB) Unread(ctx context.Context, ws, recipient string, maxRank int) (int, error) {
	var n int
	if err := db.stmts.rUnread.QueryRowContext(ctx, ws, recipient, maxRank).Scan(&n); err != nil {
		return 0, db.mapErr(ctx, "count unread", err)
	}
	return n, nil
}

// UnreadByRecipient counts the inbox deliveries of every recipient of ws.
func (db *DB) UnreadByRecipient(ctx context.Context, ws string, maxRank int) (map[string]int, error) {
	const op = "count unread"
	rows, err := db.stmts.rUnreadBy.QueryContext(ctx, ws, maxRank)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		out[name] = n
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return out, nil
}

// Peek returns up to limit inbox deliveries of recipient in inbox order,
// leaving them in the inbox.
func (db *DB) Peek(ctx context.Context, ws, recipient string, limit int) ([]*hub.Delivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	_, ds, err := queryDeliveries(ctx, db.stmts.rPeek, true, ws, recipient, hub.Low.Rank(), limit, "", "")
	if err != nil {
		return nil, db.mapErr(ctx, "peek", err)
	}
	return ds, nil
}

// Confirm marks read the deliveries leased to reader.
func (db *DB) Confirm(ctx context.Context, reader string, messageIDs []string, at time.Time) ([]*hub.Delivery, error) {
	const op = "confirm"
	if reader == "" {
		return nil, hub.Errorf(op, hub.Invalid, "no reader")
	}
	var out []*hub.Delivery
	err := db.writeLazy(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		var err error
		out, err = db.confirmOn(ctx, reader, messageIDs, nanos(at))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// confirmOn marks read, at at, the deliveries leased to reader (of the
// messages with the ids, if not nil) that were handed out no later than at,
// inside the writer's transaction.
func (db *DB) confirmOn(ctx context.Context, reader string, messageIDs []string, at int64) ([]*hub.Delivery, error) {
	var list any // NULL: all of the reader's
	if messageIDs != nil {
		list = jsonList(messageIDs)
	}
	_, ds, err := queryDeliveries(ctx, db.stmts.wConfirm, false, reader, list, at)
	return ds, err
}

// Release puts leased deliveries back in their inboxes.
func (db *DB) Release(ctx context.Context, q hub.ReleaseQuery) ([]*hub.Delivery, error) {
	const op = "release"
	var (
		b    strings.Builder
		args []any
	)
	b.WriteString(`SELECT d.id, ` + delCols + ` FROM deliveries d JOIN messages m ON m.seq = d.message_seq WHERE `)
	if q.Reader != "" {
		b.WriteString(`d.reader = ?`)
		args = append(args, q.Reader)
	} else {
		b.WriteString(`d.reader IS NOT NULL`)
	}
	if q.MessageIDs != nil {
		b.WriteString(` AND m.id IN (SELECT value FROM json_each(?))`)
		args = append(args, jsonList(q.MessageIDs))
	}
	if !q.Expired.IsZero() {
		b.WriteString(` AND d.lease_until <= ?`)
		args = append(args, nanos(q.Expired))
	}
	var out []*hub.Delivery
	// Durable: a release lost in a power cut would leave a copy out on a
	// lease that no reader holds until the lease ends.
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		ids, ds, err := queryDeliveries(ctx, stmtOn{c, b.String()}, false, args...)
		if err != nil || len(ds) == 0 {
			out = nil
			return err
		}
		if _, err := c.ExecContext(ctx, `UPDATE deliveries SET reader = NULL, lease_until = 0
			WHERE id IN (SELECT value FROM json_each(?))`, jsonList(ids)); err != nil {
			return err
		}
		for _, d := range ds {
			d.State, d.Reader, d.LeaseUntil = hub.Redelivered, "", time.Time{}
		}
		out = ds
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Reopen puts handed-out, unacked copies back in the inbox.
func (db *DB) Reopen(ctx context.Context, ws, recipient string, messageIDs []string) ([]*hub.Delivery, error) {
	if len(messageIDs) == 0 {
		return nil, nil
	}
	var out []*hub.Delivery
	err := db.write(ctx, "reopen", func(ctx context.Context, c *sql.Conn) error {
		ids, ds, err := queryDeliveries(ctx, stmtOn{c, `SELECT d.id, ` + delCols + `
			FROM messages m JOIN deliveries d ON d.message_seq = m.seq
			WHERE m.id IN (SELECT value FROM json_each(?1)) AND m.workspace = ?2 AND d.recipient = ?3
			AND d.acked_at = 0 AND d.bounced_at = 0 AND (d.reader IS NOT NULL OR d.read_at IS NOT NULL) ORDER BY d.id`},
			false, jsonList(messageIDs), ws, recipient)
		if err != nil || len(ds) == 0 {
			out = nil
			return err
		}
		if _, err := c.ExecContext(ctx, `UPDATE deliveries SET read_at = NULL, reader = NULL, lease_until = 0
			WHERE id IN (SELECT value FROM json_each(?))`, jsonList(ids)); err != nil {
			return err
		}
		for _, d := range ds {
			d.State, d.Reader, d.LeaseUntil, d.ReadAt = hub.Redelivered, "", time.Time{}, time.Time{}
		}
		out = ds
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Ack marks recipient's deliveries of the messages acked.
func (db *DB) Ack(ctx context.Context, ws, recipient string, messageIDs []string, at time.Time) ([]*hub.Delivery, error) {
	const op = "ack"
	if len(messageIDs) == 0 {
		return nil, nil
	}
	var out []*hub.Delivery
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		ids, ds, err := queryDeliveries(ctx, stmtOn{c, `SELECT d.id, ` + delCols + `
			FROM messages m JOIN deliveries d ON d.message_seq = m.seq
			WHERE m.id IN (SELECT value FROM json_each(?1)) AND m.workspace = ?2
			AND d.recipient = ?3 AND d.acked_at = 0 ORDER BY m.seq`}, false, jsonList(messageIDs), ws, recipient)
		if err != nil || len(ds) == 0 {
			out = nil
			return err
		}
		if _, err := c.ExecContext(ctx, `UPDATE deliveries SET acked_at = ?1, read_at = coalesce(read_at, ?1),
			reader = NULL, lease_until = 0 WHERE id IN (SELECT value FROM json_each(?2))`, nanos(at), jsonList(ids)); err != nil {
			return err
		}
		for _, d := range ds {
			if d.ReadAt.IsZero() {
				d.ReadAt = at.UTC()
			}
			d.State, d.Reader, d.LeaseUntil, d.AckedAt = hub.Acked, "", time.Time{}, at.UTC()
		}
		out = ds
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Deliveries returns every recipient's delivery of the message.
func (db *DB) Deliveries(ctx context.Context, ws, messageID string) ([]*hub.Delivery, error) {
	const op = "get deliveries"
	var seq int64
	err := db.r.QueryRowContext(ctx, `SELECT seq FROM messages WHERE id = ? AND workspace = ?`, messageID, ws).Scan(&seq)
	if err == sql.ErrNoRows {
		return nil, hub.Errorf(op, hub.NotFound, "no message %s in workspace %q", messageID, ws)
	}
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	_, ds, err := queryDeliveries(ctx, stmtOn{db.r, `SELECT d.id, ` + delCols + `
		FROM deliveries d JOIN messages m ON m.seq = d.message_seq
		WHERE d.message_seq = ? ORDER BY d.recipient`}, false, seq)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return ds, nil
}

// pendingAcks lists the recipients of the message (by seq) that have not acked.
func pendingAcks(ctx context.Context, c interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, seq int64) ([]string, error) {
	rows, err := c.QueryContext(ctx, `SELECT recipient FROM deliveries
		WHERE message_seq = ? AND acked_at = 0 ORDER BY recipient`, seq)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// overdueFrom reads messages (seq first, then msgCols) and their pending
// recipients, keeping those with any.
func overdueFrom(ctx context.Context, c interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, q string, args ...any) (seqs []int64, out []*hub.Overdue, err error) {
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	var ms []*hub.Message
	for rows.Next() {
		var seq int64
		m, err := scanMessage(rows, &seq)
		if err != nil {
			rows.Close()
			return nil, nil, err
		}
		seqs = append(seqs, seq)
		ms = append(ms, m)
	}
	if err := rows.Close(); err != nil {
		return nil, nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	for i, m := range ms {
		pending, err := pendingAcks(ctx, c, seqs[i])
		if err != nil {
			return nil, nil, err
		}
		if len(pending) > 0 {
			out = append(out, &hub.Overdue{Message: m, Pending: pending})
		}
	}
	return seqs, out, nil
}

// DueAcks reports, once each, the messages whose ack deadline passed.
func (db *DB) DueAcks(ctx context.Context, now time.Time) ([]*hub.Overdue, error) {
	const op = "due acks"
	var out []*hub.Overdue
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		seqs, od, err := overdueFrom(ctx, c, `SELECT m.seq, `+msgCols+` FROM messages m
			WHERE m.ack_deadline > 0 AND m.ack_reported = 0 AND m.ack_deadline <= ?
			ORDER BY m.ack_deadline, m.seq`, nanos(now))
		if err != nil || len(seqs) == 0 {
			out = nil
			return err
		}
		if _, err := c.ExecContext(ctx, `UPDATE messages SET ack_reported = 1
			WHERE seq IN (SELECT value FROM json_each(?))`, jsonList(seqs)); err != nil {
			return err
		}
		out = od
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Overdue lists messages past their ack deadline with recipients that have not acked.
func (db *DB) Overdue(ctx context.Context, ws, sender string, now time.Time) ([]*hub.Overdue, error) {
	const op = "list overdue"
	_, out, err := overdueFrom(ctx, db.r, `SELECT m.seq, `+msgCols+` FROM messages m
		WHERE m.workspace = ?1 AND m.ack_deadline > 0 AND m.ack_deadline <= ?2
		AND (?3 = '' OR m.sender = ?3)
		AND EXISTS (SELECT 1 FROM deliveries d WHERE d.message_seq = m.seq AND d.acked_at = 0)
		ORDER BY m.ack_deadline, m.seq`, ws, nanos(now), sender)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return out, nil
}

// OpenTasks returns the copies of ws's tasks that are not done: queued,
// redelivered or claimed deliveries to a queue, by queue, then inbox order.
func (db *DB) OpenTasks(ctx context.Context, ws string, limit int) ([]*hub.Delivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	// queue:NAME sorts from 'queue:' up to (not including) 'queue;'.
	_, ds, err := queryDeliveries(ctx, stmtOn{db.r, `SELECT d.id, ` + delCols + `, ` + msgCols + `
		FROM deliveries d JOIN messages m ON m.seq = d.message_seq
		WHERE d.workspace = ?1 AND d.recipient >= 'queue:' AND d.recipient < 'queue;' AND d.read_at IS NULL
		ORDER BY d.recipient, d.rank, d.id LIMIT ?2`}, true, ws, limit)
	if err != nil {
		return nil, db.mapErr(ctx, "open tasks", err)
	}
	return ds, nil
}

// Unacked lists sender's messages that asked for an ack not all have given.
func (db *DB) Unacked(ctx context.Context, ws, sender string, limit int) ([]*hub.Overdue, error) {
	if limit <= 0 {
		return nil, nil
	}
	_, out, err := overdueFrom(ctx, db.r, `SELECT m.seq, `+msgCols+` FROM messages m
		WHERE m.workspace = ?1 AND m.sender = ?2 AND m.ack_required = 1
		AND EXISTS (SELECT 1 FROM deliveries d WHERE d.message_seq = m.seq AND d.acked_at = 0)
		ORDER BY m.seq LIMIT ?3`, ws, sender, limit)
	if err != nil {
		return nil, db.mapErr(ctx, "unacked", err)
	}
	return out, nil
}

// ClearInbox marks every delivery of recipient that is not read yet read.
func (db *DB) ClearInbox(ctx context.Context, ws, recipient string) (int, error) {
	const op = "clear inbox"
	var n int64
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		now := time.Now().UnixNano()
		// Two statements, so that each uses its partial index.
		res, err := c.ExecContext(ctx, `UPDATE deliveries SET read_at = ?
			WHERE workspace = ? AND recipient = ? AND read_at IS NULL AND reader IS NULL`,
			now, ws, recipient)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		res, err = c.ExecContext(ctx, `UPDATE deliveries SET read_at = ?, reader = NULL, lease_until = 0
			WHERE reader IS NOT NULL AND workspace = ? AND recipient = ?`,
			now, ws, recipient)
		if err != nil {
			return err
		}
		leased, err := res.RowsAffected()
		n += leased
		return err
	})
	if err != nil {
		return 0, err
	}
	return int(n), nil
}

// NoteWake records the wake path of inbox deliveries that have none.
func (db *DB) NoteWake(ctx context.Context, ws, recipient string, messageIDs []string, via hub.WakePath, letter string, at time.Time) (int, error) {
	if len(messageIDs) == 0 {
		return 0, nil
	}
	var n int64
	// Lazy: a wake path lost in a power cut loses no message.
	err := db.writeLazy(ctx, "note wake", func(ctx context.Context, c *sql.Conn) error {
		res, err := c.ExecContext(ctx, `UPDATE deliveries SET woke_via = ?1, woke_at = ?2,
			letter = CASE WHEN ?6 != '' THEN ?6 ELSE letter END, door_state = '', door_note = '', door_at = 0, door_until = 0
			WHERE woke_via = '' AND read_at IS NULL AND reader IS NULL AND workspace = ?3 AND recipient = ?4
			AND message_seq IN (SELECT seq FROM messages WHERE workspace = ?3 AND id IN (SELECT value FROM json_each(?5)))`,
			string(via), nanos(at), ws, recipient, jsonList(messageIDs), letter)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// RenewClaims extends the leases of the claimed tasks readers hold, never
// shortening one.
func (db *DB) RenewClaims(ctx context.Context, readers, taskIDs []string, until time.Time) ([]*hub.Delivery, error) {
	if len(readers) == 0 {
		return nil, nil
	}
	q := `SELECT d.id, ` + delCols + ` FROM deliveries d JOIN messages m ON m.seq = d.message_seq
		WHERE d.reader IN (SELECT value FROM json_each(?1)) AND d.recipient LIKE 'queue:%'`
	args := []any{jsonList(readers)}
	if taskIDs != nil {
		q += ` AND m.id IN (SELECT value FROM json_each(?2))`
		args = append(args, jsonList(taskIDs))
	}
	q += ` ORDER BY d.id`
	var out []*hub.Delivery
	err := db.write(ctx, "renew claims", func(ctx context.Context, c *sql.Conn) error {
		ids, ds, err := queryDeliveries(ctx, stmtOn{c, q}, false, args...)
		if err != nil || len(ds) == 0 {
			out = nil
			return err
		}
		if _, err := c.ExecContext(ctx, `UPDATE deliveries SET lease_until = max(lease_until, ?2)
			WHERE id IN (SELECT value FROM json_each(?1))`, jsonList(ids), nanos(until)); err != nil {
			return err
		}
		for _, d := range ds {
			if until.After(d.LeaseUntil) {
				d.LeaseUntil = until
			}
		}
		out = ds
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
