package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/parley-dev/parley/internal/hub"
)

// delCols are a delivery's columns as scanDelivery reads them, for deliveries
// aliased d joined with their messages aliased m.
const delCols = `d.workspace, d.recipient, m.id, d.reader, d.lease_until, d.delivered_at,
	d.delivery_count, d.read_at, d.acked_at, d.woke_via, d.woke_at, d.seen_at, d.bounced_at, d.bounce_reason,
	d.letter, d.door_state, d.door_note, d.door_at, d.door_until`

// scanDelivery reads delCols, then msgCols if withMessage.
func scanDelivery(row pgx.Row, withMessage bool) (*hub.Delivery, error) {
	var (
		d                                 hub.Delivery
		reader                            *string
		lease, delivered, readAt, ackedAt *time.Time
		woke, seen, bounced               *time.Time
		doorAt, doorUntil                 *time.Time
		dest                              = []any{&d.Workspace, &d.Recipient, &d.MessageID, &reader, &lease, &delivered, &d.Count, &readAt, &ackedAt, &d.WokeVia, &woke,
			&seen, &bounced, &d.BounceReason, &d.Letter, &d.Door, &d.DoorNote, &doorAt, &doorUntil}
		err error
	)
	if withMessage {
		d.Message, err = scanMessage(row, dest...)
	} else {
		err = row.Scan(dest...)
	}
	if err != nil {
		return nil, err
	}
	utc := func(t *time.Time) time.Time {
		if t == nil {
			return time.Time{}
		}
		return t.UTC()
	}
	d.LeaseUntil, d.DeliveredAt, d.ReadAt, d.AckedAt, d.WokeAt = utc(lease), utc(delivered), utc(readAt), utc(ackedAt), utc(woke)
	d.SeenAt, d.BouncedAt = utc(seen), utc(bounced)
	d.DoorAt, d.DoorUntil = utc(doorAt), utc(doorUntil)
	if reader != nil {
		d.Reader = *reader
	}
	switch {
	case ackedAt != nil:
		d.State = hub.Acked
	case bounced != nil && d.Door == hub.DoorDeclined:
		d.State = hub.Declined
	case bounced != nil:
		d.State = hub.Bounced
	case readAt != nil:
		d.State = hub.Read
	case reader != nil:
		d.State = hub.Delivered
	case d.Count > 0:
		d.State = hub.Redelivered
	default:
		d.State = hub.Queued
	}
	return &d, nil
}

// queryDeliveries runs a query selecting delCols (and msgCols if withMessage).
func (db *DB) queryDeliveries(ctx context.Context, op string, withMessage bool, q string, args ...any) ([]*hub.Delivery, error) {
	return db.queryDeliveriesOn(ctx, db.pool, op, withMessage, q, args...)
}

// queryDeliveriesOn is queryDeliveries on the pool p (db.lazy for leases and
// read marks).
func (db *DB) queryDeliveriesOn(ctx context.Context, p *pgxpool.Pool, op string, withMessage bool, q string, args ...any) ([]*hub.Delivery, error) {
	rows, err := p.Query(ctx, q, args...)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*hub.Delivery, error) { return scanDelivery(r, withMessage) })
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return ds, nil
}

// nullTime binds the zero time as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// nullText binds the empty string as NULL.
func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// inboxWhere selects recipient's inbox deliveries ($1 workspace, $2 recipient,
// $3 max rank), of thread $5 and stored after message $6 when they are not
// empty. It repeats the partial index's condition so that the planner uses it.
const inboxWhere = `d.workspace = $1 AND d.recipient = $2 AND d.read_at IS NULL AND d.reader IS NULL
	AND d.rank <= $3 AND ($5::text = '' OR m.thread_id = $5)
	AND ($6::text = '' OR m.seq > (SELECT seq FROM messages WHERE id = $6))`

