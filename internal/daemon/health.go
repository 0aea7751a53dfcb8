package daemon

import (
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/runner"
)

// What the daemon sees of agents for their health (hub.NoteActivity), beside
// what their hooks report and their tool calls: a managed agent's stream
// and status, and every agent's permission requests.

// runnerActivity turns a managed agent's change into activity: its turns,
// tool calls and output; between turns it is resident (the daemon wakes it),
// until it exits. It runs under the runner's lock: the hub only records.
func (d *Daemon) runnerActivity(c runner.Change) {
	if c.Event == nil {
		act := hub.ActResident
		if c.Status == runner.StatusExited {
			act = hub.ActGone
		}
		d.hub.NoteActivity(c.Workspace, c.Agent, act, "")
		return
	}
	act, id := hub.ActProgress, ""
	switch c.Event.Kind {
	case runner.EvRunStarted:
		act = hub.ActTurnStart
	case runner.EvToolUse:
		act, id = hub.ActToolStart, c.Event.ToolUseID
	case runner.EvToolResult:
		act, id = hub.ActToolEnd, c.Event.ToolUseID
	case runner.EvRunFinished, runner.EvInterrupted:
		act = hub.ActTurnEnd
	case runner.EvPermission, runner.EvPermResolved:
		return // the permission inbox's (permissionActivity)
	case runner.EvSteered, runner.EvNote, runner.EvLoopStopped:
		// What Parley did to the run, not a sign of the agent's life: the
		// ladder's nudge, steered in, must not end the stall it answers.
		return
	}
	d.hub.NoteActivity(c.Workspace, c.Agent, act, id)
}

// permissionActivity: an agent with a request pending waits on a person.
func (d *Daemon) permissionActivity(e permission.Event) {
	r := e.Request
	act := hub.ActAnswered
	if e.Kind == permission.EventRequested && r.State == permission.Pending {
		act = hub.ActAsk
	}
	d.hub.NoteActivity(r.Workspace, r.Agent, act, r.ID)
}

// residentAgents marks the managed agents that live on as resident: idle
// between turns, not offline.
func (d *Daemon) residentAgents() {
	for _, a := range d.runner.List("") {
		if a.Status != runner.StatusExited {
			d.hub.NoteActivity(a.Workspace, a.ID, hub.ActResident, "")
		}
	}
}
