package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
)

// The permission inbox's store (migration 0006).

var _ permission.Store = (*DB)(nil)

// PutPermission inserts a new request.
func (db *DB) PutPermission(ctx context.Context, r *permission.Request) error {
	req := *r
	req.State, req.Decision = "", nil // kept in their own columns
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("put permission: %w", err)
	}
	return db.write(ctx, "put permission", func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO permissions (id, workspace, requested_at, state, data) VALUES (?, ?, ?, ?, ?)`,
			r.ID, r.Workspace, r.RequestedAt.UnixNano(), string(r.State), string(b))
		return err
	})
}

// DecidePermission records the outcome of request id if it is still pending,
// and reports whether it did.
func (db *DB) DecidePermission(ctx context.Context, id string, st permission.State, d *permission.Decision) (bool, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return false, fmt.Errorf("decide permission: %w", err)
	}
	won := false
	err = db.write(ctx, "decide permission", func(ctx context.Context, c *sql.Conn) error {
		res, err := c.ExecContext(ctx, `UPDATE permissions SET state = ?, decision = ? WHERE id = ? AND state = 'pending'`, string(st), string(b), id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		won = n == 1
		return err
	})
	return won, err
}

// Permission returns request id.
func (db *DB) Permission(ctx context.Context, id string) (*permission.Request, error) {
	row := db.r.QueryRowContext(ctx, `SELECT state, decision, data FROM permissions WHERE id = ?`, id)
	r, err := scanPermission(row.Scan)
	if err != nil {
		if hub.IsNotFound(db.mapErr(ctx, "permission", err)) {
			return nil, hub.Errorf("permission", hub.NotFound, "no permission request %q", id)
		}
		return nil, db.mapErr(ctx, "permission", err)
	}
	return r, nil
}

// PendingPermissions returns the pending requests of ws ("" for all), oldest first.
func (db *DB) PendingPermissions(ctx context.Context, ws string) ([]*permission.Request, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT state, decision, data FROM permissions
		WHERE state = 'pending' AND (? = '' OR workspace = ?) ORDER BY requested_at, id`, ws, ws)
	if err != nil {
		return nil, db.mapErr(ctx, "pending permissions", err)
	}
	defer rows.Close()
	var out []*permission.Request
	for rows.Next() {
		r, err := scanPermission(rows.Scan)
		if err != nil {
			return nil, db.mapErr(ctx, "pending permissions", err)
		}
		out = append(out, r)
	}
	return out, db.mapErr(ctx, "pending permissions", rows.Err())
}

func scanPermission(scan func(...any) error) (*permission.Request, error) {
	var st, data string
	var dec sql.NullString
	if err := scan(&st, &dec, &data); err != nil {
		return nil, err
	}
	r := new(permission.Request)
	if err := json.Unmarshal([]byte(data), r); err != nil {
		return nil, fmt.Errorf("decode stored permission: %w", err)
	}
	r.State = permission.State(st)
	if dec.Valid {
		r.Decision = new(permission.Decision)
		if err := json.Unmarshal([]byte(dec.String), r.Decision); err != nil {
			return nil, fmt.Errorf("decode stored decision: %w", err)
		}
	}
	return r, nil
}