// take hands out the first inbox deliveries in one statement, skipping rows a
// concurrent take holds, so two never return the same delivery and neither
// waits for the other. A take for a reply admits only the repliers' ($13,
// NULL: anyone) and the result of the task $14 (hub.TakeQuery.Repliers).
const take = `WITH picked AS (
		SELECT d.id FROM deliveries d JOIN messages m ON m.seq = d.message_seq
		WHERE ` + inboxWhere + `
		AND ($13::text[] IS NULL OR m.sender = ANY($13) OR ($14::text <> '' AND m.task_of = $14))
		ORDER BY d.rank, d.id LIMIT $4
		FOR UPDATE OF d SKIP LOCKED
	), d AS (
		UPDATE deliveries d SET reader = $7, lease_until = $8, delivered_at = $9,
			delivery_count = d.delivery_count + 1, read_at = $10,
			-- The first path that reaches the recipient stays its wake path.
			woke_via = CASE WHEN d.woke_via = '' THEN $11 ELSE d.woke_via END,
			woke_at = CASE WHEN d.woke_via = '' AND $11 <> '' THEN $9 ELSE d.woke_at END,
			lease_node = CASE WHEN $7::text IS NULL THEN NULL ELSE $12 END
		FROM picked WHERE d.id = picked.id
		RETURNING d.*
	)
	SELECT ` + delCols + `, ` + msgCols + ` FROM d JOIN messages m ON m.seq = d.message_seq
	ORDER BY d.rank, d.id`

// Take hands inbox deliveries to a reader (see hub.Store), after it
// confirms q.Confirm.
func (db *DB) Take(ctx context.Context, q hub.TakeQuery) (taken, confirmed []*hub.Delivery, err error) {
	now := q.Now
	if now.IsZero() {
		now = time.Now()
	}
	if len(q.Confirm) > 0 && q.Reader != "" {
		if confirmed, err = db.Confirm(ctx, q.Reader, q.Confirm, now); err != nil {
			return nil, nil, err
		}
	}
	if q.Limit <= 0 {
		return nil, confirmed, nil
	}
	var readAt, lease *time.Time
	if q.Reader == "" {
		readAt = &now
	} else {
		lease = nullTime(q.LeaseUntil)
	}
	taken, err = db.queryDeliveriesOn(ctx, db.lazy, "take", true, take, q.Workspace, q.Recipient, q.MaxRank, q.Limit,
		q.Thread, q.After, nullText(q.Reader), lease, now, readAt, string(q.Via), db.node, q.Repliers, q.ResultOf)
	if err != nil {
		// What was confirmed stays confirmed: report it.
		return nil, confirmed, err
	}
	return taken, confirmed, nil
}

