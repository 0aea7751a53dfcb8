package ops

import (
	"context"
	"os"

	"github.com/oklog/ulid/v2"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// OpenDoor registers (or refreshes) the door of the caller's client
// session: a Claude Code inbox socket, a Codex thread. A door is written by
// this daemon, as this OS user, so only a caller on the daemon's Unix
// socket (the same user) may register one, for its own agent. An MCP
// session that registers its client's door owns it (Caller.DoorOwner): the
// door closes when that session ends (hub.CloseDoorsOf).
func (o *Ops) OpenDoor(ctx context.Context, c *Caller, in api.DoorRequest) (api.DoorInfo, error) {
	owner := c.DoorOwner
	const op = "open_door"
	if err := c.needAgent(op); err != nil {
		return api.DoorInfo{}, err
	}
	if !c.Local {
		return api.DoorInfo{}, hub.Errorf(op, hub.Forbidden, "a door is registered over the daemon's Unix socket only: this daemon writes into it as its own OS user")
	}
	d, err := o.hub.OpenDoor(ctx, hub.SessionDoor{Workspace: c.Workspace, Agent: c.Agent, Kind: hub.DoorKind(in.Kind),
		Session: in.Session, Address: in.Address, Token: in.Token, Owner: owner, UID: os.Getuid()})
	if err != nil {
		return api.DoorInfo{}, err
	}
	return DoorInfo(d), nil
}

// CloseDoor closes a door of the caller's workspace (a person unbinds it).
func (o *Ops) CloseDoor(ctx context.Context, c *Caller, in api.DoorCloseRequest) (api.DoorInfo, error) {
	if in.ID == "" {
		return api.DoorInfo{}, hub.Errorf("close_door", hub.Invalid, "no door id")
	}
	reason := hub.DoorClosedByPerson
	if in.Ended {
		reason = hub.DoorClosedSessionEnded
	}
	d, err := o.hub.CloseDoor(ctx, c.Workspace, in.ID, reason)
	if err != nil {
		return api.DoorInfo{}, err
	}
	return DoorInfo(d), nil
}

// ListDoors lists the doors of the caller's agent, or of the workspace.
func (o *Ops) ListDoors(ctx context.Context, c *Caller, in api.DoorsRequest) (api.DoorsResult, error) {
	agent := c.Agent
	if in.All {
		agent = ""
	}
	ds, err := o.hub.Doors(ctx, c.Workspace, agent, in.Closed)
	if err != nil {
		return api.DoorsResult{}, err
	}
	out := api.DoorsResult{Doors: make([]api.DoorInfo, len(ds))}
	for i, d := range ds {
		out.Doors[i] = DoorInfo(d)
	}
	return out, nil
}

// DoorInfo is a door for the wire, without its token.
func DoorInfo(d *hub.SessionDoor) api.DoorInfo {
	return api.DoorInfo{ID: d.ID, Agent: d.Agent, Kind: string(d.Kind), Session: d.Session, Address: d.Address,
		Host: d.Host, UID: d.UID, OpenedAt: api.FormatTime(d.OpenedAt), RefreshedAt: api.FormatTime(d.RefreshedAt),
		ClosedAt: api.FormatTime(d.ClosedAt), CloseReason: d.CloseReason, ByMCP: d.Owner != ""}
}

// Seen records that the caller's session started a turn carrying a letter
// through its door: the copies the letter told of are seen.
func (o *Ops) Seen(ctx context.Context, c *Caller, in api.SeenRequest) (api.SeenResult, error) {
	const op = "seen"
	if err := c.needAgent(op); err != nil {
		return api.SeenResult{}, err
	}
	if _, err := ulid.ParseStrict(in.Letter); err != nil {
		return api.SeenResult{}, hub.Errorf(op, hub.Invalid, "letter %q is not a letter id", in.Letter)
	}
	n, err := o.hub.LetterSeen(ctx, c.Workspace, c.Agent, in.Letter)
	if err != nil {
		return api.SeenResult{}, err
	}
	return api.SeenResult{Marked: n}, nil
}

// Bounced lists the dead letters: the caller's messages whose copies
// bounced (everyone's with in.All).
func (o *Ops) Bounced(ctx context.Context, c *Caller, in api.BouncedRequest) (api.BouncedResult, error) {
	const op = "list_bounced"
	if err := limitArg(op, "limit", in.Limit); err != nil {
		return api.BouncedResult{}, err
	}
	sender := c.Agent
	if in.All {
		if c.Token != "" {
			return api.BouncedResult{}, hub.Errorf(op, hub.Forbidden, "all is not open to an agent token: it lists other agents' messages; use the admin token")
		}
		sender = ""
	} else if err := c.needAgent(op); err != nil {
		return api.BouncedResult{}, err
	}
	ds, err := o.hub.Bounced(ctx, c.Workspace, sender, in.Limit)
	if err != nil {
		return api.BouncedResult{}, err
	}
	out := api.BouncedResult{Bounced: make([]api.BouncedInfo, 0, len(ds))}
	for _, d := range ds {
		m := d.Message
		out.Bounced = append(out.Bounced, api.BouncedInfo{MessageID: m.ID, From: m.From, To: m.To, Recipient: d.Recipient, State: string(d.State),
			Preview: api.Preview(m.Content), SentAt: api.FormatTime(m.CreatedAt), BouncedAt: api.FormatTime(d.BouncedAt), Reason: d.BounceReason})
	}
	return out, nil
}

// Redeliver sends a bounced or declined copy again: it goes back to its
// recipient's inbox as if new, and the doors, hooks and waits reach it
// again. The message's sender may (an agent token: only its own
// messages), and so may a person on the daemon's socket or dashboard.
func (o *Ops) Redeliver(ctx context.Context, c *Caller, in api.RedeliverRequest) (api.RedeliverResult, error) {
	const op = "redeliver"
	if in.MessageID == "" {
		return api.RedeliverResult{}, hub.Errorf(op, hub.Invalid, "message_id must not be empty")
	}
	st, err := o.hub.MessageStatus(ctx, c.Workspace, "", in.MessageID)
	if err != nil {
		return api.RedeliverResult{}, err
	}
	if c.Token != "" && c.Agent != st.Message.From {
		// An agent token redelivers its own messages; another's does not
		// exist for it (the read rule).
		return api.RedeliverResult{}, hub.Errorf(op, hub.NotFound, "no message %q in this workspace", in.MessageID)
	}
	var out api.RedeliverResult
	for _, d := range st.Deliveries {
		if d.State != hub.Bounced && d.State != hub.Declined || in.Recipient != "" && d.Recipient != in.Recipient {
			continue
		}
		nd, err := o.hub.Redeliver(ctx, c.Workspace, d.Recipient, in.MessageID)
		if err != nil {
			return out, err
		}
		out.Recipients = append(out.Recipients, nd.Recipient)
	}
	if len(out.Recipients) == 0 {
		who := "no recipient's copy"
		if in.Recipient != "" {
			who = in.Recipient + "'s copy"
		}
		return out, hub.Errorf(op, hub.NotFound, "%s of message %s is bounced or declined: nothing to redeliver", who, in.MessageID)
	}
	out.MessageID = in.MessageID
	return out, nil
}
