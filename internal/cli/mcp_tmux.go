package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/parley-dev/parley/internal/tmux"
	"github.com/parley-dev/parley/internal/workspace"
)

// errTmuxGone ends `mcp serve` when the tmux session it runs in goes away:
// its agent is gone, and a server left behind would keep its presence alive.
var errTmuxGone = errors.New("the tmux session of this MCP server is gone: exiting")

// tmuxPoll is how often `mcp serve` checks its tmux session: a loss is seen
// within about this long (plus one confirming check), well under a second.
const tmuxPoll = 400 * time.Millisecond

// mcpIdentity resolves the identity of `mcp serve`: as every command does, and
// inside tmux, failing any other name, the tmux window's name.
func mcpIdentity(ctx context.Context, g *globals, te tmux.Env, inTmux bool) (workspace.Resolved, error) {
	dir, err := os.Getwd()
	if err != nil {
		return workspace.Resolved{}, err
	}
	l := workspace.Lookup{
		Dir: dir, FlagAgent: g.agent, FlagWS: g.workspace,
	}.FromEnv()
	if inTmux && l.FlagAgent == "" && l.EnvAgent == "" {
		w, err := tmux.Client{Socket: te.Socket}.WindowName(ctx, te.Pane)
		if err != nil {
			fmt.Fprintf(g.stderr, "parley: warning: cannot read the tmux window name (%v); pass --agent NAME\n", err)
		}
		l.AllowTmux, l.TmuxWindow = true, tmux.AgentName(w)
	}
	return workspace.Resolve(l)
}

// watchTmux cancels ctx with errTmuxGone once the tmux session is gone.
func watchTmux(ctx context.Context, cancel context.CancelCauseFunc, te tmux.Env, log *slog.Logger) {
	err := tmux.Client{Socket: te.Socket}.Watch(ctx, te.Pane, tmuxPoll)
	switch {
	case err == nil:
		cancel(errTmuxGone)
	case errors.Is(err, tmux.ErrNoTmux):
		log.Warn("$TMUX is set but tmux cannot be run: not watching the tmux session")
	}
}