// Unread counts recipient's inbox deliveries with rank <= maxRank.
func (db *DB) Unread(ctx context.Context, ws, recipient string, maxRank int) (int, error) {
	var n int
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM deliveries
		WHERE workspace = $1 AND recipient = $2 AND read_at IS NULL AND reader IS NULL AND rank <= $3`,
		ws, recipient, maxRank).Scan(&n)
	if err != nil {
		return 0, db.mapErr(ctx, "count unread", err)
	}
	return n, nil
}

// UnreadByRecipient counts the inbox deliveries of every recipient of ws.
func (db *DB) UnreadByRecipient(ctx context.Context, ws string, maxRank int) (map[string]int, error) {
	const op = "count unread"
	rows, err := db.pool.Query(ctx, `SELECT recipient, count(*) FROM deliveries
		WHERE workspace = $1 AND read_at IS NULL AND reader IS NULL AND rank <= $2 GROUP BY recipient`, ws, maxRank)
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
	return db.queryDeliveries(ctx, "peek", true, `SELECT `+delCols+`, `+msgCols+`
		FROM deliveries d JOIN messages m ON m.seq = d.message_seq
		WHERE `+inboxWhere+` ORDER BY d.rank, d.id LIMIT $4`, ws, recipient, hub.Low.Rank(), limit, "", "")
}

// Confirm marks read the deliveries leased to reader.
func (db *DB) Confirm(ctx context.Context, reader string, messageIDs []string, at time.Time) ([]*hub.Delivery, error) {
	if reader == "" {
		return nil, hub.Errorf("confirm", hub.Invalid, "no reader")
	}
	return db.queryDeliveriesOn(ctx, db.lazy, "confirm", false, confirm, reader, messageIDs, at)
}

// confirm marks read, at $3, the deliveries leased to reader $1 (of the
// messages $2, or all) handed out no later than $3, and returns them.
const confirm = `WITH d AS (
		UPDATE deliveries d SET read_at = $3, reader = NULL, lease_until = NULL
		FROM messages m WHERE m.seq = d.message_seq
		AND d.reader = $1 AND ($2::text[] IS NULL OR m.id = ANY($2)) AND d.delivered_at <= $3
		RETURNING d.*
	)
	SELECT ` + delCols + ` FROM d JOIN messages m ON m.seq = d.message_seq ORDER BY d.id`

// CompleteTask confirms the task's copy held by the first of readers that
// holds it and stores its result, reply, for recipient, in one transaction
// that also tells the other daemons of the reply (hub.Store).
func (db *DB) CompleteTask(ctx context.Context, readers []string, taskID string, reply *hub.Message, recipient string) ([]*hub.Delivery, error) {
	const op = "complete task"
	p, err := db.newSend(reply, []string{recipient}, nil)
	if err != nil {
		return nil, err
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var held []*hub.Delivery
	for _, reader := range readers {
		if reader == "" {
			continue
		}
		rows, err := tx.Query(ctx, confirm, reader, []string{taskID}, reply.CreatedAt)
		if err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		held, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*hub.Delivery, error) { return scanDelivery(r, false) })
		if err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		if len(held) > 0 {
			break
		}
	}
	if len(held) == 0 {
		return nil, nil // nobody holds it: nothing written
	}
	batch := []*pendingSend{p}
	var b pgx.Batch
	newWS := db.queueInsert(&b, batch)
	b.Queue(notify, channel, db.sendEventPayloads(batch))
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	for _, ws := range newWS {
		db.markKnown(ws)
	}
	return held, nil
}

// Release puts leased deliveries back in their inboxes.
func (db *DB) Release(ctx context.Context, q hub.ReleaseQuery) ([]*hub.Delivery, error) {
	return db.queryDeliveries(ctx, "release", false, `WITH d AS (
			UPDATE deliveries d SET reader = NULL, lease_until = NULL
			FROM messages m WHERE m.seq = d.message_seq AND d.reader IS NOT NULL
			AND ($1::text = '' OR d.reader = $1)
			AND ($2::text[] IS NULL OR m.id = ANY($2))
			AND ($3::timestamptz IS NULL OR d.lease_until <= $3)
			AND (NOT $4 OR d.lease_node = $5)
			RETURNING d.*
		)
		SELECT `+delCols+` FROM d JOIN messages m ON m.seq = d.message_seq ORDER BY d.id`,
		q.Reader, q.MessageIDs, nullTime(q.Expired), q.Mine, db.node)
}

// Reopen puts handed-out, unacked copies back in the inbox.
func (db *DB) Reopen(ctx context.Context, ws, recipient string, messageIDs []string) ([]*hub.Delivery, error) {
	if len(messageIDs) == 0 {
		return nil, nil
	}
	return db.queryDeliveries(ctx, "reopen", false, `WITH d AS (
			UPDATE deliveries d SET read_at = NULL, reader = NULL, lease_until = NULL
			FROM messages m WHERE m.seq = d.message_seq
			AND m.id = ANY($1) AND m.workspace = $2 AND d.recipient = $3 AND d.acked_at IS NULL
			AND d.bounced_at IS NULL AND (d.reader IS NOT NULL OR d.read_at IS NOT NULL)
			RETURNING d.*
		)
		SELECT `+delCols+` FROM d JOIN messages m ON m.seq = d.message_seq ORDER BY d.id`,
		messageIDs, ws, recipient)
}

// Ack marks recipient's deliveries of the messages acked.
func (db *DB) Ack(ctx context.Context, ws, recipient string, messageIDs []string, at time.Time) ([]*hub.Delivery, error) {
	if len(messageIDs) == 0 {
		return nil, nil
	}
	return db.queryDeliveries(ctx, "ack", false, `WITH d AS (
			UPDATE deliveries d SET acked_at = $4, read_at = coalesce(d.read_at, $4),
				reader = NULL, lease_until = NULL
			FROM messages m WHERE m.seq = d.message_seq
			AND m.id = ANY($1) AND m.workspace = $2 AND d.recipient = $3 AND d.acked_at IS NULL
			RETURNING d.*
		)
		SELECT `+delCols+` FROM d JOIN messages m ON m.seq = d.message_seq ORDER BY m.seq`,
		messageIDs, ws, recipient, at)
}

// Deliveries returns every recipient's delivery of the message.
func (db *DB) Deliveries(ctx context.Context, ws, messageID string) ([]*hub.Delivery, error) {
	const op = "get deliveries"
	ds, err := db.queryDeliveries(ctx, op, false, `SELECT `+delCols+`
		FROM messages m JOIN deliveries d ON d.message_seq = m.seq
		WHERE m.id = $1 AND m.workspace = $2 ORDER BY d.recipient`, messageID, ws)
	if err != nil || len(ds) > 0 {
		return ds, err
	}
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM messages WHERE id = $1 AND workspace = $2)`,
		messageID, ws).Scan(&exists); err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	if !exists {
		return nil, hub.Errorf(op, hub.NotFound, "no message %s in workspace %q", messageID, ws)
	}
	return nil, nil
}

