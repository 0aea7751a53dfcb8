package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// Inputs of the native profile, with seed 000's names.
type (
	sendIn struct {
		To       string            `json:"to" jsonschema:"recipient: an agent name, @role, @group, @everyone, or a composite id agent:role:hash"`
		Content  string            `json:"content" jsonschema:"message text (markdown)"`
		ReplyTo  string            `json:"reply_to,omitempty" jsonschema:"id of the message this replies to (threads the reply)"`
		Priority string            `json:"priority,omitempty" jsonschema:"critical, high, normal (default) or low"`
		Metadata map[string]string `json:"metadata,omitempty" jsonschema:"key-value metadata"`
	}
	checkIn struct {
		Limit int `json:"limit,omitempty" jsonschema:"most messages to return (default 50)"`
	}
	waitIn struct {
		Timeout        *int   `json:"timeout,omitempty" jsonschema:"most seconds to wait (default 300, max 600)"`
		PriorityFilter string `json:"priority_filter,omitempty" jsonschema:"all (default), critical, high_and_above or normal_and_above"`
	}
	listAgentsIn struct {
		IncludeOffline *bool `json:"include_offline,omitempty" jsonschema:"include agents that are not active (default true)"`
	}
	broadcastIn struct {
		Content  string               `json:"content" jsonschema:"message text to broadcast"`
		Priority string               `json:"priority,omitempty" jsonschema:"critical, high, normal (default) or low"`
		Filter   *api.BroadcastFilter `json:"filter,omitempty" jsonschema:"optional recipient filters"`
	}
	createGroupIn struct {
		Name        string `json:"name" jsonschema:"group name, e.g. reviewers"`
		Description string `json:"description,omitempty" jsonschema:"what the group is for"`
	}
	groupNameIn struct {
		Name string `json:"name" jsonschema:"group name"`
	}
	memberIn struct {
		Group      string `json:"group" jsonschema:"group name"`
		MemberType string `json:"member_type" jsonschema:"agent or role"`
		MemberID   string `json:"member_id" jsonschema:"agent name or role name"`
	}
	getGroupIn struct {
		Name   string `json:"name" jsonschema:"group name"`
		Expand bool   `json:"expand,omitempty" jsonschema:"resolve roles to the agents they hold now"`
	}
	setStatusIn struct {
		Status string `json:"status" jsonschema:"ready, work or offline"`
	}
	threadIn struct {
		MessageID string `json:"message_id" jsonschema:"any message of the thread"`
	}
	empty struct{}
)

// native registers seed 000's eleven tools and Parley's extras.
func (s *Server) native(srv *mcp.Server) {
	addTool(srv, "send_message", "Send a message to an agent (by name, even one that has not joined yet), a role (@role), a group (@group) or everyone (@everyone). Returns once the message is stored.", s.sendMessage)
	addTool(srv, "check_messages", "Return your unread messages, highest priority first then oldest first, and mark them read.", s.checkMessages)
	addTool(srv, "wait_for_message", "Block until a message for you arrives (or the timeout passes), then return it and mark it read. Sends progress notifications while waiting when given a progress token.", s.waitForMessage)
	addTool(srv, "list_agents", "List the agents of this workspace with their presence (active or offline).", s.listAgents)
	addTool(srv, "broadcast_message", "Send one message to every other agent of the workspace, optionally only active ones or excluding names or roles.", s.broadcastMessage)
	addTool(srv, "create_group", "Create a named group to address as @name.", s.createGroup)
	addTool(srv, "delete_group", "Delete a group. @everyone is built in and cannot be deleted.", s.deleteGroup)
	addTool(srv, "add_group_member", "Add an agent or a whole role to a group.", s.addGroupMember)
	addTool(srv, "remove_group_member", "Remove an agent or a role from a group.", s.removeGroupMember)
	addTool(srv, "list_groups", "List the groups of this workspace.", s.listGroups)
	addTool(srv, "get_group", "Show a group and its members; expand=true also lists the agents it reaches now.", s.getGroup)
	// Parley's extras.
	addTool(srv, "whoami", "Show the identity this session speaks for.", s.whoami)
	addTool(srv, "set_status", "Say whether you are ready for work, at work, or offline.", s.setStatus)
	addTool(srv, "get_thread", "Return every message of the thread a message belongs to, oldest first.", s.getThread)
}

