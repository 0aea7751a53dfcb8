package ops

import (
	"strings"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/runner"
)

// Conversions from domain values (hub, runner, permission) to wire values;
// nothing else makes them.

// Message renders a hub message for the wire.
func Message(m *hub.Message) api.MessageInfo {
	return api.MessageInfo{
		MessageID: m.ID, From: m.From, To: m.To, Content: m.Content,
		Priority: string(m.Priority), Timestamp: api.FormatTime(m.CreatedAt),
		ReplyTo: m.ReplyTo, ThreadID: m.ThreadID, Metadata: m.Metadata, Payload: m.Payload,
		AckRequired: m.AckRequired, AckDeadline: api.FormatTime(m.AckDeadline),
		Provenance: provenance(m),
	}
}

// provenance is what the daemon attests of m's sending, for the wire.
func provenance(m *hub.Message) api.Provenance {
	o := m.Origin
	p := api.Provenance{Sender: m.From, Kind: api.KindAgent, Role: o.Role, Workspace: m.Workspace, Host: o.Host,
		Via: string(o.Door), Task: o.Task}
	switch {
	case o.Door == hub.DoorDaemon || (o.Door == "" && m.From == hub.NoticeSender):
		p.Kind, p.Role = api.KindParley, ""
	case strings.HasPrefix(m.From, hub.HumanPrefix):
		p.Kind, p.Role = api.KindPerson, ""
	}
	return p
}

// Delivered renders a message handed to its reader: the message, and whether
// it was handed out before.
func Delivered(d *hub.Delivery) api.MessageInfo {
	mi := Message(d.Message)
	if d.Count > 1 {
		mi.DeliveryCount, mi.Redelivered = d.Count, true
	}
	return mi
}

// Messages renders a slice of messages, never returning nil.
func Messages(ms []*hub.Message) []api.MessageInfo {
	out := make([]api.MessageInfo, len(ms))
	for i, m := range ms {
		out[i] = Message(m)
	}
	return out
}

func agentInfo(a hub.AgentView) api.AgentInfo {
	st := "offline"
	if a.Active {
		st = "active"
	}
	return api.AgentInfo{
		Name: a.Name, Role: a.Role, Module: a.Module, Status: st,
		LastSeenAt: api.FormatTime(a.LastSeen), AgentID: a.ID(), WorkStatus: string(a.Status),
		Workspace: a.Workspace, Host: a.Host, Waiting: a.Waiting,
		Health: string(a.Health.Health), HealthSince: api.FormatTime(a.Health.Since), LastProgressAt: api.FormatTime(a.Health.Progress),
	}
}

func groupDetail(g *hub.Group) api.GroupDetail {
	d := api.GroupDetail{Name: g.Name, Description: g.Description, CreatedAt: api.FormatTime(g.CreatedAt),
		CreatedBy: g.CreatedBy, Members: make([]api.MemberInfo, len(g.Members))}
	for i, m := range g.Members {
		d.Members[i] = api.MemberInfo{Type: string(m.Type), ID: m.ID}
	}
	return d
}

func checkResult(ds []*hub.Delivery, remaining int) api.CheckResult {
	out := api.CheckResult{Status: "empty", Messages: make([]api.MessageInfo, len(ds)), Remaining: max(remaining, 0)}
	for i, d := range ds {
		out.Messages[i] = Delivered(d)
	}
	if len(ds) > 0 {
		out.Status = "messages"
	}
	return out
}

// Permission renders a permission request for the wire.
func Permission(p *permission.Request) api.Permission {
	return api.Permission{RequestID: p.ID, AgentID: p.Agent, Workspace: p.Workspace, Run: p.Run, ToolName: p.Tool,
		Input: p.Input, ToolUseID: p.ToolUseID, Source: p.Source, Description: p.Description,
		RequestedAt: p.RequestedAt, ExpiresAt: p.ExpiresAt}
}

func managedAgent(s *runner.Snapshot) api.ManagedAgent {
	a := s.Agent
	v := api.ManagedAgent{
		AgentID: a.ID, Workspace: a.Workspace, Provider: a.Provider, Title: a.Title, Status: string(s.Status),
		Mode: a.Mode, Role: a.Role, Cwd: a.Cwd, AutoWake: a.AutoWake, Worktree: a.Worktree, Branch: a.Branch,
		Command: a.Command, SessionID: a.SessionID, LastError: a.LastError, CostUSD: a.CostUSD,
		LastMessage: s.LastMessage, CurrentRun: managedRun(s.Current), Queued: s.Queued, Runs: s.Runs,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, PendingPermissions: make([]api.Permission, len(s.Pending)),
		Node: s.Node, StopReason: a.StopReason, Owner: a.Owner,
		Budget: api.Budget{MaxTurns: a.Budget.MaxTurns, MaxCost: a.Budget.MaxCostUSD, Turns: a.Turns, CostUSD: a.CostUSD,
			BusySeconds: a.Busy.Seconds()},
	}
	if a.Budget.MaxDuration > 0 {
		v.Budget.MaxDuration = a.Budget.MaxDuration.String()
	}
	for i, p := range s.Pending {
		v.PendingPermissions[i] = Permission(p)
	}
	return v
}

// managedRun renders a run; nil stays nil.
func managedRun(r *runner.Run) *api.ManagedRun {
	if r == nil {
		return nil
	}
	v := &api.ManagedRun{Seq: r.Seq, State: string(r.State), Source: r.Source, Prompt: r.Prompt, QueuedAt: r.QueuedAt,
		ExitCode: r.ExitCode, Error: r.Error, CostUSD: r.CostUSD, Usage: r.Usage, LastMessage: r.LastMessage}
	if !r.StartedAt.IsZero() {
		t := r.StartedAt
		v.StartedAt = &t
	}
	if !r.EndedAt.IsZero() {
		t := r.EndedAt
		v.EndedAt = &t
	}
	return v
}
