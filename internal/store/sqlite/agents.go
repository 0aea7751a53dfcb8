package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

const agentCols = `workspace, name, role, module, status, created_at, last_seen, session_bound, provisional`

func scanAgent(sc rowScanner) (*hub.Agent, error) {
	var (
		a                 hub.Agent
		status            string
		created, lastSeen int64
	)
	if err := sc.Scan(&a.Workspace, &a.Name, &a.Role, &a.Module, &status, &created, &lastSeen, &a.SessionBound, &a.Provisional); err != nil {
		return nil, err
	}
	a.Status = hub.Status(status)
	a.CreatedAt = fromNanos(created)
	a.LastSeen = fromNanos(lastSeen)
	return &a, nil
}

// PutAgent inserts a or updates its role, module, status and last-seen time. The
// stored creation time wins over a.CreatedAt, and is written back into a; a new
// agent with a zero CreatedAt is created now.
func (db *DB) PutAgent(ctx context.Context, a *hub.Agent) error {
	const op = "put agent"
	if a.Workspace == "" || a.Name == "" {
		return hub.Errorf(op, hub.Invalid, "agent needs a workspace and a name")
	}
	created := a.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	known := db.isKnown(a.Workspace)
	var stored int64
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		if !known {
			if _, err := db.stmts.wInsWorkspace.ExecContext(ctx, a.Workspace); err != nil {
				return err
			}
		}
		return c.QueryRowContext(ctx, `INSERT INTO agents (`+agentCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (workspace, name) DO UPDATE SET role = excluded.role, module = excluded.module,
				status = excluded.status, last_seen = excluded.last_seen,
				session_bound = excluded.session_bound, provisional = excluded.provisional
			RETURNING created_at`,
			a.Workspace, a.Name, a.Role, a.Module, string(a.Status), nanos(created), nanos(a.LastSeen), a.SessionBound, a.Provisional,
		).Scan(&stored)
	})
	if err != nil {
		return err
	}
	if !known {
		db.markKnown(a.Workspace)
	}
	a.CreatedAt = fromNanos(stored)
	return nil
}

// Agent returns the agent named name in ws.
func (db *DB) Agent(ctx context.Context, ws, name string) (*hub.Agent, error) {
	const op = "get agent"
	a, err := scanAgent(db.stmts.rAgent.QueryRowContext(ctx, ws, name))
	if err == sql.ErrNoRows {
		return nil, hub.Errorf(op, hub.NotFound, "no agent %q in workspace %q", name, ws)
	}
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return a, nil
}

// Agents returns every agent of ws ordered by name.
func (db *DB) Agents(ctx context.Context, ws string) ([]*hub.Agent, error) {
	const op = "list agents"
	rows, err := db.stmts.rAgents.QueryContext(ctx, ws)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	defer rows.Close()
	var as []*hub.Agent
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		as = append(as, a)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return as, nil
}

// SetAgentStatus sets the agent's self-reported status.
func (db *DB) SetAgentStatus(ctx context.Context, ws, name string, st hub.Status) error {
	const op = "set agent status"
	return db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		res, err := c.ExecContext(ctx, `UPDATE agents SET status = ? WHERE workspace = ? AND name = ?`,
			string(st), ws, name)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return hub.Errorf(op, hub.NotFound, "no agent %q in workspace %q", name, ws)
		}
		return nil
	})
}

// TouchAgents records when the agents were last seen, in one transaction.
func (db *DB) TouchAgents(ctx context.Context, ws string, seen map[string]time.Time) error {
	const op = "touch agents"
	if len(seen) == 0 {
		return nil
	}
	return db.writeLazy(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		for name, t := range seen {
			if _, err := db.stmts.wTouch.ExecContext(ctx, nanos(t), ws, name); err != nil {
				return err
			}
		}
		return nil
	})
}

// Workspaces lists every workspace that has agents, messages or groups, sorted.
func (db *DB) Workspaces(ctx context.Context) ([]string, error) {
	const op = "list workspaces"
	rows, err := db.r.QueryContext(ctx, `SELECT name FROM workspaces w
		WHERE EXISTS (SELECT 1 FROM agents WHERE workspace = w.name)
		OR EXISTS (SELECT 1 FROM messages WHERE workspace = w.name)
		OR EXISTS (SELECT 1 FROM groups WHERE workspace = w.name)
		ORDER BY name`)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	defer rows.Close()
	var wss []string
	for rows.Next() {
		var ws string
		if err := rows.Scan(&ws); err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		wss = append(wss, ws)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return wss, nil
}

// RenameAgent gives agent old the record to, with old's deliveries, group
// memberships and reservations, and makes old an alias of to.Name.
func (db *DB) RenameAgent(ctx context.Context, old string, to *hub.Agent, at time.Time) error {
	const op = "rename agent"
	ws, name := to.Workspace, to.Name
	if ws == "" || name == "" || old == "" || old == name {
		return hub.Errorf(op, hub.Invalid, "renaming needs a workspace, an old name and a new, other name")
	}
	known := db.isKnown(ws)
	err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		if !known {
			if _, err := db.stmts.wInsWorkspace.ExecContext(ctx, ws); err != nil {
				return err
			}
		}
		var n int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM agents WHERE workspace = ? AND name = ?`, ws, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return hub.Errorf(op, hub.Conflict, "agent %q exists already in workspace %q", name, ws)
		}
		var owner string
		switch err := c.QueryRowContext(ctx, `SELECT name FROM agent_aliases WHERE workspace = ? AND alias = ?`, ws, name).Scan(&owner); {
		case err == sql.ErrNoRows:
		case err != nil:
			return err
		case owner != old:
			return hub.Errorf(op, hub.Conflict, "%q is an old name of agent %q in workspace %q", name, owner, ws)
		}
		a := *to
		if a.CreatedAt.IsZero() {
			a.CreatedAt = at
		}
		var created int64
		var status string
		switch err := c.QueryRowContext(ctx, `SELECT created_at, status FROM agents WHERE workspace = ? AND name = ?`, ws, old).Scan(&created, &status); {
		case err == sql.ErrNoRows:
		case err != nil:
			return err
		default:
			a.CreatedAt, a.Status = fromNanos(created), hub.Status(status)
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO agents (` + agentCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				[]any{ws, name, a.Role, a.Module, string(a.Status), nanos(a.CreatedAt), nanos(a.LastSeen), a.SessionBound, a.Provisional}},
			// A copy both had stays once, the new name's.
			{`DELETE FROM deliveries WHERE workspace = ? AND recipient = ? AND message_seq IN
				(SELECT message_seq FROM deliveries WHERE workspace = ? AND recipient = ?)`, []any{ws, old, ws, name}},
			{`UPDATE deliveries SET recipient = ? WHERE workspace = ? AND recipient = ?`, []any{name, ws, old}},
			{`DELETE FROM group_members WHERE workspace = ? AND type = ? AND member_id = ? AND group_name IN
				(SELECT group_name FROM group_members WHERE workspace = ? AND type = ? AND member_id = ?)`,
				[]any{ws, string(hub.MemberAgent), old, ws, string(hub.MemberAgent), name}},
			{`UPDATE group_members SET member_id = ? WHERE workspace = ? AND type = ? AND member_id = ?`,
				[]any{name, ws, string(hub.MemberAgent), old}},
			{`UPDATE reservations SET agent = ? WHERE workspace = ? AND agent = ?`, []any{name, ws, old}},
			{`DELETE FROM agents WHERE workspace = ? AND name = ?`, []any{ws, old}},
			{`DELETE FROM agent_aliases WHERE workspace = ? AND alias = ?`, []any{ws, name}},
			{`UPDATE agent_aliases SET name = ? WHERE workspace = ? AND name = ?`, []any{name, ws, old}},
			{`INSERT INTO agent_aliases (workspace, alias, name, created_at) VALUES (?, ?, ?, ?)`, []any{ws, old, name, nanos(at)}},
		} {
			if _, err := c.ExecContext(ctx, q.sql, q.args...); err != nil {
				return err
			}
		}
		to.CreatedAt, to.Status = a.CreatedAt, a.Status
		return nil
	})
	if err == nil && !known {
		db.markKnown(ws)
	}
	return err
}

// Aliases returns the old names of ws's agents, each to its agent.
func (db *DB) Aliases(ctx context.Context, ws string) (map[string]string, error) {
	const op = "list aliases"
	rows, err := db.r.QueryContext(ctx, `SELECT alias, name FROM agent_aliases WHERE workspace = ?`, ws)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var alias, name string
		if err := rows.Scan(&alias, &name); err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		out[alias] = name
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return out, nil
}
