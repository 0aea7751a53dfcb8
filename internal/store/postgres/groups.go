package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
)

// CreateGroup stores a new group with its members (listed once each, in order).
// A zero g.CreatedAt is set to now.
func (db *DB) CreateGroup(ctx context.Context, g *hub.Group) error {
	const op = "create group"
	if g.Workspace == "" || g.Name == "" {
		return hub.Errorf(op, hub.Invalid, "group needs a workspace and a name")
	}
	if g.CreatedAt.IsZero() {
		g.CreatedAt = time.Now().UTC()
	}
	err := db.inTx(ctx, op, func(tx pgx.Tx) error {
		if err := db.ensureWorkspace(ctx, tx, g.Workspace); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO groups (workspace, name, description, created_by, created_at)
			VALUES ($1, $2, $3, $4, $5)`, g.Workspace, g.Name, g.Description, g.CreatedBy, g.CreatedAt)
		if err != nil {
			if hub.KindOf(db.mapErr(ctx, op, err)) == hub.Conflict {
				return hub.Errorf(op, hub.Conflict, "group %q exists already in workspace %q", g.Name, g.Workspace)
			}
			return err
		}
		for _, m := range g.Members {
			if err := addMember(ctx, tx, g.Workspace, g.Name, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	db.markKnown(g.Workspace)
	return nil
}

func addMember(ctx context.Context, q querier, ws, group string, m hub.Member) error {
	_, err := q.Exec(ctx, `INSERT INTO group_members (workspace, group_name, type, member_id)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, ws, group, string(m.Type), m.ID)
	return err
}

// DeleteGroup removes the group; its members go with it (ON DELETE CASCADE).
func (db *DB) DeleteGroup(ctx context.Context, ws, name string) error {
	const op = "delete group"
	tag, err := db.pool.Exec(ctx, `DELETE FROM groups WHERE workspace = $1 AND name = $2`, ws, name)
	if err != nil {
		return db.mapErr(ctx, op, err)
	}
	if tag.RowsAffected() == 0 {
		return hub.Errorf(op, hub.NotFound, "no group %q in workspace %q", name, ws)
	}
	return nil
}

// Group returns the group with its members in the order they were added.
func (db *DB) Group(ctx context.Context, ws, name string) (*hub.Group, error) {
	const op = "get group"
	gs, err := db.groups(ctx, ws, name)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	if len(gs) == 0 {
		return nil, hub.Errorf(op, hub.NotFound, "no group %q in workspace %q", name, ws)
	}
	return gs[0], nil
}

// Groups returns every group of ws with its members, ordered by name.
func (db *DB) Groups(ctx context.Context, ws string) ([]*hub.Group, error) {
	gs, err := db.groups(ctx, ws, "")
	if err != nil {
		return nil, db.mapErr(ctx, "list groups", err)
	}
	return gs, nil
}

// groups reads the groups of ws (only the one named name, if not empty) with
// their members in one statement, so that the two agree.
func (db *DB) groups(ctx context.Context, ws, name string) ([]*hub.Group, error) {
	rows, err := db.pool.Query(ctx, `SELECT g.name, g.description, g.created_by, g.created_at,
			coalesce(array_agg(m.type ORDER BY m.id) FILTER (WHERE m.id IS NOT NULL), '{}'),
			coalesce(array_agg(m.member_id ORDER BY m.id) FILTER (WHERE m.id IS NOT NULL), '{}')
		FROM groups g LEFT JOIN group_members m ON m.workspace = g.workspace AND m.group_name = g.name
		WHERE g.workspace = $1 AND ($2 = '' OR g.name = $2)
		GROUP BY g.name, g.description, g.created_by, g.created_at
		ORDER BY g.name COLLATE "C"`, ws, name)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*hub.Group, error) {
		g := &hub.Group{Workspace: ws}
		var types, ids []string
		if err := r.Scan(&g.Name, &g.Description, &g.CreatedBy, &g.CreatedAt, &types, &ids); err != nil {
			return nil, err
		}
		g.CreatedAt = g.CreatedAt.UTC()
		for i := range types {
			g.Members = append(g.Members, hub.Member{Type: hub.MemberType(types[i]), ID: ids[i]})
		}
		return g, nil
	})
}

// AddGroupMember adds m to the group; adding a member twice is not an error.
func (db *DB) AddGroupMember(ctx context.Context, ws, group string, m hub.Member) error {
	const op = "add group member"
	return db.inTx(ctx, op, func(tx pgx.Tx) error {
		if err := lockGroup(ctx, tx, ws, group); err != nil {
			return err
		}
		return addMember(ctx, tx, ws, group, m)
	})
}

// RemoveGroupMember removes m from the group.
func (db *DB) RemoveGroupMember(ctx context.Context, ws, group string, m hub.Member) error {
	const op = "remove group member"
	return db.inTx(ctx, op, func(tx pgx.Tx) error {
		if err := lockGroup(ctx, tx, ws, group); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM group_members
			WHERE workspace = $1 AND group_name = $2 AND type = $3 AND member_id = $4`,
			ws, group, string(m.Type), m.ID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return hub.Errorf(op, hub.NotFound, "group %q has no %s member %q", group, m.Type, m.ID)
		}
		return nil
	})
}

// lockGroup checks that the group exists and keeps it from being deleted until
// the transaction ends.
func lockGroup(ctx context.Context, tx pgx.Tx, ws, group string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM groups WHERE workspace = $1 AND name = $2 FOR SHARE`, ws, group).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return hub.Errorf("", hub.NotFound, "no group %q in workspace %q", group, ws)
	}
	return err
}
