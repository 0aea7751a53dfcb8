package ops

import (
	"context"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// ReportActivity records what the caller's agent is doing, as its client's
// hooks see it (a prompt, a tool call, a stop), for its health.
func (o *Ops) ReportActivity(ctx context.Context, c *Caller, in api.ReportActivityRequest) (api.ReportActivityResult, error) {
	const op = "report activity"
	if err := c.needAgent(op); err != nil {
		return api.ReportActivityResult{}, err
	}
	act := hub.Activity(in.Activity)
	if err := hub.ValidActivity(act); err != nil {
		return api.ReportActivityResult{}, hub.Errorf(op, hub.Invalid, "%v", err)
	}
	if len(in.ID) > 256 {
		return api.ReportActivityResult{}, hub.Errorf(op, hub.Invalid, "id is too long: at most 256 bytes")
	}
	o.hub.NoteActivity(c.Workspace, c.Agent, act, in.ID)
	o.hub.Touch(ctx, c.Workspace, c.Agent)
	out := api.ReportActivityResult{Agent: c.Agent, Health: string(hub.HealthOffline)}
	if a, err := o.hub.Agent(ctx, c.Workspace, c.Agent); err == nil {
		out.Health = string(o.hub.Health(a).Health)
	} else if !hub.IsNotFound(err) {
		return api.ReportActivityResult{}, err
	}
	return out, nil
}

// ToolCall counts a tool call of the caller's agent as in flight, for its
// health, until the returned function is called.
func (o *Ops) ToolCall(c *Caller) (done func()) {
	return o.hub.ToolCall(c.Workspace, c.Agent)
}
