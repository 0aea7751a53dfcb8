package daemon

import (
	"context"

	"github.com/parley-dev/parley/internal/nudge"
	"github.com/parley-dev/parley/internal/tmux"
)

// startNudger types notices into idle agents' tmux panes when messages come,
// for agents that asked (mcp serve --nudge tmux) or for all when config.toml
// says nudge = "tmux". The panes come from the open MCP sessions.
func (d *Daemon) startNudger(ctx context.Context) {
	if err := tmux.Unavailable(); err != nil {
		if d.conf.Nudge == "tmux" {
			d.log.Warn("config.toml asks for nudge = \"tmux\": ignored", "err", err)
		}
		return
	}
	n := nudge.New(d.hub, &nudge.Options{
		Logger: d.log.With("subsystem", "nudge"),
		All:    d.conf.Nudge == "tmux",
		Locate: func(ws, agent string) (nudge.Target, bool) {
			s, ok := d.mcp.AgentSession(ws, agent)
			return nudge.Target{Socket: s.Tmux.Socket, Pane: s.Tmux.Pane, Nudge: s.Nudge}, ok
		},
	})
	go n.Run(ctx)
}
