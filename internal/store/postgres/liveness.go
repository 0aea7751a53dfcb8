package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
)

// Daemons' heartbeats (migration 16, hub.LivenessStore): each daemon beats in
// the daemons table, by the server's clock; a survivor reclaims what a daemon
// that missed its beats held. The tables name the holder by node: leased
// copies (deliveries.lease_node), reservations and agents (node).

var _ hub.LivenessStore = (*DB)(nil)

// Beat records that this daemon (its node) lives. A beat that must insert
// the daemon's row after its first found it reclaimed meanwhile.
func (db *DB) Beat(ctx context.Context, deadAfter time.Duration) (reclaimed bool, err error) {
	const op = "heartbeat"
	var inserted bool
	// The lazy pool: a beat lost in a power cut is one beat late.
	err = db.lazy.QueryRow(ctx, `INSERT INTO daemons (node, host, started_at, beat_at, dead_after)
		VALUES ($1, $2, now(), now(), $3)
		ON CONFLICT (node) DO UPDATE SET beat_at = now(), dead_after = excluded.dead_after, host = excluded.host
		RETURNING xmax = 0`, db.node, db.host, deadAfter).Scan(&inserted)
	if err != nil {
		return false, db.mapErr(ctx, op, err)
	}
	first := !db.beaten.Swap(true)
	return inserted && !first, nil
}

// Reclaim gives back what the daemons late for their beats held, each in a
// transaction of its own that ends with the daemon's row deleted: a daemon
// reclaimed by one survivor is skipped by the others (SKIP LOCKED while it
// runs, gone after).
func (db *DB) Reclaim(ctx context.Context) ([]*hub.Reclaimed, error) {
	const op = "reclaim"
	var out []*hub.Reclaimed
	for {
		r, err := db.reclaimOne(ctx)
		if err != nil {
			return out, db.mapErr(ctx, op, err)
		}
		if r == nil {
			return out, nil
		}
		out = append(out, r)
	}
}

func (db *DB) reclaimOne(ctx context.Context) (*hub.Reclaimed, error) {
	var r *hub.Reclaimed
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var node string
		var beat time.Time
		err := tx.QueryRow(ctx, `SELECT node, beat_at FROM daemons
			WHERE node <> $1 AND beat_at < now() - dead_after
			ORDER BY beat_at LIMIT 1 FOR UPDATE SKIP LOCKED`, db.node).Scan(&node, &beat)
		if err == pgx.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		r = &hub.Reclaimed{Node: node, LastBeat: beat.UTC()}
		rows, err := tx.Query(ctx, `WITH d AS (
				UPDATE deliveries d SET reader = NULL, lease_until = NULL
				WHERE d.reader IS NOT NULL AND d.lease_node = $1
				RETURNING d.*
			)
			SELECT `+delCols+` FROM d JOIN messages m ON m.seq = d.message_seq ORDER BY d.id`, node)
		if err != nil {
			return err
		}
		if r.Deliveries, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*hub.Delivery, error) { return scanDelivery(row, false) }); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `DELETE FROM reservations WHERE node = $1 AND expires_at > now()
			RETURNING `+reservationCols, node)
		if err != nil {
			return err
		}
		if r.Reservations, err = pgx.CollectRows(rows, scanReservation); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `UPDATE agents SET left_at = now(), node = NULL
			WHERE node = $1 AND left_at IS NULL RETURNING workspace, name`, node)
		if err != nil {
			return err
		}
		if r.Agents, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (hub.AgentKey, error) {
			var k hub.AgentKey
			return k, row.Scan(&k.Workspace, &k.Name)
		}); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM daemons WHERE node = $1`, node)
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
