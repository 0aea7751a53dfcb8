package ops

import (
	"context"

	"github.com/parley-dev/parley/internal/hub"
)

// elsewhere turns the runner's not-found for a managed agent that another
// daemon on the shared store runs into an error naming that daemon: only it
// holds the agent's process and queue, so only it can act on the agent.
func (o *Ops) elsewhere(ctx context.Context, op, ws, id string, err error) error {
	if !hub.IsNotFound(err) {
		return err
	}
	s, _, perr := o.runner.Peer(ctx, ws, id, 0)
	if perr != nil {
		return err
	}
	return hub.Errorf(op, hub.Conflict, "managed agent %q runs on another daemon (%s): %s it through that daemon", id, s.Node, verbs[op])
}

// verbs say what each operation on a managed agent does, for elsewhere.
var verbs = map[string]string{
	"send_agent_prompt": "prompt",
	"cancel_agent":      "cancel",
	"kill_agent":        "kill",
	"set_agent_mode":    "set the mode of",
	"wait_for_agent":    "wait for",
}
