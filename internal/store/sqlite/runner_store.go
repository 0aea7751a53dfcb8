package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/parley-dev/parley/internal/runner"
)

// The runner's store: managed agents, their runs and their timelines
// (migration 0002). Records are kept as JSON; the columns are their keys.

var _ runner.Store = (*DB)(nil)

// PutManagedAgent inserts or replaces a managed agent.
func (db *DB) PutManagedAgent(ctx context.Context, a *runner.Agent) error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("put managed agent: %w", err)
	}
	return db.write(ctx, "put managed agent", func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO managed_agents (id, workspace, created_at, data) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET workspace = excluded.workspace, data = excluded.data`,
			a.ID, a.Workspace, a.CreatedAt.UnixNano(), string(b))
		return err
	})
}

// ManagedAgents returns every managed agent, oldest first.
func (db *DB) ManagedAgents(ctx context.Context) ([]*runner.Agent, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT data FROM managed_agents ORDER BY created_at, id`)
	if err != nil {
		return nil, db.mapErr(ctx, "managed agents", err)
	}
	return scanJSON[runner.Agent](ctx, db, "managed agents", rows)
}

// PutRun inserts or replaces a run.
func (db *DB) PutRun(ctx context.Context, r *runner.Run) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("put run: %w", err)
	}
	return db.write(ctx, "put run", func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO managed_runs (agent_id, seq, state, data) VALUES (?, ?, ?, ?)
			ON CONFLICT (agent_id, seq) DO UPDATE SET state = excluded.state, data = excluded.data`,
			r.AgentID, r.Seq, string(r.State), string(b))
		return err
	})
}

// Runs returns up to limit runs of the agent, newest first.
func (db *DB) Runs(ctx context.Context, agentID string, limit int) ([]*runner.Run, error) {
	if limit <= 0 {
		limit = 20
	}
	rows, err := db.r.QueryContext(ctx, `SELECT data FROM managed_runs WHERE agent_id = ? ORDER BY seq DESC LIMIT ?`, agentID, limit)
	if err != nil {
		return nil, db.mapErr(ctx, "runs", err)
	}
	return scanJSON[runner.Run](ctx, db, "runs", rows)
}

// OpenRuns returns the queued and running runs of every agent, oldest first.
func (db *DB) OpenRuns(ctx context.Context) ([]*runner.Run, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT data FROM managed_runs WHERE state IN ('queued', 'running') ORDER BY agent_id, seq`)
	if err != nil {
		return nil, db.mapErr(ctx, "open runs", err)
	}
	return scanJSON[runner.Run](ctx, db, "open runs", rows)
}

// AppendEvents stores timeline events.
func (db *DB) AppendEvents(ctx context.Context, evs []*runner.Event) error {
	if len(evs) == 0 {
		return nil
	}
	data := make([]string, len(evs))
	for i, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("append events: %w", err)
		}
		data[i] = string(b)
	}
	return db.write(ctx, "append events", func(ctx context.Context, c *sql.Conn) error {
		for i, e := range evs {
			if _, err := c.ExecContext(ctx, `INSERT INTO managed_events (agent_id, seq, data) VALUES (?, ?, ?)`, e.AgentID, e.Seq, data[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// Events returns up to limit events of the agent from offset (0 the oldest)
// and the length of its timeline.
func (db *DB) Events(ctx context.Context, agentID string, offset, limit int) ([]*runner.Event, int, error) {
	var total int
	if err := db.r.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM managed_events WHERE agent_id = ?`, agentID).Scan(&total); err != nil {
		return nil, 0, db.mapErr(ctx, "events", err)
	}
	if limit <= 0 {
		return nil, total, nil
	}
	rows, err := db.r.QueryContext(ctx, `SELECT data FROM managed_events WHERE agent_id = ? AND seq > ? ORDER BY seq LIMIT ?`, agentID, max(offset, 0), limit)
	if err != nil {
		return nil, 0, db.mapErr(ctx, "events", err)
	}
	evs, err := scanJSON[runner.Event](ctx, db, "events", rows)
	return evs, total, err
}

func scanJSON[T any](ctx context.Context, db *DB, op string, rows *sql.Rows) ([]*T, error) {
	defer rows.Close()
	var out []*T
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		v := new(T)
		if err := json.Unmarshal([]byte(s), v); err != nil {
			return nil, fmt.Errorf("%s: decode stored record: %w", op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return out, nil
}
