package daemon

import (
	"strings"

	"github.com/parley-dev/parley/internal/hub"
)

// fenceNotices tells this daemon's MCP sessions at once what its fence
// tells its event stream (internal/hub's fence.go): that it is cut off from
// its store (a claim through it "may be lost", its reservations "ended"),
// that the others reclaimed it, or that all stands. An agent that watches
// no event stream reads it in its next tool result.
func (d *Daemon) fenceNotices(e hub.Event) {
	if e.Remote {
		return
	}
	switch {
	case e.Kind == hub.EventDaemonStore:
		d.ops.Notice(e.Workspace, "", e.Text)
	case e.Kind == hub.EventTaskAtRisk:
		d.ops.Notice(e.Workspace, e.Agent, e.Text)
	case e.Kind == hub.EventReservations && e.Change == "ended":
		paths := map[string][]string{}
		for _, r := range e.Reservations {
			paths[r.Agent] = append(paths[r.Agent], r.Pattern)
		}
		for agent, ps := range paths {
			d.ops.Notice(e.Workspace, agent, "Your reservation of "+strings.Join(ps, ", ")+" ended: "+e.Text)
		}
	}
}