func (s *Server) sendMessage(ctx context.Context, req *mcp.CallToolRequest, in sendIn) (*mcp.CallToolResult, api.SendResult, error) {
	id := IdentityFrom(ctx)
	res, err := s.hub.Send(ctx, hub.SendRequest{Workspace: id.Workspace, From: id.Agent, To: in.To,
		Content: in.Content, Priority: in.Priority, ReplyTo: in.ReplyTo, Metadata: in.Metadata})
	if err != nil {
		return nil, api.SendResult{}, err
	}
	return nil, s.sendResult(ctx, res), nil
}

// SendResult renders a hub send for the wire.
func (s *Server) sendResult(_ context.Context, res *hub.SendResult) api.SendResult {
	out := api.SendResult{Status: "delivered", MessageID: res.Message.ID, Recipients: res.Recipients, ThreadID: res.Message.ThreadID}
	out.RecipientStatus = "mixed"
	if len(res.Presence) == 1 {
		out.RecipientStatus = string(res.Presence[0])
	}
	return out
}

func (s *Server) checkMessages(ctx context.Context, req *mcp.CallToolRequest, in checkIn) (*mcp.CallToolResult, api.CheckResult, error) {
	id := IdentityFrom(ctx)
	if in.Limit < 0 {
		return nil, api.CheckResult{}, hub.Errorf("check_messages", hub.Invalid, "limit must not be negative")
	}
	msgs, remaining, err := s.hub.Check(ctx, id.Workspace, id.Agent, in.Limit)
	if err != nil {
		return nil, api.CheckResult{}, err
	}
	out := api.CheckResult{Status: "empty", Messages: api.Messages(msgs), Remaining: remaining}
	if len(msgs) > 0 {
		out.Status = "messages"
	}
	return nil, out, nil
}

func (s *Server) waitForMessage(ctx context.Context, req *mcp.CallToolRequest, in waitIn) (*mcp.CallToolResult, api.WaitResult, error) {
	id := IdentityFrom(ctx)
	secs := 0
	if in.Timeout != nil {
		secs = *in.Timeout
		if secs == 0 {
			return nil, api.WaitResult{}, hub.Errorf("wait_for_message", hub.Invalid, "timeout must be between 1 and %d seconds", int(hub.MaxWaitTimeout/time.Second))
		}
	}
	timeout, err := hub.ValidTimeout(secs)
	if err != nil {
		return nil, api.WaitResult{}, err
	}
	filter, err := hub.ParsePriorityFilter(in.PriorityFilter)
	if err != nil {
		return nil, api.WaitResult{}, err
	}
	wr := hub.WaitRequest{Workspace: id.Workspace, Agent: id.Agent, Timeout: timeout, Filter: filter}
	if token := req.Params.GetProgressToken(); token != nil {
		total := timeout.Seconds()
		wr.ProgressEvery = s.opts.ProgressEvery
		wr.Progress = func(waited time.Duration) {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: waited.Seconds(), Total: total,
				Message: fmt.Sprintf("waiting for a message (%ds of %ds)", int(waited.Seconds()), int(total)),
			})
			if err != nil {
				s.log.Debug("progress notification", "err", err)
			}
		}
	}
	start := time.Now()
	m, err := s.hub.Wait(ctx, wr)
	if err != nil {
		return nil, api.WaitResult{}, err
	}
	out := api.WaitResult{Status: "timeout", WaitedSeconds: int(time.Since(start).Seconds())}
	if m != nil {
		mi := api.Message(m)
		out.Status, out.Message = "message_received", &mi
	}
	return nil, out, nil
}

func (s *Server) listAgents(ctx context.Context, req *mcp.CallToolRequest, in listAgentsIn) (*mcp.CallToolResult, api.ListAgentsResult, error) {
	id := IdentityFrom(ctx)
	as, err := s.hub.Agents(ctx, id.Workspace)
	if err != nil {
		return nil, api.ListAgentsResult{}, err
	}
	out := api.ListAgentsResult{Agents: []api.AgentInfo{}}
	for _, a := range as {
		if in.IncludeOffline != nil && !*in.IncludeOffline && !a.Active {
			continue
		}
		out.Agents = append(out.Agents, api.Agent(a))
	}
	out.Count = len(out.Agents)
	return nil, out, nil
}

