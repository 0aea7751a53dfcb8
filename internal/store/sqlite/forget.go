package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// ForgetAgent removes the agent and bounces its unread copies, in one
// transaction.
func (db *DB) ForgetAgent(ctx context.Context, ws, name, reason string, at time.Time) ([]*hub.Delivery, error) {
	const op = "forget agent"
	var out []*hub.Delivery
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		res, err := c.ExecContext(ctx, `DELETE FROM agents WHERE workspace = ? AND name = ?`, ws, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return hub.Errorf(op, hub.NotFound, "no agent %q in workspace %q", name, ws)
		}
		ids, ds, err := queryDeliveries(ctx, stmtOn{c, `SELECT d.id, ` + delCols + `, ` + msgCols + `
			FROM deliveries d JOIN messages m ON m.seq = d.message_seq
			WHERE d.workspace = ?1 AND d.recipient = ?2 AND d.read_at IS NULL ORDER BY d.id`}, true, ws, name)
		if err != nil {
			return err
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`UPDATE deliveries SET read_at = ?1, bounced_at = ?1, bounce_reason = ?2, reader = NULL, lease_until = 0
				WHERE id IN (SELECT value FROM json_each(?3))`, []any{nanos(at), reason, jsonList(ids)}},
			{`DELETE FROM group_members WHERE workspace = ? AND type = ? AND member_id = ?`, []any{ws, string(hub.MemberAgent), name}},
			{`DELETE FROM reservations WHERE workspace = ? AND agent = ?`, []any{ws, name}},
			{`DELETE FROM agent_aliases WHERE workspace = ? AND name = ?`, []any{ws, name}},
		} {
			if _, err := c.ExecContext(ctx, q.sql, q.args...); err != nil {
				return err
			}
		}
		for _, d := range ds {
			d.State, d.ReadAt, d.BouncedAt, d.BounceReason = hub.Bounced, at.UTC(), at.UTC(), reason
			d.Reader, d.LeaseUntil = "", time.Time{}
		}
		out = ds
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
