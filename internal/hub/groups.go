package hub

import (
	"context"
	"strings"
)

// CreateGroup makes an empty group. @everyone is built in and cannot be
// made, and a group may not take the name of a role that an agent of the
// workspace has.
func (h *Hub) CreateGroup(ctx context.Context, ws, name, description, by string) (*Group, error) {
	const op = "create group"
	name = strings.TrimPrefix(name, "@")
	if err := ValidName("group name", name); err != nil {
		return nil, withOp(op, err)
	}
	if name == Everyone {
		return nil, Errorf(op, Conflict, "@everyone is built in: it always holds every agent")
	}
	if len(description) > 1024 {
		return nil, Errorf(op, Invalid, "description is too long: at most 1024 bytes")
	}
	// @NAME reaches a group or a role: a group named for a role in use
	// would take that role's mail.
	as, err := h.store.Agents(ctx, ws)
	if err != nil {
		return nil, withOp(op, err)
	}
	for _, a := range as {
		if a.Role == name {
			return nil, Errorf(op, Conflict, "%q is a role in use (agent %s has it): @%s reaches that role's agents, so a group may not take its name; choose another", name, a.Name, name)
		}
	}
	g := &Group{Workspace: ws, Name: name, Description: description, CreatedBy: by, CreatedAt: h.now().UTC()}
	if err := h.store.CreateGroup(ctx, g); err != nil {
		if KindOf(err) == Conflict {
			return nil, Errorf(op, Conflict, "group %q exists already", name)
		}
		return nil, withOp(op, err)
	}
	h.publish(Event{Kind: EventGroupChanged, Workspace: ws, Group: name, Change: "created"})
	return g, nil
}

// DeleteGroup removes a group; @everyone is protected.
func (h *Hub) DeleteGroup(ctx context.Context, ws, name string) error {
	const op = "delete group"
	name = strings.TrimPrefix(name, "@")
	if name == Everyone {
		return Errorf(op, Forbidden, "@everyone is built in and cannot be deleted")
	}
	if err := h.store.DeleteGroup(ctx, ws, name); err != nil {
		return groupErr(op, name, err)
	}
	h.publish(Event{Kind: EventGroupChanged, Workspace: ws, Group: name, Change: "deleted"})
	return nil
}

// ParseMember validates a member type and id.
func ParseMember(typ, id string) (Member, error) {
	m := Member{Type: MemberType(typ), ID: id}
	if m.Type != MemberAgent && m.Type != MemberRole {
		return m, Errorf("", Invalid, "invalid member_type %q: want agent or role", typ)
	}
	if err := ValidName(typ+" name", id); err != nil {
		return m, err
	}
	return m, nil
}

// AddGroupMember adds an agent or a role to a group.
func (h *Hub) AddGroupMember(ctx context.Context, ws, group string, m Member) error {
	const op = "add group member"
	group = strings.TrimPrefix(group, "@")
	if group == Everyone {
		return Errorf(op, Forbidden, "@everyone is built in: its members are every agent")
	}
	if _, err := ParseMember(string(m.Type), m.ID); err != nil {
		return withOp(op, err)
	}
	if err := h.store.AddGroupMember(ctx, ws, group, m); err != nil {
		return groupErr(op, group, err)
	}
	h.publish(Event{Kind: EventGroupChanged, Workspace: ws, Group: group, Change: "member_added"})
	return nil
}

// RemoveGroupMember removes an agent or a role from a group.
func (h *Hub) RemoveGroupMember(ctx context.Context, ws, group string, m Member) error {
	const op = "remove group member"
	group = strings.TrimPrefix(group, "@")
	if group == Everyone {
		return Errorf(op, Forbidden, "@everyone is built in: its members are every agent")
	}
	if _, err := ParseMember(string(m.Type), m.ID); err != nil {
		return withOp(op, err)
	}
	if err := h.store.RemoveGroupMember(ctx, ws, group, m); err != nil {
		if IsNotFound(err) {
			if _, gerr := h.store.Group(ctx, ws, group); IsNotFound(gerr) {
				return groupErr(op, group, gerr)
			}
			return Errorf(op, NotFound, "%s %q is not a member of group %q", m.Type, m.ID, group)
		}
		return withOp(op, err)
	}
	h.publish(Event{Kind: EventGroupChanged, Workspace: ws, Group: group, Change: "member_removed"})
	return nil
}

// Group returns a group; @everyone is synthesized with one role member per role.
func (h *Hub) Group(ctx context.Context, ws, name string) (*Group, error) {
	name = strings.TrimPrefix(name, "@")
	if name == Everyone {
		return h.everyone(ctx, ws)
	}
	g, err := h.store.Group(ctx, ws, name)
	if err != nil {
		return nil, groupErr("get group", name, err)
	}
	return g, nil
}

// Expand returns the agent names a group reaches now.
func (h *Hub) Expand(ctx context.Context, g *Group) ([]string, error) {
	as, err := h.store.Agents(ctx, g.Workspace)
	if err != nil {
		return nil, withOp("expand group", err)
	}
	return expandMembers(g.Members, as), nil
}

// Groups lists the groups of ws, @everyone first.
func (h *Hub) Groups(ctx context.Context, ws string) ([]*Group, error) {
	gs, err := h.store.Groups(ctx, ws)
	if err != nil {
		return nil, withOp("list groups", err)
	}
	ev, err := h.everyone(ctx, ws)
	if err != nil {
		return nil, err
	}
	return append([]*Group{ev}, gs...), nil
}

func (h *Hub) everyone(ctx context.Context, ws string) (*Group, error) {
	as, err := h.store.Agents(ctx, ws)
	if err != nil {
		return nil, withOp("get group", err)
	}
	g := &Group{Workspace: ws, Name: Everyone, Description: "every agent in the workspace (built in)", CreatedBy: "parley"}
	for _, a := range as {
		g.Members = append(g.Members, Member{Type: MemberAgent, ID: a.Name})
		if g.CreatedAt.IsZero() || a.CreatedAt.Before(g.CreatedAt) {
			g.CreatedAt = a.CreatedAt
		}
	}
	return g, nil
}

func groupErr(op, name string, err error) error {
	if IsNotFound(err) {
		return Errorf(op, NotFound, "no group named %q: create it with create_group or `parley group create %s`", name, name)
	}
	return withOp(op, err)
}
