package ops

import (
	"context"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// MyWork returns the caller's working set: the tasks it claimed, the files
// it reserved, its messages still waiting for an answer, and its unread
// count, as the daemon keeps them across the agent's compactions.
func (o *Ops) MyWork(ctx context.Context, c *Caller, _ api.Empty) (api.WorkResult, error) {
	const op = "my_work"
	if err := c.needAgent(op); err != nil {
		return api.WorkResult{}, err
	}
	w, err := o.hub.Work(ctx, c.Workspace, c.Agent)
	if err != nil {
		return api.WorkResult{}, err
	}
	return workResult(w), nil
}

func workResult(w *hub.WorkingSet) api.WorkResult {
	out := api.WorkResult{Agent: w.Agent, Tasks: []api.WorkTask{}, Reservations: []api.ReservationInfo{}, Asks: []api.WorkAsk{}, Unread: w.Unread}
	for _, d := range w.Tasks {
		t := api.WorkTask{TaskID: d.MessageID, Queue: d.Recipient, ClaimedAt: api.FormatTime(d.DeliveredAt), LeaseUntil: api.FormatTime(d.LeaseUntil)}
		if m := d.Message; m != nil {
			t.From, t.Content = m.From, m.Content
		}
		out.Tasks = append(out.Tasks, t)
	}
	for _, r := range w.Reservations {
		out.Reservations = append(out.Reservations, api.ReservationOf(r))
	}
	for _, a := range w.Asks {
		out.Asks = append(out.Asks, api.WorkAsk{MessageID: a.Message.ID, To: a.Message.To, Kind: a.Kind, Pending: a.Pending,
			Since: api.FormatTime(a.Since), Preview: api.Preview(a.Message.Content)})
	}
	return out
}
