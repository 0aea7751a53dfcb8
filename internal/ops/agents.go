package ops

import (
	"context"
	"strings"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// Join registers an agent in the caller's workspace, or updates its role and module.
func (o *Ops) Join(ctx context.Context, c *Caller, in api.JoinRequest) (api.AgentInfo, error) {
	a, err := o.hub.Join(ctx, hub.JoinRequest{Workspace: c.Workspace, Name: in.Name, Role: in.Role, Module: in.Module,
		AllowLookalike: in.AllowLookalike})
	if err != nil {
		return api.AgentInfo{}, err
	}
	return agentInfo(hub.AgentView{Agent: a, Active: o.hub.Active(a), Health: o.hub.Health(a)}), nil
}

// GetAgent returns one agent of the caller's workspace.
func (o *Ops) GetAgent(ctx context.Context, c *Caller, in api.AgentRequest) (api.AgentInfo, error) {
	a, err := o.hub.Agent(ctx, c.Workspace, in.Name)
	if err != nil {
		return api.AgentInfo{}, err
	}
	return agentInfo(hub.AgentView{Agent: a, Active: o.hub.Active(a), Waiting: o.hub.Waiters(c.Workspace, a.Name), Health: o.hub.Health(a)}), nil
}

// ListAgents lists the agents of the caller's workspace with their presence.
func (o *Ops) ListAgents(ctx context.Context, c *Caller, in api.ListAgentsRequest) (api.ListAgentsResult, error) {
	as, err := o.hub.Agents(ctx, c.Workspace)
	if err != nil {
		return api.ListAgentsResult{}, err
	}
	activeOnly := in.IncludeOffline != nil && !*in.IncludeOffline
	out := api.ListAgentsResult{Agents: []api.AgentInfo{}}
	for _, a := range as {
		if activeOnly && !a.Active {
			continue
		}
		out.Agents = append(out.Agents, agentInfo(a))
	}
	out.Count = len(out.Agents)
	return out, nil
}

// SetStatus sets the caller's self-reported status.
func (o *Ops) SetStatus(ctx context.Context, c *Caller, in api.StatusRequest) (api.StatusResult, error) {
	const op = "set_status"
	st, err := hub.ParseStatus(in.Status)
	if err != nil {
		return api.StatusResult{}, err
	}
	if err := c.needAgent(op); err != nil {
		return api.StatusResult{}, err
	}
	if err := o.hub.SetStatus(ctx, c.Workspace, c.Agent, st); err != nil {
		return api.StatusResult{}, err
	}
	return api.StatusResult{Status: string(st), Agent: c.Agent}, nil
}

// Whoami shows the identity the caller speaks for.
func (o *Ops) Whoami(ctx context.Context, c *Caller, _ api.Empty) (api.WhoamiResult, error) {
	out := api.WhoamiResult{Agent: c.Agent, Role: c.Role, Module: c.Module, Workspace: c.Workspace, Profiles: c.Profiles}
	if out.Profiles == nil {
		out.Profiles = []string{}
	}
	if c.Agent != "" {
		out.AgentID = hub.CompositeID(c.Workspace, c.Role, c.Agent)
		n, err := o.hub.Unread(ctx, c.Workspace, c.Agent)
		if err != nil {
			return api.WhoamiResult{}, err
		}
		out.Unread = n
	} else {
		out.Note = "this session has no agent identity: it cannot send or receive messages (\"no sender\"). Start parley mcp serve with --agent NAME (or PARLEY_AGENT, or run `parley join --name NAME --role ROLE` where it starts)."
	}
	if c.Agent != "" && c.NameFrom != "" && c.Token == "" {
		out.Note = "Parley derived this name for your session; give yourself a readable name and role with set_identity (mail to this name follows you)."
		if c.NameNote != "" {
			out.Note = "Parley: " + c.NameNote + " " + out.Note
		}
	}
	return out, nil
}

// SetIdentity renames the caller's session: an agent whose name Parley
// derived (claude-myrepo-3f9a1c) takes a readable one and a role. A name
// that was given (--agent, PARLEY_AGENT, an identity file, a token) stays.
// The new name must be free and read differently from the others'
// (hub.Rename); what the old name had follows, and it stays an alias.
func (o *Ops) SetIdentity(ctx context.Context, c *Caller, in api.SetIdentityRequest) (api.SetIdentityResult, error) {
	const op = "set identity"
	if err := c.needAgent(op); err != nil {
		return api.SetIdentityResult{}, err
	}
	switch {
	case c.Token != "":
		return api.SetIdentityResult{}, hub.Errorf(op, hub.Forbidden, "this session's agent token names its agent, %s: a token's name cannot change", c.Agent)
	case c.NameFrom == "":
		return api.SetIdentityResult{}, hub.Errorf(op, hub.Forbidden, "this session's name, %s, was given to it (--agent, PARLEY_AGENT or an identity file), not derived: only a session that was given no name can choose one", c.Agent)
	case c.Rebind == nil:
		return api.SetIdentityResult{}, hub.Errorf(op, hub.Invalid, "only an MCP session can rename itself")
	}
	name := strings.TrimSpace(in.Name)
	a, err := o.hub.Rename(ctx, hub.RenameRequest{Workspace: c.Workspace, Old: c.Agent, New: name, Role: strings.TrimSpace(in.Role), Module: c.Module})
	if err != nil {
		return api.SetIdentityResult{}, err
	}
	prev := c.Agent
	c.Rebind(ctx, a.Name, a.Role, a.Module)
	c.Agent, c.Role, c.Module = a.Name, a.Role, a.Module
	n, err := o.hub.Unread(ctx, c.Workspace, a.Name)
	if err != nil {
		return api.SetIdentityResult{}, err
	}
	return api.SetIdentityResult{Agent: a.Name, Role: a.Role, AgentID: a.ID(), Workspace: c.Workspace, Previous: prev, Unread: n}, nil
}
