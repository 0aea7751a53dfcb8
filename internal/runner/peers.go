package runner

import (
	"context"

	"github.com/parley-dev/parley/internal/hub"
)

// Several daemons may share one store (PostgreSQL, one daemon per machine).
// A managed agent runs on the daemon that launched it, which alone holds its
// process and its queue; the others see it through the store: its record, its
// runs and its timeline. Those are its peers' view, read-only.

// PeerStore is a store that other daemons share: it finds the managed agents
// that they run.
type PeerStore interface {
	// PeerAgents returns the managed agents of ws (every workspace when ws is
	// "") that other daemons run, with the newest run of each, oldest agent
	// first; only the one with id when id is not "".
	PeerAgents(ctx context.Context, ws, id string) ([]*Peer, error)
}

// Peer is a managed agent that another daemon runs, as the store has it.
type Peer struct {
	Agent
	Node   string // the daemon that runs it: host and state directory
	Latest *Run   // its newest run; nil before the first
}

// snapshot is what the store tells of the peer's state. Its daemon alone
// knows of a permission it waits for, and of prompts queued behind the run.
func (p *Peer) snapshot() *Snapshot {
	s := &Snapshot{Agent: p.Agent, Node: p.Node, Status: StatusIdle}
	if r := p.Latest; r != nil {
		s.Runs = r.Seq
		s.LastMessage = r.LastMessage
		if r.State == RunQueued || r.State == RunRunning {
			s.Current = r
		}
	}
	switch {
	case p.Exited:
		s.Status = StatusExited
	case s.Current != nil:
		s.Status = StatusRunning
	case p.LastError != "":
		s.Status = StatusError
	}
	return s
}

// Peers returns the managed agents of ws (every workspace when ws is "")
// that other daemons on the store run, oldest first; none when the store is
// this daemon's alone.
func (r *Runner) Peers(ctx context.Context, ws string) ([]*Snapshot, error) {
	ps, ok := r.store.(PeerStore)
	if !ok {
		return nil, nil
	}
	peers, err := ps.PeerAgents(ctx, ws, "")
	if err != nil {
		return nil, err
	}
	out := make([]*Snapshot, len(peers))
	for i, p := range peers {
		out[i] = p.snapshot()
	}
	return out, nil
}

// Peer returns the managed agent id of ws that another daemon runs, with up
// to runs of its latest runs, newest first. It is NotFound when no other
// daemon runs such an agent.
func (r *Runner) Peer(ctx context.Context, ws, id string, runs int) (*Snapshot, []*Run, error) {
	const op = "get_agent_status"
	var peers []*Peer
	if ps, ok := r.store.(PeerStore); ok {
		var err error
		if peers, err = ps.PeerAgents(ctx, ws, id); err != nil {
			return nil, nil, err
		}
	}
	if len(peers) == 0 {
		return nil, nil, hub.Errorf(op, hub.NotFound, "no managed agent %q in workspace %s", id, ws)
	}
	s := peers[0].snapshot()
	if runs <= 0 {
		return s, nil, nil
	}
	rs, err := r.store.Runs(ctx, id, runs)
	if err != nil {
		return nil, nil, err
	}
	return s, rs, nil
}