func (s *Server) broadcastMessage(ctx context.Context, req *mcp.CallToolRequest, in broadcastIn) (*mcp.CallToolResult, api.BroadcastResult, error) {
	id := IdentityFrom(ctx)
	br := hub.BroadcastRequest{Workspace: id.Workspace, From: id.Agent, Content: in.Content, Priority: in.Priority}
	if in.Filter != nil {
		switch in.Filter.Status {
		case "", "all":
		case "active":
			br.ActiveOnly = true
		default:
			return nil, api.BroadcastResult{}, hub.Errorf("broadcast_message", hub.Invalid, "invalid filter.status %q: want all or active", in.Filter.Status)
		}
		br.Exclude = in.Filter.Exclude
	}
	res, err := s.hub.Broadcast(ctx, br)
	if err != nil {
		return nil, api.BroadcastResult{}, err
	}
	return nil, BroadcastResult(res), nil
}

// BroadcastResult renders a broadcast for the wire.
func BroadcastResult(res *hub.SendResult) api.BroadcastResult {
	out := api.BroadcastResult{Status: "no_recipients", SentTo: []string{}, FailedTo: []string{}, MessageIDs: []string{}}
	if res.Message != nil {
		out.Status = "sent"
		out.SentTo = res.Recipients
		out.TotalSent = len(res.Recipients)
		out.MessageIDs = []string{res.Message.ID}
	}
	return out
}

func (s *Server) createGroup(ctx context.Context, req *mcp.CallToolRequest, in createGroupIn) (*mcp.CallToolResult, api.GroupResult, error) {
	id := IdentityFrom(ctx)
	g, err := s.hub.CreateGroup(ctx, id.Workspace, in.Name, in.Description, creator(id))
	if err != nil {
		return nil, api.GroupResult{}, err
	}
	return nil, api.GroupResult{Status: "created", Name: g.Name}, nil
}

func creator(id *Identity) string {
	if id.Agent == "" {
		return ""
	}
	return hub.CompositeID(id.Workspace, id.Role, id.Agent)
}

func (s *Server) deleteGroup(ctx context.Context, req *mcp.CallToolRequest, in groupNameIn) (*mcp.CallToolResult, api.GroupResult, error) {
	id := IdentityFrom(ctx)
	if err := s.hub.DeleteGroup(ctx, id.Workspace, in.Name); err != nil {
		return nil, api.GroupResult{}, err
	}
	return nil, api.GroupResult{Status: "deleted", Name: in.Name}, nil
}

func (s *Server) addGroupMember(ctx context.Context, req *mcp.CallToolRequest, in memberIn) (*mcp.CallToolResult, api.MemberResult, error) {
	return s.member(ctx, in, "added", s.hub.AddGroupMember)
}

func (s *Server) removeGroupMember(ctx context.Context, req *mcp.CallToolRequest, in memberIn) (*mcp.CallToolResult, api.MemberResult, error) {
	return s.member(ctx, in, "removed", s.hub.RemoveGroupMember)
}

func (s *Server) member(ctx context.Context, in memberIn, status string, op func(context.Context, string, string, hub.Member) error) (*mcp.CallToolResult, api.MemberResult, error) {
	id := IdentityFrom(ctx)
	m, err := hub.ParseMember(in.MemberType, in.MemberID)
	if err != nil {
		return nil, api.MemberResult{}, err
	}
	if err := op(ctx, id.Workspace, in.Group, m); err != nil {
		return nil, api.MemberResult{}, err
	}
	return nil, api.MemberResult{Status: status, Group: in.Group, MemberType: in.MemberType, MemberID: in.MemberID}, nil
}

func (s *Server) listGroups(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, api.ListGroupsResult, error) {
	id := IdentityFrom(ctx)
	gs, err := s.hub.Groups(ctx, id.Workspace)
	if err != nil {
		return nil, api.ListGroupsResult{}, err
	}
	return nil, ListGroups(gs), nil
}

