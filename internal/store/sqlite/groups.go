package sqlite

import (
	"context"
	"database/sql"
	"time"

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
	known := db.isKnown(g.Workspace)
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		if !known {
			if _, err := db.stmts.wInsWorkspace.ExecContext(ctx, g.Workspace); err != nil {
				return err
			}
		}
		_, err := c.ExecContext(ctx, `INSERT INTO groups (workspace, name, description, created_by, created_at)
			VALUES (?, ?, ?, ?, ?)`, g.Workspace, g.Name, g.Description, g.CreatedBy, nanos(g.CreatedAt))
		if err != nil {
			if hub.KindOf(db.mapErr(ctx, op, err)) == hub.Conflict {
				return hub.Errorf(op, hub.Conflict, "group %q exists already in workspace %q", g.Name, g.Workspace)
			}
			return err
		}
		for _, m := range g.Members {
			if err := addMember(ctx, c, g.Workspace, g.Name, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !known {
		db.markKnown(g.Workspace)
	}
	return nil
}

func addMember(ctx context.Context, c *sql.Conn, ws, group string, m hub.Member) error {
	_, err := c.ExecContext(ctx, `INSERT OR IGNORE INTO group_members (workspace, group_name, type, member_id)
		VALUES (?, ?, ?, ?)`, ws, group, string(m.Type), m.ID)
	return err
}

// DeleteGroup removes the group; its members go with it (ON DELETE CASCADE).
func (db *DB) DeleteGroup(ctx context.Context, ws, name string) error {
	const op = "delete group"
	return db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		res, err := c.ExecContext(ctx, `DELETE FROM groups WHERE workspace = ? AND name = ?`, ws, name)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return hub.Errorf(op, hub.NotFound, "no group %q in workspace %q", name, ws)
		}
		return nil
	})
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

// groups reads the groups of ws (only the one named name, if not empty) and their
// members in one read transaction, so that the two agree.
func (db *DB) groups(ctx context.Context, ws, name string) ([]*hub.Group, error) {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT name, description, created_by, created_at FROM groups
		WHERE workspace = ?1 AND (?2 = '' OR name = ?2) ORDER BY name`, ws, name)
	if err != nil {
		return nil, err
	}
	var (
		gs     []*hub.Group
		byName = map[string]*hub.Group{}
	)
	for rows.Next() {
		g := &hub.Group{Workspace: ws}
		var created int64
		if err := rows.Scan(&g.Name, &g.Description, &g.CreatedBy, &created); err != nil {
			rows.Close()
			return nil, err
		}
		g.CreatedAt = fromNanos(created)
		gs = append(gs, g)
		byName[g.Name] = g
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, nil
	}
	rows, err = tx.QueryContext(ctx, `SELECT group_name, type, member_id FROM group_members
		WHERE workspace = ?1 AND (?2 = '' OR group_name = ?2) ORDER BY rowid`, ws, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var group, typ, id string
		if err := rows.Scan(&group, &typ, &id); err != nil {
			return nil, err
		}
		if g := byName[group]; g != nil {
			g.Members = append(g.Members, hub.Member{Type: hub.MemberType(typ), ID: id})
		}
	}
	return gs, rows.Err()
}

// AddGroupMember adds m to the group; adding a member twice is not an error.
func (db *DB) AddGroupMember(ctx context.Context, ws, group string, m hub.Member) error {
	return db.write(ctx, "add group member", func(ctx context.Context, c *sql.Conn) error {
		if err := groupExists(ctx, c, ws, group); err != nil {
			return err
		}
		return addMember(ctx, c, ws, group, m)
	})
}

// RemoveGroupMember removes m from the group.
func (db *DB) RemoveGroupMember(ctx context.Context, ws, group string, m hub.Member) error {
	const op = "remove group member"
	return db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		if err := groupExists(ctx, c, ws, group); err != nil {
			return err
		}
		res, err := c.ExecContext(ctx, `DELETE FROM group_members
			WHERE workspace = ? AND group_name = ? AND type = ? AND member_id = ?`,
			ws, group, string(m.Type), m.ID)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return hub.Errorf(op, hub.NotFound, "group %q has no %s member %q", group, m.Type, m.ID)
		}
		return nil
	})
}

func groupExists(ctx context.Context, c *sql.Conn, ws, group string) error {
	var one int
	err := c.QueryRowContext(ctx, `SELECT 1 FROM groups WHERE workspace = ? AND name = ?`, ws, group).Scan(&one)
	if err == sql.ErrNoRows {
		return hub.Errorf("", hub.NotFound, "no group %q in workspace %q", group, ws)
	}
	return err
}
