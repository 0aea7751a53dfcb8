package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
)

// doorCols are a door's columns as scanDoor reads them.
const doorCols = `id, workspace, agent, kind, session, address, token, owner, host, uid,
	opened_at, refreshed_at, closed_at, close_reason`

func scanDoor(row pgx.Row) (*hub.SessionDoor, error) {
	var (
		d      hub.SessionDoor
		kind   string
		closed *time.Time
	)
	if err := row.Scan(&d.ID, &d.Workspace, &d.Agent, &kind, &d.Session, &d.Address, &d.Token, &d.Owner, &d.Host, &d.UID,
		&d.OpenedAt, &d.RefreshedAt, &closed, &d.CloseReason); err != nil {
		return nil, err
	}
	d.Kind = hub.DoorKind(kind)
	d.OpenedAt, d.RefreshedAt = d.OpenedAt.UTC(), d.RefreshedAt.UTC()
	if closed != nil {
		d.ClosedAt = closed.UTC()
	}
	return &d, nil
}

// PutDoor opens a door or refreshes the one of its session.
func (db *DB) PutDoor(ctx context.Context, d *hub.SessionDoor) (*hub.SessionDoor, error) {
	// A refresh without an owner (a hook) keeps the owner that will close
	// the door when its session ends.
	out, err := scanDoor(db.pool.QueryRow(ctx, `INSERT INTO doors (`+doorCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL, '')
		ON CONFLICT (workspace, agent, kind, session) DO UPDATE SET address = excluded.address,
			token = excluded.token, host = excluded.host, uid = excluded.uid,
			owner = CASE WHEN excluded.owner <> '' THEN excluded.owner ELSE doors.owner END,
			refreshed_at = excluded.refreshed_at, closed_at = NULL, close_reason = ''
		RETURNING `+doorCols,
		d.ID, d.Workspace, d.Agent, string(d.Kind), d.Session, d.Address, d.Token, d.Owner, d.Host, d.UID,
		d.OpenedAt, d.RefreshedAt))
	if err != nil {
		return nil, db.mapErr(ctx, "put door", err)
	}
	return out, nil
}

// CloseDoor closes an open door, or ends a dormant one (a Codex door
// closed as not loaded) closed for another reason.
func (db *DB) CloseDoor(ctx context.Context, ws, id, reason string, at time.Time) (*hub.SessionDoor, error) {
	const op = "close door"
	out, err := scanDoor(db.pool.QueryRow(ctx, `UPDATE doors SET closed_at = $1, close_reason = $2
		WHERE workspace = $3 AND id = $4 AND (closed_at IS NULL OR kind = $5 AND close_reason = $6 AND $2 <> $6) RETURNING `+doorCols,
		at, reason, ws, id, string(hub.DoorCodex), hub.DoorClosedNotLoaded))
	if errors.Is(err, pgx.ErrNoRows) {
		out, err = scanDoor(db.pool.QueryRow(ctx, `SELECT `+doorCols+` FROM doors WHERE workspace = $1 AND id = $2`, ws, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, hub.Errorf(op, hub.NotFound, "no door %q in workspace %q", id, ws)
		}
	}
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return out, nil
}

// maxDoors bounds a listing of doors: open ones are few, and old closed
// ones only say why mail bounced.
const maxDoors = 200

// Doors lists ws's doors, newest first.
func (db *DB) Doors(ctx context.Context, ws, agent string, withClosed bool) ([]*hub.SessionDoor, error) {
	const op = "list doors"
	rows, err := db.pool.Query(ctx, `SELECT `+doorCols+` FROM doors
		WHERE workspace = $1 AND ($2 = '' OR agent = $2) AND ($3 OR closed_at IS NULL)
		ORDER BY opened_at DESC, id DESC LIMIT $4`, ws, agent, withClosed, maxDoors)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*hub.SessionDoor, error) { return scanDoor(r) })
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return ds, nil
}

// letterWhere is, for each mark, which copies of a letter it changes
// (hub.Store.MarkLetter), and letterSet how.
var (
	letterWhere = map[hub.LetterMark]string{
		hub.MarkSeen:        `d.seen_at IS NULL AND d.bounced_at IS NULL`,
		hub.MarkHeld:        `d.seen_at IS NULL AND d.bounced_at IS NULL`,
		hub.MarkUnconfirmed: `d.seen_at IS NULL AND d.bounced_at IS NULL AND d.door_state = ''`,
		hub.MarkReleased:    `d.door_state = 'held' AND d.bounced_at IS NULL`,
		hub.MarkOrphaned:    `d.door_state = 'held' AND d.seen_at IS NULL AND d.bounced_at IS NULL`,
		hub.MarkNotLoaded:   `d.read_at IS NULL AND d.reader IS NULL AND d.woke_via = ''`,
		hub.MarkDeclined:    `d.read_at IS NULL AND d.reader IS NULL`,
		hub.MarkBounced:     `d.read_at IS NULL AND d.reader IS NULL`,
	}
	// From p: at the time, mark, note, until (NULL if none).
	letterSet = map[hub.LetterMark]string{
		hub.MarkSeen:        `seen_at = p.at, door_state = '', door_note = '', door_until = NULL`,
		hub.MarkHeld:        `door_state = p.mark, door_note = p.note, door_at = p.at, door_until = p.until`,
		hub.MarkUnconfirmed: `door_state = p.mark, door_note = p.note, door_at = p.at, door_until = p.until`,
		hub.MarkNotLoaded:   `door_state = p.mark, door_note = p.note, door_at = p.at, door_until = p.until`,
		hub.MarkReleased:    `door_state = '', door_note = '', door_at = p.at, door_until = NULL`,
		hub.MarkOrphaned:    `door_state = 'unconfirmed', door_note = p.note, door_at = p.at, door_until = NULL`,
		hub.MarkDeclined:    `read_at = p.at, bounced_at = p.at, bounce_reason = p.note, door_state = 'declined', door_note = p.note, door_at = p.at, door_until = NULL`,
		hub.MarkBounced:     `read_at = p.at, bounced_at = p.at, bounce_reason = p.note, door_state = '', door_note = '', door_at = p.at, door_until = NULL`,
	}
)

// MarkLetter applies what the client said of a letter to the copies it
// told of.
func (db *DB) MarkLetter(ctx context.Context, ws, recipient, letter string, messageIDs []string, ch hub.LetterChange, at time.Time) ([]*hub.Delivery, error) {
	const op = "mark letter"
	where, ok := letterWhere[ch.Mark]
	if !ok {
		return nil, hub.Errorf(op, hub.Invalid, "invalid letter mark %q", ch.Mark)
	}
	var until *time.Time
	if !ch.Until.IsZero() {
		until = &ch.Until
	}
	sel := `d.letter = $3`
	if messageIDs != nil {
		sel = `d.message_seq IN (SELECT seq FROM messages WHERE workspace = $1 AND id = ANY(p.ids))`
	}
	ds, err := db.queryDeliveries(ctx, op, false, `WITH p AS (
			SELECT $4::timestamptz AS at, $5::text AS mark, $6::text AS note, $7::timestamptz AS until, $8::text[] AS ids
		), d AS (
			UPDATE deliveries d SET letter = $3, `+letterSet[ch.Mark]+` FROM p
			WHERE d.workspace = $1 AND d.recipient = $2 AND `+sel+` AND `+where+`
			RETURNING d.*
		)
		SELECT `+delCols+` FROM d JOIN messages m ON m.seq = d.message_seq ORDER BY d.id`,
		ws, recipient, letter, at, string(ch.Mark), ch.Note, until, messageIDs)
	if err != nil {
		return nil, err
	}
	return ds, nil
}

// Redeliver puts a bounced or declined copy back in its inbox, as new.
func (db *DB) Redeliver(ctx context.Context, ws, recipient, messageID string) (*hub.Delivery, error) {
	const op = "redeliver"
	ds, err := db.queryDeliveries(ctx, op, false, `WITH d AS (
			UPDATE deliveries d SET read_at = NULL, bounced_at = NULL, bounce_reason = '',
			woke_via = '', woke_at = NULL, seen_at = NULL, letter = '', door_state = '', door_note = '', door_at = NULL, door_until = NULL
			FROM messages m WHERE m.seq = d.message_seq AND m.id = $1 AND m.workspace = $2
			AND d.workspace = $2 AND d.recipient = $3 AND d.bounced_at IS NOT NULL
			RETURNING d.*
		)
		SELECT `+delCols+` FROM d JOIN messages m ON m.seq = d.message_seq`, messageID, ws, recipient)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, hub.Errorf(op, hub.NotFound, "%s has no bounced or declined copy of message %q", recipient, messageID)
	}
	return ds[0], nil
}

// maxExpiries bounds one sweep's expired messages; the next sweep takes
// the rest.
const maxExpiries = 1000

// DueExpiries reports, once each, the messages whose time to live ended,
// with their copies that nothing reached. The update locks the rows, so a
// concurrent call of another daemon waits, then finds them reported.
func (db *DB) DueExpiries(ctx context.Context, now time.Time) ([]*hub.Delivery, error) {
	return db.queryDeliveries(ctx, "due expiries", true, `WITH m AS (
			UPDATE messages m SET expiry_reported = true
			WHERE m.seq IN (SELECT seq FROM messages WHERE expires_at IS NOT NULL AND NOT expiry_reported
				AND expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
			RETURNING m.*
		)
		SELECT `+delCols+`, `+msgCols+` FROM m JOIN deliveries d ON d.message_seq = m.seq
		WHERE d.read_at IS NULL AND d.reader IS NULL AND d.delivery_count = 0 AND d.woke_via = ''
		ORDER BY d.workspace, d.recipient, d.id`, now, maxExpiries)
}

// Bounce takes copies still in the inbox out of it, bounced.
func (db *DB) Bounce(ctx context.Context, ws, recipient string, messageIDs []string, reason string, at time.Time) ([]*hub.Delivery, error) {
	if len(messageIDs) == 0 {
		return nil, nil
	}
	return db.queryDeliveries(ctx, "bounce", false, `WITH d AS (
			UPDATE deliveries d SET read_at = $4, bounced_at = $4, bounce_reason = $5
			FROM messages m WHERE m.seq = d.message_seq
			AND m.id = ANY($1) AND m.workspace = $2 AND d.recipient = $3 AND d.read_at IS NULL AND d.reader IS NULL
			RETURNING d.*
		)
		SELECT `+delCols+` FROM d JOIN messages m ON m.seq = d.message_seq ORDER BY d.id`,
		messageIDs, ws, recipient, at, reason)
}

// Bounced lists bounced copies, newest first.
func (db *DB) Bounced(ctx context.Context, ws, sender string, limit int) ([]*hub.Delivery, error) {
	return db.queryDeliveries(ctx, "list bounced", true, `SELECT `+delCols+`, `+msgCols+`
		FROM deliveries d JOIN messages m ON m.seq = d.message_seq
		WHERE d.workspace = $1 AND d.bounced_at IS NOT NULL AND ($2 = '' OR m.sender = $2)
		ORDER BY d.bounced_at DESC, d.id DESC LIMIT $3`, ws, sender, limit)
}
