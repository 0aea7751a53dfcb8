package ops

import (
	"context"
	"strings"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// The dashboard's reads. A person at the dashboard watches the whole
// workspace, not one agent's mail: these see every message and every copy.

// maxDeliveryIDs bounds one Deliveries call: a thread as the page shows it.
const maxDeliveryIDs = 500

// UnreadByAgent counts the unread messages of every agent of the caller's
// workspace that has any (the caller included), in one store query.
func (o *Ops) UnreadByAgent(ctx context.Context, c *Caller, _ api.Empty) (api.UnreadResult, error) {
	n, err := o.hub.UnreadByAgent(ctx, c.Workspace)
	if err != nil {
		return api.UnreadResult{}, err
	}
	return api.UnreadResult{Workspace: c.Workspace, Unread: n}, nil
}

// DashboardLogin mints a one-time link that signs a browser in to the
// dashboard as the person in.User. Only the OS user at the Unix socket may:
// a TCP token may be an agent's, and a browser session must not mint another.
func (o *Ops) DashboardLogin(ctx context.Context, c *Caller, in api.DashboardLoginRequest) (api.DashboardLogin, error) {
	const op = "dashboard login"
	if !c.Local {
		return api.DashboardLogin{}, hub.Errorf(op, hub.Forbidden, "only the daemon's Unix socket issues dashboard sign-in links: run `parley dashboard` on this machine")
	}
	if o.dash == nil {
		return api.DashboardLogin{}, hub.Errorf(op, hub.Unavailable, "this daemon has no dashboard")
	}
	url, exp, err := o.dash.Login(in.User)
	if err != nil {
		return api.DashboardLogin{}, err
	}
	return api.DashboardLogin{URL: url, Addr: o.dash.Addr(), User: in.User, Expires: exp.UTC()}, nil
}

// DashboardSignOutAll ends every dashboard sign-in: open pages show the
// sign-in screen, and their cookies sign in nothing any more.
func (o *Ops) DashboardSignOutAll(ctx context.Context, c *Caller, _ api.Empty) (api.SignOutResult, error) {
	const op = "dashboard sign-out"
	if !c.Local {
		return api.SignOutResult{}, hub.Errorf(op, hub.Forbidden, "only the daemon's Unix socket ends dashboard sign-ins: run `parley dashboard --sign-out-all` on this machine")
	}
	if o.dash == nil {
		return api.SignOutResult{}, hub.Errorf(op, hub.Unavailable, "this daemon has no dashboard")
	}
	return api.SignOutResult{Ended: o.dash.SignOutAll()}, nil
}

// SearchWorkspace finds messages of the whole workspace by words, best
// first, each with a snippet that marks the matches with **.
func (o *Ops) SearchWorkspace(ctx context.Context, c *Caller, in api.DashboardSearchRequest) (api.DashboardSearchResult, error) {
	hits, err := o.hub.Search(ctx, hub.SearchRequest{Workspace: c.Workspace, Query: in.Q, From: in.From, Limit: in.Limit})
	if err != nil {
		return api.DashboardSearchResult{}, err
	}
	out := api.DashboardSearchResult{Hits: []api.DashboardSearchHit{}}
	for _, h := range hits {
		m := h.Message
		out.Hits = append(out.Hits, api.DashboardSearchHit{MessageID: m.ID, ThreadID: m.ThreadID, From: m.From, To: m.To,
			Priority: string(m.Priority), Timestamp: api.FormatTime(m.CreatedAt), Snippet: h.Snippet})
	}
	return out, nil
}

// Deliveries reports where each recipient's copy of the messages stands.
func (o *Ops) Deliveries(ctx context.Context, c *Caller, in api.DeliveriesRequest) (api.DeliveriesResult, error) {
	ids := strings.Split(in.IDs, ",")
	if len(ids) > maxDeliveryIDs {
		return api.DeliveriesResult{}, hub.Errorf("deliveries", hub.Invalid, "%d ids: at most %d at once", len(ids), maxDeliveryIDs)
	}
	out := api.DeliveriesResult{Deliveries: map[string][]api.DeliveryInfo{}}
	for _, id := range ids {
		if id == "" {
			continue
		}
		st, err := o.hub.MessageStatus(ctx, c.Workspace, "", id)
		if err != nil {
			return api.DeliveriesResult{}, err
		}
		ds := []api.DeliveryInfo{}
		for _, d := range st.Deliveries {
			di := api.DeliveryInfo{Recipient: d.Recipient, State: AttentionState(d), Count: d.Count,
				ReadAt: api.FormatTime(d.ReadAt), AckedAt: api.FormatTime(d.AckedAt),
				WakePath: string(d.WokeVia), WokenAt: api.FormatTime(d.WokeAt), SeenAt: api.FormatTime(d.SeenAt),
				BounceReason: d.BounceReason}
			if d.Door != "" && d.Door != hub.DoorDeclined {
				di.Door, di.Note, di.Since, di.Until = string(d.Door), d.DoorNote, api.FormatTime(d.DoorAt), api.FormatTime(d.DoorUntil)
			}
			ds = append(ds, di)
		}
		out.Deliveries[id] = ds
	}
	return out, nil
}
