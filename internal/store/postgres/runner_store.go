package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/runner"
)

// The runner's store: managed agents, their runs and their timelines. Records
// are kept as JSON; the columns are their keys.

var (
	_ runner.Store     = (*DB)(nil)
	_ runner.PeerStore = (*DB)(nil)
)

// PutManagedAgent inserts or replaces a managed agent.
func (db *DB) PutManagedAgent(ctx context.Context, a *runner.Agent) error {
	const op = "put managed agent"
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	_, err = db.pool.Exec(ctx, `INSERT INTO managed_agents (id, workspace, created_at, data, node) VALUES ($1, $2, $3, $4::json, $5)
		ON CONFLICT (id) DO UPDATE SET workspace = excluded.workspace, data = excluded.data`,
		a.ID, a.Workspace, a.CreatedAt, string(b), db.node)
	return db.mapErr(ctx, op, err)
}

// ManagedAgents returns every managed agent of this node, oldest first.
func (db *DB) ManagedAgents(ctx context.Context) ([]*runner.Agent, error) {
	const op = "managed agents"
	rows, err := db.pool.Query(ctx, `SELECT data::text FROM managed_agents WHERE node = $1 ORDER BY created_at, id`, db.node)
	return scanJSON[runner.Agent](ctx, db, op, rows, err)
}

// PeerAgents returns the managed agents of ws (all when "") that other nodes
// run, each with its newest run, oldest first; only id's when id is not "".
func (db *DB) PeerAgents(ctx context.Context, ws, id string) ([]*runner.Peer, error) {
	const op = "peer agents"
	rows, err := db.pool.Query(ctx, `SELECT a.data::text, a.node, r.data::text FROM managed_agents a
		LEFT JOIN LATERAL (SELECT data FROM managed_runs WHERE agent_id = a.id ORDER BY seq DESC LIMIT 1) r ON true
		WHERE a.node <> $1 AND ($2 = '' OR a.workspace = $2) AND ($3 = '' OR a.id = $3)
		ORDER BY a.created_at, a.id`, db.node, ws, id)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*runner.Peer, error) {
		var agent string
		var run *string
		p := &runner.Peer{}
		if err := row.Scan(&agent, &p.Node, &run); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(agent), &p.Agent); err != nil {
			return nil, fmt.Errorf("decode stored agent: %w", err)
		}
		if run != nil {
			p.Latest = new(runner.Run)
			if err := json.Unmarshal([]byte(*run), p.Latest); err != nil {
				return nil, fmt.Errorf("decode stored run: %w", err)
			}
		}
		return p, nil
	})
	return out, db.mapErr(ctx, op, err)
}

// PutRun inserts or replaces a run.
func (db *DB) PutRun(ctx context.Context, r *runner.Run) error {
	const op = "put run"
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	_, err = db.pool.Exec(ctx, `INSERT INTO managed_runs (agent_id, seq, state, data) VALUES ($1, $2, $3, $4::json)
		ON CONFLICT (agent_id, seq) DO UPDATE SET state = excluded.state, data = excluded.data`,
		r.AgentID, r.Seq, string(r.State), string(b))
	return db.mapErr(ctx, op, err)
}

// Runs returns up to limit runs of the agent, newest first.
func (db *DB) Runs(ctx context.Context, agentID string, limit int) ([]*runner.Run, error) {
	if limit <= 0 {
		limit = 20
	}
	rows, err := db.pool.Query(ctx, `SELECT data::text FROM managed_runs WHERE agent_id = $1 ORDER BY seq DESC LIMIT $2`, agentID, limit)
	return scanJSON[runner.Run](ctx, db, "runs", rows, err)
}

// OpenRuns returns the queued and running runs of every agent of this node,
// oldest first: another daemon's runs are its own to recover.
func (db *DB) OpenRuns(ctx context.Context) ([]*runner.Run, error) {
	rows, err := db.pool.Query(ctx, `SELECT r.data::text FROM managed_runs r JOIN managed_agents a ON a.id = r.agent_id
		WHERE r.state IN ('queued', 'running') AND a.node = $1 ORDER BY r.agent_id, r.seq`, db.node)
	return scanJSON[runner.Run](ctx, db, "open runs", rows, err)
}

// AppendEvents stores timeline events, all or none.
func (db *DB) AppendEvents(ctx context.Context, evs []*runner.Event) error {
	const op = "append events"
	if len(evs) == 0 {
		return nil
	}
	ids := make([]string, len(evs))
	seqs := make([]int64, len(evs))
	data := make([]string, len(evs))
	for i, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		ids[i], seqs[i], data[i] = e.AgentID, e.Seq, string(b)
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO managed_events (agent_id, seq, data)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::json[])`, ids, seqs, data)
	return db.mapErr(ctx, op, err)
}

// Events returns up to limit events of the agent from offset (0 the oldest)
// and the length of its timeline.
func (db *DB) Events(ctx context.Context, agentID string, offset, limit int) ([]*runner.Event, int, error) {
	const op = "events"
	var total int
	if err := db.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM managed_events WHERE agent_id = $1`, agentID).Scan(&total); err != nil {
		return nil, 0, db.mapErr(ctx, op, err)
	}
	if limit <= 0 {
		return nil, total, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT data::text FROM managed_events WHERE agent_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, agentID, max(offset, 0), limit)
	evs, err := scanJSON[runner.Event](ctx, db, op, rows, err)
	return evs, total, err
}

func scanJSON[T any](ctx context.Context, db *DB, op string, rows pgx.Rows, err error) ([]*T, error) {
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*T, error) {
		var s string
		if err := r.Scan(&s); err != nil {
			return nil, err
		}
		v := new(T)
		if err := json.Unmarshal([]byte(s), v); err != nil {
			return nil, fmt.Errorf("decode stored record: %w", err)
		}
		return v, nil
	})
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return out, nil
}
