package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

const reservationCols = `id, workspace, agent, pattern, exclusive, reason, created_at, expires_at`

// liveReservations selects a workspace's reservations live at a time.
const liveReservations = `SELECT ` + reservationCols + ` FROM reservations
	WHERE workspace = ? AND expires_at > ? ORDER BY created_at, id`

// ChangeReservations runs fn on the writer, so it is serialised with every
// other write, the conflict check included. Reservations are committed without
// an fsync (see writeLazy): they coordinate live agents, and a power cut that
// loses the last of them has ended those agents' sessions too.
func (db *DB) ChangeReservations(ctx context.Context, ws string, now time.Time, fn func(live []*hub.Reservation) (hub.ReservationChange, error)) error {
	const op = "change reservations"
	return db.writeLazy(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		t := nanos(now)
		if _, err := db.stmts.wResExpire.ExecContext(ctx, ws, t); err != nil {
			return err
		}
		live, err := queryReservations(ctx, db.stmts.wResLive, ws, t)
		if err != nil {
			return err
		}
		ch, err := fn(live)
		if err != nil {
			return err
		}
		for _, id := range ch.Delete {
			if _, err := db.stmts.wResDelete.ExecContext(ctx, ws, id); err != nil {
				return err
			}
		}
		for _, r := range ch.Put {
			if r.Workspace != ws {
				return hub.Errorf(op, hub.Invalid, "reservation %s is of workspace %q, not %q", r.ID, r.Workspace, ws)
			}
			_, err := db.stmts.wResPut.ExecContext(ctx,
				r.ID, r.Workspace, r.Agent, r.Pattern, r.Exclusive, r.Reason, nanos(r.CreatedAt), nanos(r.ExpiresAt))
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// LiveReservations reads from the read pool: a conflict check of an edit or a
// commit never waits for the writer.
func (db *DB) LiveReservations(ctx context.Context, ws string, now time.Time) ([]*hub.Reservation, error) {
	rs, err := queryReservations(ctx, db.stmts.rResLive, ws, nanos(now))
	if err != nil {
		return nil, db.mapErr(ctx, "list reservations", err)
	}
	return rs, nil
}

func queryReservations(ctx context.Context, st *sql.Stmt, ws string, now int64) ([]*hub.Reservation, error) {
	rows, err := st.QueryContext(ctx, ws, now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*hub.Reservation
	for rows.Next() {
		var (
			r                hub.Reservation
			created, expires int64
		)
		if err := rows.Scan(&r.ID, &r.Workspace, &r.Agent, &r.Pattern, &r.Exclusive, &r.Reason, &created, &expires); err != nil {
			return nil, err
		}
		r.CreatedAt, r.ExpiresAt = fromNanos(created), fromNanos(expires)
		out = append(out, &r)
	}
	return out, rows.Err()
}
