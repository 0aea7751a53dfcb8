package ops

import (
	"context"
	"strings"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// CreateGroup makes a group in the caller's workspace. Its creator is the
// caller's composite id as the agent's record has it (its role may have
// changed since the session began; an agent not registered has the default
// role), or nobody for a caller without an agent.
func (o *Ops) CreateGroup(ctx context.Context, c *Caller, in api.GroupRequest) (api.GroupResult, error) {
	by := ""
	if c.Agent != "" {
		a, err := o.hub.Agent(ctx, c.Workspace, c.Agent)
		switch {
		case err == nil:
			by = a.ID()
		case hub.IsNotFound(err):
			// Not registered (yet): its name still makes it the creator.
			by = hub.CompositeID(c.Workspace, hub.DefaultRole, c.Agent)
		default:
			return api.GroupResult{}, err
		}
	}
	g, err := o.hub.CreateGroup(ctx, c.Workspace, in.Name, in.Description, by)
	if err != nil {
		return api.GroupResult{}, err
	}
	return api.GroupResult{Status: "created", Name: g.Name}, nil
}

// DeleteGroup removes a group.
func (o *Ops) DeleteGroup(ctx context.Context, c *Caller, in api.GroupNameRequest) (api.GroupResult, error) {
	if err := o.mayChangeGroup(ctx, c, "delete group", in.Name, false); err != nil {
		return api.GroupResult{}, err
	}
	if err := o.hub.DeleteGroup(ctx, c.Workspace, in.Name); err != nil {
		return api.GroupResult{}, err
	}
	return api.GroupResult{Status: "deleted", Name: in.Name}, nil
}

// AddMember adds an agent or a role to a group.
func (o *Ops) AddMember(ctx context.Context, c *Caller, in api.MemberRequest) (api.MemberResult, error) {
	return o.member(ctx, c, in, "added", o.hub.AddGroupMember)
}

// RemoveMember removes an agent or a role from a group.
func (o *Ops) RemoveMember(ctx context.Context, c *Caller, in api.MemberRequest) (api.MemberResult, error) {
	return o.member(ctx, c, in, "removed", o.hub.RemoveGroupMember)
}

func (o *Ops) member(ctx context.Context, c *Caller, in api.MemberRequest, status string, change func(context.Context, string, string, hub.Member) error) (api.MemberResult, error) {
	m, err := hub.ParseMember(in.MemberType, in.MemberID)
	if err != nil {
		return api.MemberResult{}, err
	}
	// A member may leave by itself; joining, or changing others, is the
	// creator's.
	self := status == "removed" && m.Type == hub.MemberAgent && m.ID == c.Agent
	op := "remove group member"
	if status == "added" {
		op = "add group member"
	}
	if err := o.mayChangeGroup(ctx, c, op, in.Group, self); err != nil {
		return api.MemberResult{}, err
	}
	if err := change(ctx, c.Workspace, in.Group, m); err != nil {
		return api.MemberResult{}, err
	}
	return api.MemberResult{Status: status, Group: in.Group, MemberType: in.MemberType, MemberID: in.MemberID}, nil
}

// ListGroups lists the groups of the caller's workspace.
func (o *Ops) ListGroups(ctx context.Context, c *Caller, _ api.Empty) (api.ListGroupsResult, error) {
	gs, err := o.hub.Groups(ctx, c.Workspace)
	if err != nil {
		return api.ListGroupsResult{}, err
	}
	out := api.ListGroupsResult{Groups: make([]api.GroupInfo, len(gs))}
	for i, g := range gs {
		out.Groups[i] = api.GroupInfo{Name: g.Name, Description: g.Description, CreatedAt: api.FormatTime(g.CreatedAt),
			CreatedBy: g.CreatedBy, MemberCount: len(g.Members)}
	}
	return out, nil
}

// GetGroup shows a group and its members; with in.Expand, also the
// composite ids of the agents it reaches now.
func (o *Ops) GetGroup(ctx context.Context, c *Caller, in api.GetGroupRequest) (api.GroupDetail, error) {
	g, err := o.hub.Group(ctx, c.Workspace, in.Name)
	if err != nil {
		return api.GroupDetail{}, err
	}
	d := groupDetail(g)
	if in.Expand {
		names, err := o.hub.Expand(ctx, g)
		if err != nil {
			return api.GroupDetail{}, err
		}
		n := len(names)
		d.ExpandedAgents = make([]string, n)
		for i, name := range names {
			role := ""
			if a, err := o.hub.Agent(ctx, c.Workspace, name); err == nil {
				role = a.Role
			}
			d.ExpandedAgents[i] = hub.CompositeID(c.Workspace, role, name)
		}
		d.ExpandedAgentsCount = &n
	}
	return d, nil
}

// mayChangeGroup applies the group rule to an agent token: a group is
// changed (deleted, members added or removed) by its creator only, except
// that a member removes itself (self). Otherwise an agent could add itself
// to a group to receive its mail, or take others out of it. The Unix
// socket's user and the admin token change any group.
func (o *Ops) mayChangeGroup(ctx context.Context, c *Caller, op, group string, self bool) error {
	if c.Token == "" || self {
		return nil
	}
	g, err := o.hub.Group(ctx, c.Workspace, group)
	if err != nil || g.Name == hub.Everyone {
		return nil // the hub says why it cannot be changed
	}
	if g.CreatedBy != "" && strings.HasSuffix(g.CreatedBy, ":"+hub.NameHash(c.Workspace, c.Agent)) {
		return nil
	}
	by := g.CreatedBy
	if by == "" {
		by = "a person (the CLI or the dashboard)"
	}
	return hub.Errorf(op, hub.Forbidden, "group @%s was created by %s: only its creator and the admin change it (a member may remove itself)", g.Name, by)
}
