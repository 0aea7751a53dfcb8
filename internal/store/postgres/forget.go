package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
)

// ForgetAgent removes the agent and bounces its unread copies, in one
// transaction.
func (db *DB) ForgetAgent(ctx context.Context, ws, name, reason string, at time.Time) ([]*hub.Delivery, error) {
	const op = "forget agent"
	var out []*hub.Delivery
	err := db.inTx(ctx, op, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM agents WHERE workspace = $1 AND name = $2`, ws, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return hub.Errorf(op, hub.NotFound, "no agent %q in workspace %q", name, ws)
		}
		rows, err := tx.Query(ctx, `WITH d AS (
				UPDATE deliveries d SET read_at = $3, bounced_at = $3, bounce_reason = $4, reader = NULL, lease_until = NULL
				WHERE d.workspace = $1 AND d.recipient = $2 AND d.read_at IS NULL
				RETURNING d.*
			)
			SELECT `+delCols+`, `+msgCols+` FROM d JOIN messages m ON m.seq = d.message_seq ORDER BY d.id`,
			ws, name, at, reason)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*hub.Delivery, error) { return scanDelivery(r, true) })
		if err != nil {
			return err
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`DELETE FROM group_members WHERE workspace = $1 AND type = $2 AND member_id = $3`, []any{ws, string(hub.MemberAgent), name}},
			{`DELETE FROM reservations WHERE workspace = $1 AND agent = $2`, []any{ws, name}},
			{`DELETE FROM agent_aliases WHERE workspace = $1 AND name = $2`, []any{ws, name}},
		} {
			if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
