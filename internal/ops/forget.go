package ops

import (
	"context"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// ForgetAgent removes an agent of the caller's workspace (hub.Forget): a
// session that ended, a name nobody uses. Its unread mail bounces back to
// its senders; what it sent stays. A person does it, not an agent.
func (o *Ops) ForgetAgent(ctx context.Context, c *Caller, in api.AgentRequest) (api.ForgetResult, error) {
	ds, err := o.hub.Forget(ctx, c.Workspace, in.Name, hub.ForgetByPerson)
	if err != nil {
		return api.ForgetResult{}, err
	}
	return api.ForgetResult{Agent: in.Name, Bounced: len(ds)}, nil
}