// ListGroups renders groups for the wire.
func ListGroups(gs []*hub.Group) api.ListGroupsResult {
	out := api.ListGroupsResult{Groups: make([]api.GroupInfo, len(gs))}
	for i, g := range gs {
		out.Groups[i] = api.GroupInfo{Name: g.Name, Description: g.Description, CreatedAt: api.FormatTime(g.CreatedAt),
			CreatedBy: g.CreatedBy, MemberCount: len(g.Members)}
	}
	return out
}

func (s *Server) getGroup(ctx context.Context, req *mcp.CallToolRequest, in getGroupIn) (*mcp.CallToolResult, api.GroupDetail, error) {
	id := IdentityFrom(ctx)
	d, err := GroupDetail(ctx, s.hub, id.Workspace, in.Name, in.Expand)
	return nil, d, err
}

// GroupDetail loads a group for the wire, expanded on request.
func GroupDetail(ctx context.Context, h *hub.Hub, ws, name string, expand bool) (api.GroupDetail, error) {
	g, err := h.Group(ctx, ws, name)
	if err != nil {
		return api.GroupDetail{}, err
	}
	d := api.Group(g)
	if expand {
		names, err := h.Expand(ctx, g)
		if err != nil {
			return api.GroupDetail{}, err
		}
		n := len(names)
		d.ExpandedAgents = make([]string, n)
		for i, name := range names {
			role := ""
			if a, err := h.Agent(ctx, ws, name); err == nil {
				role = a.Role
			}
			d.ExpandedAgents[i] = hub.CompositeID(ws, role, name)
		}
		d.ExpandedAgentsCount = &n
	}
	return d, nil
}

type whoamiOut struct {
	Agent     string   `json:"agent"`
	Role      string   `json:"role"`
	Module    string   `json:"module"`
	AgentID   string   `json:"agent_id"`
	Workspace string   `json:"workspace"`
	Profiles  []string `json:"profiles"`
	Unread    int      `json:"unread"`
}

func (s *Server) whoami(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, whoamiOut, error) {
	id := IdentityFrom(ctx)
	out := whoamiOut{Agent: id.Agent, Role: id.Role, Module: id.Module, Workspace: id.Workspace, Profiles: id.Profiles}
	if id.Agent != "" {
		out.AgentID = hub.CompositeID(id.Workspace, id.Role, id.Agent)
		n, err := s.hub.Unread(ctx, id.Workspace, id.Agent)
		if err != nil {
			return nil, whoamiOut{}, err
		}
		out.Unread = n
	}
	return nil, out, nil
}

type setStatusOut struct {
	Status string `json:"status"`
	Agent  string `json:"agent"`
}

func (s *Server) setStatus(ctx context.Context, req *mcp.CallToolRequest, in setStatusIn) (*mcp.CallToolResult, setStatusOut, error) {
	id := IdentityFrom(ctx)
	st, err := hub.ParseStatus(in.Status)
	if err != nil {
		return nil, setStatusOut{}, err
	}
	if id.Agent == "" {
		return nil, setStatusOut{}, hub.Errorf("set_status", hub.Invalid, "no agent identity: pass --agent, or the Parley-Agent header")
	}
	if err := s.hub.SetStatus(ctx, id.Workspace, id.Agent, st); err != nil {
		return nil, setStatusOut{}, err
	}
	return nil, setStatusOut{Status: string(st), Agent: id.Agent}, nil
}

func (s *Server) getThread(ctx context.Context, req *mcp.CallToolRequest, in threadIn) (*mcp.CallToolResult, api.HistoryResult, error) {
	id := IdentityFrom(ctx)
	m, err := s.hub.Message(ctx, id.Workspace, in.MessageID)
	if err != nil {
		return nil, api.HistoryResult{}, err
	}
	ms, err := s.hub.History(ctx, id.Workspace, hub.HistoryQuery{Thread: m.ThreadID, Limit: 1000})
	if err != nil {
		return nil, api.HistoryResult{}, err
	}
	// History is newest first; a thread reads oldest first.
	for i, j := 0, len(ms)-1; i < j; i, j = i+1, j-1 {
		ms[i], ms[j] = ms[j], ms[i]
	}
	return nil, api.HistoryResult{Messages: api.Messages(ms)}, nil
}
