package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/token"
)

// Agent tokens (migration 3), shared by every daemon on the database: a token
// made on one machine admits its agent at any of them.

var _ token.Store = (*DB)(nil)

// CreateToken stores t under the hash of its secret.
func (db *DB) CreateToken(ctx context.Context, t *token.Token, hash []byte) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO agent_tokens (id, hash, workspace, agent, role, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		t.ID, hash, t.Workspace, t.Agent, t.Role, t.CreatedAt)
	return db.mapErr(ctx, "create token", err)
}

// TokenByHash returns the token whose secret hashes to hash.
func (db *DB) TokenByHash(ctx context.Context, hash []byte) (*token.Token, error) {
	const op = "find token"
	t := &token.Token{}
	err := db.pool.QueryRow(ctx, `SELECT id, workspace, agent, role, created_at FROM agent_tokens WHERE hash = $1`, hash).
		Scan(&t.ID, &t.Workspace, &t.Agent, &t.Role, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, hub.Errorf(op, hub.NotFound, "no such token")
	}
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	t.CreatedAt = t.CreatedAt.UTC()
	return t, nil
}

// Tokens lists the tokens, oldest first.
func (db *DB) Tokens(ctx context.Context) ([]*token.Token, error) {
	const op = "list tokens"
	rows, err := db.pool.Query(ctx, `SELECT id, workspace, agent, role, created_at FROM agent_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*token.Token, error) {
		t := &token.Token{}
		if err := r.Scan(&t.ID, &t.Workspace, &t.Agent, &t.Role, &t.CreatedAt); err != nil {
			return nil, err
		}
		t.CreatedAt = t.CreatedAt.UTC()
		return t, nil
	})
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return ts, nil
}

// RevokeToken deletes the token with the id and, in the same transaction,
// tells the other daemons (their Notifier's Tokens), so that they end what
// is open under it at once.
func (db *DB) RevokeToken(ctx context.Context, id string) error {
	const op = "revoke token"
	var n int
	err := db.pool.QueryRow(ctx, `WITH d AS (DELETE FROM agent_tokens WHERE id = $1 RETURNING id)
		SELECT count(*) FROM (SELECT pg_notify($2, $3) FROM d) n`,
		id, channel, notePayload(wire{Origin: db.origin, Token: id})).Scan(&n)
	if err != nil {
		return db.mapErr(ctx, op, err)
	}
	if n == 0 {
		return hub.Errorf(op, hub.NotFound, "no token with id %q", id)
	}
	return nil
}
