package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// Admission is what a session says of its name as it opens: the naming
// rules' input beyond the directory's (workspace.Resolve, which the
// session ran on its side). An MCP session's headers carry it; the hooks
// and commands of a client session ask Identify with it.
type Admission struct {
	Workspace string
	// Agent is the name the session resolved: given (a flag, PARLEY_AGENT,
	// an identity file made for it, an init --agent), or, with NameFrom,
	// its client session's own.
	Agent    string
	NameFrom string // "" for a given name, else api.NameSession or api.NameProcess
	// Session is the client session's key (workspace.Session.Key); ""
	// when the session does not say (an HTTP client, a token's).
	Session string
	// Own is the client session's own name (workspace.Session.Name), the
	// one it speaks as when the name it was given is held by another.
	Own string
	// Fixed: the name is bound and never given up (an agent token's, a
	// managed agent's, whose runner named it).
	Fixed bool
	// Asked is the name given to a session that speaks as its own already
	// (Agent, with NameFrom), because Identify said another held it: the
	// Note says why.
	Asked string
}

// Admitted is the name an Admission gets.
type Admitted struct {
	Agent    string
	NameFrom string
	// Note tells the session why it does not speak as the name it asked
	// for; "" when it does.
	Note string
}

// Admit applies the rule that a second live client session never silently
// shares an agent: a name given to this session (not derived from it) that
// live sessions of another client session hold is not this session's; it
// speaks as its own name instead, and Note says why. A session that keeps
// its client session's own name because its given one was taken keeps it
// while it lives, even once the name is free again (its hooks ask the same
// and get the same), so that one client session is one agent throughout.
// Names derived from the session, fixed names, and sessions that do not say
// which client session they are are admitted as they are.
func (o *Ops) Admit(in Admission) Admitted {
	out := Admitted{Agent: in.Agent, NameFrom: in.NameFrom}
	if in.Asked != "" && in.NameFrom != "" && in.Session != "" {
		out.Note = o.heldNote(in.Workspace, in.Asked, in.Session, in.Agent)
		return out
	}
	if in.Fixed || in.Session == "" || in.Agent == "" || in.NameFrom != "" || in.Own == "" || in.Own == in.Agent {
		return out
	}
	if len(o.heldBy(in.Workspace, in.Agent, in.Session)) == 0 && !o.hub.Gave(in.Workspace, in.Session, in.Agent) {
		return out
	}
	out.Agent, out.NameFrom = in.Own, api.NameSession
	out.Note = o.heldNote(in.Workspace, in.Agent, in.Session, in.Own)
	return out
}

// heldBy lists the client sessions other than session whose live sessions
// hold the agent.
func (o *Ops) heldBy(ws, agent, session string) []string {
	var others []string
	for _, k := range o.hub.Holders(ws, agent) {
		if k != session {
			others = append(others, k)
		}
	}
	return others
}

// heldNote says why the client session speaks as own, not as asked.
func (o *Ops) heldNote(ws, asked, session, own string) string {
	if others := o.heldBy(ws, asked, session); len(others) > 0 {
		return fmt.Sprintf("%s is held by another live client session (%s), so this session speaks as %s, a name of its own: two sessions never share an agent. Give this one another name (--agent), or end the other session first.",
			asked, strings.Join(others, ", "), own)
	}
	return fmt.Sprintf("this client session speaks as %s, its own name, since it started while %s was held by another; it keeps that name while it lives.", own, asked)
}

// Identify answers which agent a hook or a command of a client session
// speaks as (Admit), so that it speaks as its session's MCP server does.
func (o *Ops) Identify(ctx context.Context, c *Caller, in api.IdentifyRequest) (api.IdentifyResult, error) {
	const op = "identify"
	if err := hub.ValidName("agent name", in.Agent); err != nil {
		return api.IdentifyResult{}, hub.Errorf(op, hub.Invalid, "%v", err)
	}
	if in.Own != "" {
		if err := hub.ValidName("agent name", in.Own); err != nil {
			return api.IdentifyResult{}, hub.Errorf(op, hub.Invalid, "own: %v", err)
		}
	}
	a := o.Admit(Admission{Workspace: c.Workspace, Agent: in.Agent, Session: in.Session, Own: in.Own,
		Fixed: in.Fixed || c.Token != ""})
	return api.IdentifyResult{Agent: a.Agent, Derived: a.NameFrom != "", Note: a.Note}, nil
}

// StartSession registers the caller's client session at its start, from a
// hook of the session (Codex's SessionStart, whose input names the thread;
// Claude Code's): its agent, unless it is one already (whose role and
// module stay unless others are given), provisional and bound to the
// session when its name is the session's own; and its door, if it has one.
// Then the session is reachable before its first tool call.
func (o *Ops) StartSession(ctx context.Context, c *Caller, in api.SessionStartRequest) (api.SessionStartResult, error) {
	const op = "start_session"
	if err := c.needAgent(op); err != nil {
		return api.SessionStartResult{}, err
	}
	a, err := o.hub.Agent(ctx, c.Workspace, c.Agent)
	switch {
	case err == nil && (in.Role == "" || in.Role == a.Role) && (in.Module == "" || in.Module == a.Module):
	case err == nil || hub.IsNotFound(err):
		role, module := in.Role, in.Module
		if err == nil {
			role, module = first(role, a.Role), first(module, a.Module)
		}
		a, err = o.hub.Join(ctx, hub.JoinRequest{Workspace: c.Workspace, Name: c.Agent, Role: role, Module: module,
			SessionBound: in.Derived, Provisional: in.Derived})
		if err != nil {
			return api.SessionStartResult{}, err
		}
	default:
		return api.SessionStartResult{}, err
	}
	out := api.SessionStartResult{Agent: agentInfo(hub.AgentView{Agent: a, Active: o.hub.Active(a), Health: o.hub.Health(a)})}
	if in.Door != nil {
		d, err := o.OpenDoor(ctx, c, *in.Door)
		if err != nil {
			return out, err
		}
		out.Door = &d
	}
	return out, nil
}

// first is the first of vs that is not "".
func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
