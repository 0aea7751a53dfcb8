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

// CloseDoor closes an open door.
func (db *DB) CloseDoor(ctx context.Context, ws, id, reason string, at time.Time) (*hub.SessionDoor, error) {
	const op = "close door"
	var out *hub.SessionDoor
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		var err error
		out, err = scanDoor(c.QueryRowContext(ctx, `UPDATE doors SET closed_at = ?, close_reason = ?
			WHERE workspace = ? AND id = ? AND closed_at = 0 RETURNING `+doorCols, nanos(at), reason, ws, id))
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

// MarkSeen marks seen the copies a path reached before the session was
// seen with them.
func (db *DB) MarkSeen(ctx context.Context, ws, recipient string, via hub.WakePath, before, at time.Time) ([]*hub.Delivery, error) {
	const op = "mark seen"
	var out []*hub.Delivery
	// Lazy: a seen mark lost in a power cut loses no message.
	err := db.writeLazy(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		ids, ds, err := queryDeliveries(ctx, stmtOn{c, `SELECT d.id, ` + delCols + `
			FROM deliveries d JOIN messages m ON m.seq = d.message_seq
			WHERE d.workspace = ?1 AND d.recipient = ?2 AND d.seen_at = 0 AND d.woke_via LIKE 'door:%'
			AND (?3 = '' OR d.woke_via = ?3) AND d.woke_at <= ?4 AND d.bounced_at = 0 ORDER BY d.id`},
			false, ws, recipient, string(via), nanos(before))
		if err != nil || len(ds) == 0 {
			out = nil
			return err
		}
		if _, err := c.ExecContext(ctx, `UPDATE deliveries SET seen_at = ? WHERE id IN (SELECT value FROM json_each(?))`,
			nanos(at), jsonList(ids)); err != nil {
			return err
		}
		for _, d := range ds {
			d.SeenAt = at.UTC()
		}
		out = ds
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