// overdueCols follow msgCols in an overdue query: the recipients that have
// not acked, sorted.
const overdueCols = `array(SELECT recipient FROM deliveries p
	WHERE p.message_seq = m.seq AND p.acked_at IS NULL ORDER BY recipient)`

func (db *DB) queryOverdue(ctx context.Context, op, q string, args ...any) ([]*hub.Overdue, error) {
	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*hub.Overdue, error) {
		var od hub.Overdue
		m, err := scanMessage(r, &od.Pending)
		od.Message = m
		return &od, err
	})
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	var out []*hub.Overdue
	for _, od := range all {
		if len(od.Pending) > 0 {
			out = append(out, od)
		}
	}
	return out, nil
}

// DueAcks reports, once each, the messages whose ack deadline passed. The
// update locks the rows, so a concurrent call of another daemon waits, then
// finds them reported.
func (db *DB) DueAcks(ctx context.Context, now time.Time) ([]*hub.Overdue, error) {
	return db.queryOverdue(ctx, "due acks", `WITH m AS (
			UPDATE messages m SET ack_reported = true
			WHERE m.ack_deadline IS NOT NULL AND NOT m.ack_reported AND m.ack_deadline <= $1
			RETURNING m.*
		)
		SELECT `+overdueCols+`, `+msgCols+` FROM m ORDER BY m.ack_deadline, m.seq`, now)
}

// Overdue lists messages past their ack deadline with recipients that have not acked.
func (db *DB) Overdue(ctx context.Context, ws, sender string, now time.Time) ([]*hub.Overdue, error) {
	return db.queryOverdue(ctx, "list overdue", `SELECT `+overdueCols+`, `+msgCols+` FROM messages m
		WHERE m.workspace = $1 AND m.ack_deadline IS NOT NULL AND m.ack_deadline <= $2
		AND ($3::text = '' OR m.sender = $3)
		AND EXISTS (SELECT 1 FROM deliveries d WHERE d.message_seq = m.seq AND d.acked_at IS NULL)
		ORDER BY m.ack_deadline, m.seq`, ws, now, sender)
}

