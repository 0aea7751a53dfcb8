package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// doorCols are a door's columns as scanDoor reads them.
const doorCols = `id, workspace, agent, kind, session, address, token, owner, host, uid,
	opened_at, refreshed_at, closed_at, close_reason`

func scanDoor(sc rowScanner) (*hub.SessionDoor, error) {
	var (
		d                      hub.SessionDoor
		kind                   string
		opened, fresh, closedN int64
	)
	if err := sc.Scan(&d.ID, &d.Workspace, &d.Agent, &kind, &d.Session, &d.Address, &d.Token, &d.Owner, &d.Host, &d.UID,
		&opened, &fresh, &closedN, &d.CloseReason); err != nil {
		return nil, err
	}
	d.Kind = hub.DoorKind(kind)
	d.OpenedAt, d.RefreshedAt, d.ClosedAt = fromNanos(opened), fromNanos(fresh), fromNanos(closedN)
	return &d, nil
}

// PutDoor opens a door or refreshes the one of its session.
func (db *DB) PutDoor(ctx context.Context, d *hub.SessionDoor) (*hub.SessionDoor, error) {
	const op = "put door"
	var out *hub.SessionDoor
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		var err error
		// A refresh without an owner (a hook) keeps the owner that will
		// close the door when its session ends.
		out, err = scanDoor(c.QueryRowContext(ctx, `INSERT INTO doors (`+doorCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, '')
			ON CONFLICT (workspace, agent, kind, session) DO UPDATE SET address = excluded.address,
				token = excluded.token, host = excluded.host, uid = excluded.uid,
				owner = CASE WHEN excluded.owner != '' THEN excluded.owner ELSE doors.owner END,
				refreshed_at = excluded.refreshed_at, closed_at = 0, close_reason = ''
			RETURNING `+doorCols,
			d.ID, d.Workspace, d.Agent, string(d.Kind), d.Session, d.Address, d.Token, d.Owner, d.Host, d.UID,
			nanos(d.OpenedAt), nanos(d.RefreshedAt)))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CloseDoor closes an open door, or ends a dormant one (a Codex door
// closed as not loaded) closed for another reason.
func (db *DB) CloseDoor(ctx context.Context, ws, id, reason string, at time.Time) (*hub.SessionDoor, error) {
	const op = "close door"
	var out *hub.SessionDoor
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		var err error
		out, err = scanDoor(c.QueryRowContext(ctx, `UPDATE doors SET closed_at = ?1, close_reason = ?2
			WHERE workspace = ?3 AND id = ?4 AND (closed_at = 0 OR kind = ?5 AND close_reason = ?6 AND ?2 != ?6) RETURNING `+doorCols,
			nanos(at), reason, ws, id, string(hub.DoorCodex), hub.DoorClosedNotLoaded))
		if err == sql.ErrNoRows {
			out, err = scanDoor(c.QueryRowContext(ctx, `SELECT `+doorCols+` FROM doors WHERE workspace = ? AND id = ?`, ws, id))
			if err == sql.ErrNoRows {
				return hub.Errorf(op, hub.NotFound, "no door %q in workspace %q", id, ws)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// maxDoors bounds a listing of doors: open ones are few, and old closed
// ones only say why mail bounced.
const maxDoors = 200

// Doors lists ws's doors, newest first.
func (db *DB) Doors(ctx context.Context, ws, agent string, withClosed bool) ([]*hub.SessionDoor, error) {
	const op = "list doors"
	rows, err := db.r.QueryContext(ctx, `SELECT `+doorCols+` FROM doors
		WHERE workspace = ?1 AND (?2 = '' OR agent = ?2) AND (?3 OR closed_at = 0)
		ORDER BY opened_at DESC, id DESC LIMIT ?4`, ws, agent, withClosed, maxDoors)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	defer rows.Close()
	var out []*hub.SessionDoor
	for rows.Next() {
		d, err := scanDoor(rows)
		if err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return out, nil
}

// letterWhere is, for each mark, which copies of a letter it changes
// (hub.Store.MarkLetter), and letterSet how.
var (
	letterWhere = map[hub.LetterMark]string{
		hub.MarkSeen:        `d.seen_at = 0 AND d.bounced_at = 0`,
		hub.MarkHeld:        `d.seen_at = 0 AND d.bounced_at = 0`,
		hub.MarkUnconfirmed: `d.seen_at = 0 AND d.bounced_at = 0 AND d.door_state = ''`,
		hub.MarkReleased:    `d.door_state = 'held' AND d.bounced_at = 0`,
		hub.MarkOrphaned:    `d.door_state = 'held' AND d.seen_at = 0 AND d.bounced_at = 0`,
		hub.MarkNotLoaded:   `d.read_at IS NULL AND d.reader IS NULL AND d.woke_via = ''`,
		hub.MarkDeclined:    `d.read_at IS NULL AND d.reader IS NULL`,
		hub.MarkBounced:     `d.read_at IS NULL AND d.reader IS NULL`,
	}
	// ?1 the time, ?2 the mark, ?3 the note, ?4 until, ?5 the letter, ?6 the rowids.
	letterSet = map[hub.LetterMark]string{
		hub.MarkSeen:        `seen_at = ?1, door_state = '', door_note = '', door_until = 0`,
		hub.MarkHeld:        `door_state = ?2, door_note = ?3, door_at = ?1, door_until = ?4`,
		hub.MarkUnconfirmed: `door_state = ?2, door_note = ?3, door_at = ?1, door_until = ?4`,
		hub.MarkNotLoaded:   `door_state = ?2, door_note = ?3, door_at = ?1, door_until = ?4`,
		hub.MarkReleased:    `door_state = '', door_note = '', door_at = ?1, door_until = 0`,
		hub.MarkOrphaned:    `door_state = 'unconfirmed', door_note = ?3, door_at = ?1, door_until = 0`,
		hub.MarkDeclined:    `read_at = ?1, bounced_at = ?1, bounce_reason = ?3, door_state = 'declined', door_note = ?3, door_at = ?1, door_until = 0`,
		hub.MarkBounced:     `read_at = ?1, bounced_at = ?1, bounce_reason = ?3, door_state = '', door_note = '', door_at = ?1, door_until = 0`,
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
	sel := `d.letter = ?3`
	arg := any(letter)
	if messageIDs != nil {
		sel, arg = `m.id IN (SELECT value FROM json_each(?3))`, jsonList(messageIDs)
	}
	var out []*hub.Delivery
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		ids, ds, err := queryDeliveries(ctx, stmtOn{c, `SELECT d.id, ` + delCols + `
			FROM deliveries d JOIN messages m ON m.seq = d.message_seq
			WHERE d.workspace = ?1 AND d.recipient = ?2 AND ` + sel + ` AND ` + where + ` ORDER BY d.id`},
			false, ws, recipient, arg)
		if err != nil || len(ds) == 0 {
			out = nil
			return err
		}
		if _, err := c.ExecContext(ctx, `UPDATE deliveries SET letter = ?5, `+letterSet[ch.Mark]+`
			WHERE id IN (SELECT value FROM json_each(?6))`,
			nanos(at), string(ch.Mark), ch.Note, nanos(ch.Until), letter, jsonList(ids)); err != nil {
			return err
		}
		for _, d := range ds {
			ch.Apply(d, letter, at)
		}
		out = ds
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Redeliver puts a bounced or declined copy back in its inbox, as new.
func (db *DB) Redeliver(ctx context.Context, ws, recipient, messageID string) (*hub.Delivery, error) {
	const op = "redeliver"
	var out *hub.Delivery
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		ids, ds, err := queryDeliveries(ctx, stmtOn{c, `SELECT d.id, ` + delCols + `
			FROM deliveries d JOIN messages m ON m.seq = d.message_seq
			WHERE m.id = ?1 AND m.workspace = ?2 AND d.recipient = ?3 AND d.bounced_at > 0`},
			false, messageID, ws, recipient)
		if err != nil {
			return err
		}
		if len(ds) == 0 {
			return hub.Errorf(op, hub.NotFound, "%s has no bounced or declined copy of message %q", recipient, messageID)
		}
		if _, err := c.ExecContext(ctx, `UPDATE deliveries SET read_at = NULL, bounced_at = 0, bounce_reason = '',
			woke_via = '', woke_at = 0, seen_at = 0, letter = '', door_state = '', door_note = '', door_at = 0, door_until = 0
			WHERE id = ?`, ids[0]); err != nil {
			return err
		}
		d := ds[0]
		d.ReadAt, d.BouncedAt, d.BounceReason, d.WokeVia, d.WokeAt, d.SeenAt = time.Time{}, time.Time{}, "", "", time.Time{}, time.Time{}
		d.Letter, d.Door, d.DoorNote, d.DoorAt, d.DoorUntil = "", "", "", time.Time{}, time.Time{}
		d.State = hub.Queued
		if d.Count > 0 {
			d.State = hub.Redelivered
		}
		out = d
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Bounce takes copies still in the inbox out of it, bounced.
func (db *DB) Bounce(ctx context.Context, ws, recipient string, messageIDs []string, reason string, at time.Time) ([]*hub.Delivery, error) {
	const op = "bounce"
	if len(messageIDs) == 0 {
		return nil, nil
	}
	var out []*hub.Delivery
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		ids, ds, err := queryDeliveries(ctx, stmtOn{c, `SELECT d.id, ` + delCols + `
			FROM messages m JOIN deliveries d ON d.message_seq = m.seq
			WHERE m.id IN (SELECT value FROM json_each(?1)) AND m.workspace = ?2 AND d.recipient = ?3
			AND d.read_at IS NULL AND d.reader IS NULL ORDER BY d.id`}, false, jsonList(messageIDs), ws, recipient)
		if err != nil || len(ds) == 0 {
			out = nil
			return err
		}
		if _, err := c.ExecContext(ctx, `UPDATE deliveries SET read_at = ?1, bounced_at = ?1, bounce_reason = ?2
			WHERE id IN (SELECT value FROM json_each(?3))`, nanos(at), reason, jsonList(ids)); err != nil {
			return err
		}
		for _, d := range ds {
			d.State, d.ReadAt, d.BouncedAt, d.BounceReason = hub.Bounced, at.UTC(), at.UTC(), reason
		}
		out = ds
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Bounced lists bounced copies, newest first.
func (db *DB) Bounced(ctx context.Context, ws, sender string, limit int) ([]*hub.Delivery, error) {
	_, ds, err := queryDeliveries(ctx, stmtOn{db.r, `SELECT d.id, ` + delCols + `, ` + msgCols + `
		FROM deliveries d JOIN messages m ON m.seq = d.message_seq
		WHERE d.workspace = ?1 AND d.bounced_at > 0 AND (?2 = '' OR m.sender = ?2)
		ORDER BY d.bounced_at DESC, d.id DESC LIMIT ?3`}, true, ws, sender, limit)
	if err != nil {
		return nil, db.mapErr(ctx, "list bounced", err)
	}
	return ds, nil
}
