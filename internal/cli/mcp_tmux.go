package cli

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/parley-dev/parley/internal/tmux"
)

// errTmuxGone ends `mcp serve` when the tmux session it runs in goes away:
// its agent is gone, and a server left behind would keep its presence alive.
var errTmuxGone = errors.New("the tmux session of this MCP server is gone: exiting")

// tmuxPoll is how often `mcp serve` checks its tmux session: a loss is seen
// within about this long (plus one confirming check), well under a second.
const tmuxPoll = 400 * time.Millisecond

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
