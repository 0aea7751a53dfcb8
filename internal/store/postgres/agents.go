package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
)

const agentCols = `workspace, name, role, module, status, created_at, last_seen, host, left_at, session_bound, provisional`

// scanAgent reads agentCols (after any leading dest) into a new agent.
func scanAgent(row pgx.Row, lead ...any) (*hub.Agent, error) {
	var (
		a        hub.Agent
		status   string
		lastSeen *time.Time
		left     *time.Time
	)
	if err := row.Scan(append(lead, &a.Workspace, &a.Name, &a.Role, &a.Module, &status, &a.CreatedAt, &lastSeen, &a.Host, &left, &a.SessionBound, &a.Provisional)...); err != nil {
		return nil, err
	}
	a.Status = hub.Status(status)
	a.CreatedAt = a.CreatedAt.UTC()
	if lastSeen != nil {
		a.LastSeen = lastSeen.UTC()
	}
	if left != nil {
		a.LeftAt = left.UTC()
	}
	return &a, nil
}

// ts binds a time so that the zero time is NULL.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
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
	var stored time.Time
	err := db.inTx(ctx, op, func(tx pgx.Tx) error {
		if err := db.ensureWorkspace(ctx, tx, a.Workspace); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO agents (workspace, name, role, module, status, created_at, last_seen, host, node, session_bound, provisional)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (workspace, name) DO UPDATE SET role = excluded.role, module = excluded.module,
				status = excluded.status, last_seen = excluded.last_seen, host = excluded.host, node = excluded.node,
				session_bound = excluded.session_bound, provisional = excluded.provisional
			RETURNING created_at`,
			a.Workspace, a.Name, a.Role, a.Module, string(a.Status), created, ts(a.LastSeen), db.host, nullText(db.node), a.SessionBound, a.Provisional,
		).Scan(&stored)
	})
	if err != nil {
		return err
	}
	db.markKnown(a.Workspace)
	a.CreatedAt = stored.UTC()
	return nil
}

// Agent returns the agent named name in ws.
func (db *DB) Agent(ctx context.Context, ws, name string) (*hub.Agent, error) {
	const op = "get agent"
	a, err := scanAgent(db.pool.QueryRow(ctx, `SELECT `+agentCols+` FROM agents WHERE workspace = $1 AND name = $2`, ws, name))
	if errors.Is(err, pgx.ErrNoRows) {
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
	rows, err := db.pool.Query(ctx, `SELECT `+agentCols+` FROM agents WHERE workspace = $1 ORDER BY name COLLATE "C"`, ws)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	as, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*hub.Agent, error) { return scanAgent(r) })
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return as, nil
}

// SetAgentStatus sets the agent's self-reported status.
func (db *DB) SetAgentStatus(ctx context.Context, ws, name string, st hub.Status) error {
	const op = "set agent status"
	tag, err := db.pool.Exec(ctx, `UPDATE agents SET status = $1 WHERE workspace = $2 AND name = $3`, string(st), ws, name)
	if err != nil {
		return db.mapErr(ctx, op, err)
	}
	if tag.RowsAffected() == 0 {
		return hub.Errorf(op, hub.NotFound, "no agent %q in workspace %q", name, ws)
	}
	return nil
}

// TouchAgents records when the agents were last seen, in one statement.
func (db *DB) TouchAgents(ctx context.Context, ws string, seen map[string]time.Time) error {
	const op = "touch agents"
	if len(seen) == 0 {
		return nil
	}
	names := make([]string, 0, len(seen))
	times := make([]time.Time, 0, len(seen))
	for n, t := range seen {
		names = append(names, n)
		times = append(times, t)
	}
	// The daemon that saw them last is where they are: their host and node
	// move with them (a dead node's agents go offline: liveness.go).
	_, err := db.lazy.Exec(ctx, `UPDATE agents a SET last_seen = s.t, host = $4, node = $5
		FROM unnest($2::text[], $3::timestamptz[]) AS s(name, t)
		WHERE a.workspace = $1 AND a.name = s.name`, ws, names, times, db.host, nullText(db.node))
	return db.mapErr(ctx, op, err)
}

var _ hub.PresenceStore = (*DB)(nil)

// SetAgentLeft records when the agent's last session on this daemon ended,
// or clears it (a zero at), for the other daemons (hub.PresenceStore).
func (db *DB) SetAgentLeft(ctx context.Context, ws, name string, at time.Time) error {
	const op = "set agent left"
	// The lazy pool: a leave lost in a power cut leaves the agent to age out
	// of ActiveWindow, as it did before this was recorded.
	_, err := db.lazy.Exec(ctx, `UPDATE agents SET left_at = $3 WHERE workspace = $1 AND name = $2`, ws, name, ts(at))
	return db.mapErr(ctx, op, err)
}

// Workspaces lists every workspace that has agents, messages or groups, sorted.
func (db *DB) Workspaces(ctx context.Context) ([]string, error) {
	const op = "list workspaces"
	rows, err := db.pool.Query(ctx, `SELECT name FROM workspaces w
		WHERE EXISTS (SELECT 1 FROM agents WHERE workspace = w.name)
		OR EXISTS (SELECT 1 FROM messages WHERE workspace = w.name)
		OR EXISTS (SELECT 1 FROM groups WHERE workspace = w.name)
		ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	wss, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
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
	a := *to
	err := db.inTx(ctx, op, func(tx pgx.Tx) error {
		if err := db.ensureWorkspace(ctx, tx, ws); err != nil {
			return err
		}
		// The old name's row, locked: a second rename of it waits.
		var created time.Time
		var status string
		switch err := tx.QueryRow(ctx, `SELECT created_at, status FROM agents WHERE workspace = $1 AND name = $2 FOR UPDATE`, ws, old).Scan(&created, &status); {
		case errors.Is(err, pgx.ErrNoRows):
			if a.CreatedAt.IsZero() {
				a.CreatedAt = at
			}
		case err != nil:
			return err
		default:
			a.CreatedAt, a.Status = created, hub.Status(status)
		}
		var owner string
		switch err := tx.QueryRow(ctx, `SELECT name FROM agent_aliases WHERE workspace = $1 AND alias = $2`, ws, name).Scan(&owner); {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case owner != old:
			return hub.Errorf(op, hub.Conflict, "%q is an old name of agent %q in workspace %q", name, owner, ws)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO agents (workspace, name, role, module, status, created_at, last_seen, host, node, session_bound, provisional)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (workspace, name) DO NOTHING`,
			ws, name, a.Role, a.Module, string(a.Status), a.CreatedAt, ts(a.LastSeen), db.host, nullText(db.node), a.SessionBound, a.Provisional)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return hub.Errorf(op, hub.Conflict, "agent %q exists already in workspace %q", name, ws)
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			// A copy both had stays once, the new name's.
			{`DELETE FROM deliveries d WHERE d.workspace = $1 AND d.recipient = $2 AND EXISTS
				(SELECT 1 FROM deliveries e WHERE e.message_seq = d.message_seq AND e.recipient = $3)`, []any{ws, old, name}},
			{`UPDATE deliveries SET recipient = $3 WHERE workspace = $1 AND recipient = $2`, []any{ws, old, name}},
			{`DELETE FROM group_members m WHERE m.workspace = $1 AND m.type = $4 AND m.member_id = $2 AND EXISTS
				(SELECT 1 FROM group_members n WHERE n.workspace = $1 AND n.group_name = m.group_name AND n.type = $4 AND n.member_id = $3)`,
				[]any{ws, old, name, string(hub.MemberAgent)}},
			{`UPDATE group_members SET member_id = $3 WHERE workspace = $1 AND type = $4 AND member_id = $2`,
				[]any{ws, old, name, string(hub.MemberAgent)}},
			{`UPDATE reservations SET agent = $3 WHERE workspace = $1 AND agent = $2`, []any{ws, old, name}},
			{`DELETE FROM agents WHERE workspace = $1 AND name = $2`, []any{ws, old}},
			{`DELETE FROM agent_aliases WHERE workspace = $1 AND alias = $2`, []any{ws, name}},
			{`UPDATE agent_aliases SET name = $3 WHERE workspace = $1 AND name = $2`, []any{ws, old, name}},
			{`INSERT INTO agent_aliases (workspace, alias, name, created_at) VALUES ($1, $2, $3, $4)`, []any{ws, old, name, at}},
		} {
			if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	db.markKnown(ws)
	to.CreatedAt, to.Status = a.CreatedAt.UTC(), a.Status
	return nil
}

// Aliases returns the old names of ws's agents, each to its agent.
func (db *DB) Aliases(ctx context.Context, ws string) (map[string]string, error) {
	const op = "list aliases"
	rows, err := db.pool.Query(ctx, `SELECT alias, name FROM agent_aliases WHERE workspace = $1`, ws)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	out := map[string]string{}
	var alias, name string
	_, err = pgx.ForEachRow(rows, []any{&alias, &name}, func() error {
		out[alias] = name
		return nil
	})
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return out, nil
}
