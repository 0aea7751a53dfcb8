package sqlite

import (
	"context"
	"database/sql"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/token"
)

// Agent tokens (migrations 0003 and 0010).

var _ token.Store = (*DB)(nil)

// CreateToken stores t under the hash of its secret.
func (db *DB) CreateToken(ctx context.Context, t *token.Token, hash []byte) error {
	const op = "create token"
	return db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO agent_tokens (id, hash, workspace, agent, role, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			t.ID, hash, t.Workspace, t.Agent, t.Role, nanos(t.CreatedAt))
		return err
	})
}

// TokenByHash returns the token whose secret hashes to hash.
func (db *DB) TokenByHash(ctx context.Context, hash []byte) (*token.Token, error) {
	const op = "find token"
	t := &token.Token{}
	var created int64
	err := db.r.QueryRowContext(ctx, `SELECT id, workspace, agent, role, created_at FROM agent_tokens WHERE hash = ?`, hash).
		Scan(&t.ID, &t.Workspace, &t.Agent, &t.Role, &created)
	if err == sql.ErrNoRows {
		return nil, hub.Errorf(op, hub.NotFound, "no such token")
	}
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	t.CreatedAt = fromNanos(created)
	return t, nil
}

// Tokens lists the tokens, oldest first.
func (db *DB) Tokens(ctx context.Context) ([]*token.Token, error) {
	const op = "list tokens"
	rows, err := db.r.QueryContext(ctx, `SELECT id, workspace, agent, role, created_at FROM agent_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	defer rows.Close()
	var ts []*token.Token
	for rows.Next() {
		t := &token.Token{}
		var created int64
		if err := rows.Scan(&t.ID, &t.Workspace, &t.Agent, &t.Role, &created); err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		t.CreatedAt = fromNanos(created)
		ts = append(ts, t)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return ts, nil
}

// RevokeToken deletes the token with the id.
func (db *DB) RevokeToken(ctx context.Context, id string) error {
	const op = "revoke token"
	return db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		res, err := c.ExecContext(ctx, `DELETE FROM agent_tokens WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return err
			}
			return hub.Errorf(op, hub.NotFound, "no token with id %q", id)
		}
		return nil
	})
}
