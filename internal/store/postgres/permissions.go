package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
)

// The permission inbox's store (migration 0006).

var _ permission.Store = (*DB)(nil)

// PutPermission inserts a new request.
func (db *DB) PutPermission(ctx context.Context, r *permission.Request) error {
	const op = "put permission"
	req := *r
	req.State, req.Decision = "", nil // kept in their own columns
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	_, err = db.pool.Exec(ctx, `INSERT INTO permissions (id, workspace, requested_at, state, data) VALUES ($1, $2, $3, $4, $5::json)`,
		r.ID, r.Workspace, r.RequestedAt, string(r.State), string(b))
	return db.mapErr(ctx, op, err)
}

// DecidePermission records the outcome of request id if it is still pending,
// and reports whether it did.
func (db *DB) DecidePermission(ctx context.Context, id string, st permission.State, d *permission.Decision) (bool, error) {
	const op = "decide permission"
	b, err := json.Marshal(d)
	if err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	tag, err := db.pool.Exec(ctx, `UPDATE permissions SET state = $1, decision = $2::json WHERE id = $3 AND state = 'pending'`, string(st), string(b), id)
	if err != nil {
		return false, db.mapErr(ctx, op, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Permission returns request id.
func (db *DB) Permission(ctx context.Context, id string) (*permission.Request, error) {
	r, err := scanPermission(db.pool.QueryRow(ctx, `SELECT state, decision::text, data::text FROM permissions WHERE id = $1`, id))
	if err != nil {
		if err = db.mapErr(ctx, "permission", err); hub.IsNotFound(err) {
			return nil, hub.Errorf("permission", hub.NotFound, "no permission request %q", id)
		}
		return nil, err
	}
	return r, nil
}

// PendingPermissions returns the pending requests of ws ("" for all), oldest first.
func (db *DB) PendingPermissions(ctx context.Context, ws string) ([]*permission.Request, error) {
	const op = "pending permissions"
	rows, err := db.pool.Query(ctx, `SELECT state, decision::text, data::text FROM permissions
		WHERE state = 'pending' AND ($1 = '' OR workspace = $1) ORDER BY requested_at, id`, ws)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*permission.Request, error) { return scanPermission(r) })
	return out, db.mapErr(ctx, op, err)
}

func scanPermission(row pgx.Row) (*permission.Request, error) {
	var st, data string
	var dec *string
	if err := row.Scan(&st, &dec, &data); err != nil {
		return nil, err
	}
	r := new(permission.Request)
	if err := json.Unmarshal([]byte(data), r); err != nil {
		return nil, fmt.Errorf("decode stored permission: %w", err)
	}
	r.State = permission.State(st)
	if dec != nil {
		r.Decision = new(permission.Decision)
		if err := json.Unmarshal([]byte(*dec), r.Decision); err != nil {
			return nil, fmt.Errorf("decode stored decision: %w", err)
		}
	}
	return r, nil
}