// OpenTasks returns the copies of ws's tasks that are not done: queued,
// redelivered or claimed deliveries to a queue, by queue, then inbox order.
func (db *DB) OpenTasks(ctx context.Context, ws string, limit int) ([]*hub.Delivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	// starts_with, not a range: a database's collation may order the
	// punctuation of 'queue:' and 'queue;' any way it likes.
	return db.queryDeliveries(ctx, "open tasks", true, `SELECT `+delCols+`, `+msgCols+`
		FROM deliveries d JOIN messages m ON m.seq = d.message_seq
		WHERE d.workspace = $1 AND starts_with(d.recipient, 'queue:') AND d.read_at IS NULL
		ORDER BY d.recipient, d.rank, d.id LIMIT $2`, ws, limit)
}

// Unacked lists sender's messages that asked for an ack not all have given.
func (db *DB) Unacked(ctx context.Context, ws, sender string, limit int) ([]*hub.Overdue, error) {
	if limit <= 0 {
		return nil, nil
	}
	return db.queryOverdue(ctx, "unacked", `SELECT `+overdueCols+`, `+msgCols+` FROM messages m
		WHERE m.workspace = $1 AND m.sender = $2 AND m.ack_required
		AND EXISTS (SELECT 1 FROM deliveries d WHERE d.message_seq = m.seq AND d.acked_at IS NULL)
		ORDER BY m.seq LIMIT $3`, ws, sender, limit)
}

// ClearInbox marks every delivery of recipient that is not read yet read.
func (db *DB) ClearInbox(ctx context.Context, ws, recipient string) (int, error) {
	tag, err := db.pool.Exec(ctx, `UPDATE deliveries SET read_at = now(), reader = NULL, lease_until = NULL
		WHERE workspace = $1 AND recipient = $2 AND read_at IS NULL`, ws, recipient)
	if err != nil {
		return 0, db.mapErr(ctx, "clear inbox", err)
	}
	return int(tag.RowsAffected()), nil
}

// NoteWake records the wake path of inbox deliveries that have none.
func (db *DB) NoteWake(ctx context.Context, ws, recipient string, messageIDs []string, via hub.WakePath, letter string, at time.Time) (int, error) {
	if len(messageIDs) == 0 {
		return 0, nil
	}
	tag, err := db.lazy.Exec(ctx, `UPDATE deliveries d SET woke_via = $1, woke_at = $2,
		letter = CASE WHEN $6 != '' THEN $6 ELSE d.letter END, door_state = '', door_note = '', door_at = NULL, door_until = NULL
		FROM messages m WHERE m.seq = d.message_seq AND m.workspace = $3 AND m.id = ANY($5)
		AND d.workspace = $3 AND d.recipient = $4 AND d.woke_via = '' AND d.read_at IS NULL AND d.reader IS NULL`,
		string(via), at, ws, recipient, messageIDs, letter)
	if err != nil {
		return 0, db.mapErr(ctx, "note wake", err)
	}
	return int(tag.RowsAffected()), nil
}

// RenewClaims extends the leases of the claimed tasks readers hold, never
// shortening one; the copies are this daemon's to hold from now on (a
// holder that renews through another daemon lives through that one).
func (db *DB) RenewClaims(ctx context.Context, readers, taskIDs []string, until time.Time) ([]*hub.Delivery, error) {
	if len(readers) == 0 {
		return nil, nil
	}
	return db.queryDeliveries(ctx, "renew claims", false, `WITH d AS (
			UPDATE deliveries d SET lease_until = greatest(d.lease_until, $3), lease_node = $4
			FROM messages m WHERE m.seq = d.message_seq AND d.reader = ANY($1)
			AND d.recipient LIKE 'queue:%' AND d.read_at IS NULL
			AND ($2::text[] IS NULL OR m.id = ANY($2))
			RETURNING d.*
		)
		SELECT `+delCols+` FROM d JOIN messages m ON m.seq = d.message_seq ORDER BY d.id`,
		readers, taskIDs, until, db.node)
}
