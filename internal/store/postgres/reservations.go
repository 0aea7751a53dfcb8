package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
)

// File reservations (migration 7): one table for every daemon on the
// database, so that an agent on one machine sees the leases of another's.

const reservationCols = `id, workspace, agent, pattern, exclusive, reason, created_at, expires_at`

// reservationLock keys the advisory lock that serialises the changes of one
// workspace's reservations across daemons (with the workspace's hash).
const reservationLock = 0x52535256 // "RSRV"

// ChangeReservations runs fn under a transaction-scoped advisory lock of the
// workspace, so that the conflict check in fn holds when its result commits,
// whichever daemon runs it. Like the other lease state, it commits without
// waiting for the WAL flush (see DB.lazy).
func (db *DB) ChangeReservations(ctx context.Context, ws string, now time.Time, fn func(live []*hub.Reservation) (hub.ReservationChange, error)) error {
	const op = "change reservations"
	err := pgx.BeginFunc(ctx, db.lazy, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, reservationLock, ws); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM reservations WHERE workspace = $1 AND expires_at <= $2`, ws, now); err != nil {
			return err
		}
		live, err := queryReservations(ctx, tx, ws, now)
		if err != nil {
			return err
		}
		ch, err := fn(live)
		if err != nil {
			return err
		}
		if len(ch.Delete) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM reservations WHERE workspace = $1 AND id = ANY($2)`, ws, ch.Delete); err != nil {
				return err
			}
		}
		for _, r := range ch.Put {
			if r.Workspace != ws {
				return hub.Errorf(op, hub.Invalid, "reservation %s is of workspace %q, not %q", r.ID, r.Workspace, ws)
			}
			// node: the daemon that granted or renewed it (liveness.go).
			_, err := tx.Exec(ctx, `INSERT INTO reservations (`+reservationCols+`, node)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
				ON CONFLICT (id) DO UPDATE SET agent = excluded.agent, pattern = excluded.pattern,
					exclusive = excluded.exclusive, reason = excluded.reason, expires_at = excluded.expires_at,
					node = excluded.node`,
				r.ID, r.Workspace, r.Agent, r.Pattern, r.Exclusive, r.Reason, r.CreatedAt, r.ExpiresAt, nullText(db.node))
			if err != nil {
				return err
			}
		}
		return nil
	})
	return db.mapErr(ctx, op, err)
}

// LiveReservations returns the reservations of ws live at now, oldest first.
func (db *DB) LiveReservations(ctx context.Context, ws string, now time.Time) ([]*hub.Reservation, error) {
	rs, err := queryReservations(ctx, db.pool, ws, now)
	if err != nil {
		return nil, db.mapErr(ctx, "list reservations", err)
	}
	return rs, nil
}

func queryReservations(ctx context.Context, q querier, ws string, now time.Time) ([]*hub.Reservation, error) {
	rows, err := q.Query(ctx, `SELECT `+reservationCols+` FROM reservations
		WHERE workspace = $1 AND expires_at > $2 ORDER BY created_at, id`, ws, now)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanReservation)
}

// scanReservation reads a row of reservationCols.
func scanReservation(r pgx.CollectableRow) (*hub.Reservation, error) {
	var v hub.Reservation
	if err := r.Scan(&v.ID, &v.Workspace, &v.Agent, &v.Pattern, &v.Exclusive, &v.Reason, &v.CreatedAt, &v.ExpiresAt); err != nil {
		return nil, err
	}
	v.CreatedAt, v.ExpiresAt = v.CreatedAt.UTC(), v.ExpiresAt.UTC()
	return &v, nil
}
