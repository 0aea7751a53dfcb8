package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/runner"
)

// Operations on managed agents (seed 003's manager and self tools, and the
// /api/v1/managed endpoints), scoped to the caller's workspace.

func (o *Ops) managed(op string) error {
	if o.runner == nil {
		return hub.Errorf(op, hub.Unavailable, "this daemon runs no managed agents")
	}
	return nil
}

// CreateAgent launches a managed agent and runs its first prompt.
func (o *Ops) CreateAgent(ctx context.Context, c *Caller, in api.CreateManagedAgentRequest) (api.ManagedAgent, error) {
	if err := o.managed("create_agent"); err != nil {
		return api.ManagedAgent{}, err
	}
	budget := runner.Budget{MaxTurns: in.MaxTurns, MaxCostUSD: in.MaxCost}
	if in.MaxDuration != "" {
		d, err := time.ParseDuration(in.MaxDuration)
		if err != nil || d <= 0 {
			return api.ManagedAgent{}, hub.Errorf("create_agent", hub.Invalid, "invalid max_duration %q: want a duration such as 30m or 2h", in.MaxDuration)
		}
		budget.MaxDuration = d
	}
	a, err := o.runner.Create(ctx, runner.CreateRequest{Workspace: c.Workspace, Provider: in.Provider, Cwd: in.Cwd,
		Title: in.Title, Mode: in.Mode, Prompt: in.Prompt, Worktree: in.Worktree, Command: in.Command, Name: in.Name,
		Role: in.Role, AutoWake: in.AutoWake, Owner: c.Agent, Budget: budget})
	if err != nil {
		return api.ManagedAgent{}, err
	}
	return managedAgent(a), nil
}

// WaitNoProgress is wait_for_agent's default timeout for an MCP client that
// sent no progress token, and so cannot be kept alive with progress.
const WaitNoProgress = 50 * time.Second

// WaitAgent blocks until the agent's run ends, it asks for permission, or
// the timeout passes.
func (o *Ops) WaitAgent(ctx context.Context, c *Caller, in api.WaitAgentRequest) (api.WaitAgentResult, error) {
	const op = "wait_for_agent"
	if err := o.managed(op); err != nil {
		return api.WaitAgentResult{}, err
	}
	def := hub.DefaultWaitTimeout
	if c.Progress == nil && len(c.Profiles) > 0 {
		// An MCP client that sent no progress token gives up on its own
		// (the TypeScript SDK at 60 s): answer before it does.
		def = WaitNoProgress
	}
	timeout, err := secondsArg(op, in.Timeout, def, hub.MaxWaitTimeout)
	if err != nil {
		return api.WaitAgentResult{}, err
	}
	progress := o.keepAlive(c, timeout, func(waited time.Duration) string {
		return fmt.Sprintf("waiting for agent %s (%ds of %ds)", in.AgentID, int(waited.Seconds()), int(timeout.Seconds()))
	})
	w, err := o.runner.Wait(ctx, c.Workspace, in.AgentID, in.Run, timeout, o.progressEvery, progress)
	if err != nil {
		return api.WaitAgentResult{}, o.elsewhere(ctx, op, c.Workspace, in.AgentID, err)
	}
	out := api.WaitAgentResult{AgentID: in.AgentID, Status: string(w.Status), LastMessage: w.LastMessage,
		Run: managedRun(w.Run), TimedOut: w.TimedOut, Waited: w.Waited.Seconds()}
	if w.Permission != nil {
		p := Permission(w.Permission)
		out.Permission = &p
	}
	if w.TimedOut {
		out.LastMessage = "waiting for the agent timed out; this does not mean it failed: call wait_for_agent again to keep waiting"
	}
	return out, nil
}

// PromptAgent gives the agent a task: streamed into the run in progress when
// its provider steers, else queued behind it.
func (o *Ops) PromptAgent(ctx context.Context, c *Caller, in api.PromptRequest) (api.PromptResult, error) {
	if err := o.managed("send_agent_prompt"); err != nil {
		return api.PromptResult{}, err
	}
	q, err := o.runner.Prompt(ctx, c.Workspace, in.AgentID, in.Prompt)
	if err != nil {
		return api.PromptResult{}, o.elsewhere(ctx, "send_agent_prompt", c.Workspace, in.AgentID, err)
	}
	return api.PromptResult{Success: true, AgentID: in.AgentID, Status: string(q.Status), Run: q.Run, Queued: q.Queued, Steered: q.Steered}, nil
}

// AgentStatus returns the agent's snapshot.
func (o *Ops) AgentStatus(ctx context.Context, c *Caller, in api.AgentIDRequest) (api.AgentStatusResult, error) {
	if err := o.managed("get_agent_status"); err != nil {
		return api.AgentStatusResult{}, err
	}
	a, err := o.runner.Get(c.Workspace, in.AgentID)
	if hub.IsNotFound(err) {
		a, _, err = o.runner.Peer(ctx, c.Workspace, in.AgentID, 0)
	}
	if err != nil {
		return api.AgentStatusResult{}, err
	}
	return api.AgentStatusResult{Status: string(a.Status), Snapshot: managedAgent(a)}, nil
}

// AgentDetail returns the agent and its latest runs.
func (o *Ops) AgentDetail(ctx context.Context, c *Caller, in api.AgentIDRequest) (api.ManagedAgentDetail, error) {
	if err := o.managed("agent detail"); err != nil {
		return api.ManagedAgentDetail{}, err
	}
	a, runs, err := o.runner.Detail(ctx, c.Workspace, in.AgentID, 10)
	if hub.IsNotFound(err) {
		a, runs, err = o.runner.Peer(ctx, c.Workspace, in.AgentID, 10)
	}
	if err != nil {
		return api.ManagedAgentDetail{}, err
	}
	d := api.ManagedAgentDetail{ManagedAgent: managedAgent(a), RecentRuns: make([]api.ManagedRun, len(runs))}
	for i, r := range runs {
		d.RecentRuns[i] = *managedRun(r)
	}
	return d, nil
}

// ListManaged lists the managed agents of the caller's workspace, or of all.
func (o *Ops) ListManaged(ctx context.Context, c *Caller, in api.ManagedListRequest) (api.ManagedAgentsResult, error) {
	if err := o.managed("list_agents"); err != nil {
		return api.ManagedAgentsResult{}, err
	}
	ws := c.Workspace
	if in.All {
		ws = ""
	}
	// Every daemon on a shared store lists the agents that the others run.
	peers, err := o.runner.Peers(ctx, ws)
	if err != nil {
		return api.ManagedAgentsResult{}, err
	}
	as := append(o.runner.List(ws), peers...)
	out := api.ManagedAgentsResult{Agents: make([]api.ManagedAgent, len(as)), Count: len(as)}
	for i, a := range as {
		out.Agents[i] = managedAgent(a)
	}
	return out, nil
}

// CancelAgent interrupts the agent's current run.
func (o *Ops) CancelAgent(ctx context.Context, c *Caller, in api.AgentIDRequest) (api.SuccessResult, error) {
	if err := o.managed("cancel_agent"); err != nil {
		return api.SuccessResult{}, err
	}
	out, err := o.runner.Cancel(ctx, c.Workspace, in.AgentID)
	if err != nil {
		return api.SuccessResult{}, o.elsewhere(ctx, "cancel_agent", c.Workspace, in.AgentID, err)
	}
	return api.SuccessResult{Success: out.Done, Status: string(out.Status), Message: out.Note}, nil
}

// KillAgent ends the agent for good.
func (o *Ops) KillAgent(ctx context.Context, c *Caller, in api.AgentIDRequest) (api.SuccessResult, error) {
	if err := o.managed("kill_agent"); err != nil {
		return api.SuccessResult{}, err
	}
	out, err := o.runner.Kill(ctx, c.Workspace, in.AgentID)
	if err != nil {
		return api.SuccessResult{}, o.elsewhere(ctx, "kill_agent", c.Workspace, in.AgentID, err)
	}
	return api.SuccessResult{Success: out.Done, Status: string(out.Status), Message: out.Note}, nil
}

// Activity returns a page of the agent's timeline.
func (o *Ops) Activity(ctx context.Context, c *Caller, in api.ActivityRequest) (api.ActivityResult, error) {
	const op = "get_agent_activity"
	if err := o.managed(op); err != nil {
		return api.ActivityResult{}, err
	}
	off := -1
	if in.Offset != nil {
		if err := limitArg(op, "offset", *in.Offset); err != nil {
			return api.ActivityResult{}, err
		}
		off = *in.Offset
	}
	if err := limitArg(op, "limit", in.Limit); err != nil {
		return api.ActivityResult{}, err
	}
	p, err := o.runner.Activity(ctx, c.Workspace, in.AgentID, off, in.Limit)
	if err != nil {
		return api.ActivityResult{}, err
	}
	out := api.ActivityResult{AgentID: in.AgentID, Status: string(p.Status), CurrentMode: p.Mode, UpdateCount: p.Total,
		Offset: p.Offset, Content: p.Summary(), Events: make([]api.ActivityEvent, len(p.Events))}
	for i, e := range p.Events {
		out.Events[i] = api.ActivityEvent{Seq: e.Seq, Run: e.Run, Time: e.Time, Kind: e.Kind, Text: e.Text,
			Tool: e.Tool, ToolUseID: e.ToolUseID, IsError: e.IsError, Data: e.Data, Truncated: e.Truncated}
	}
	return out, nil
}

// SetMode changes the agent's permission mode from its next run on.
func (o *Ops) SetMode(ctx context.Context, c *Caller, in api.ModeRequest) (api.ModeResult, error) {
	if err := o.managed("set_agent_mode"); err != nil {
		return api.ModeResult{}, err
	}
	if err := o.runner.SetMode(ctx, c.Workspace, in.AgentID, in.Mode); err != nil {
		return api.ModeResult{}, o.elsewhere(ctx, "set_agent_mode", c.Workspace, in.AgentID, err)
	}
	return api.ModeResult{Success: true, NewMode: in.Mode}, nil
}

// Permissions lists the pending permission requests of the caller's
// workspace, or of all.
func (o *Ops) Permissions(ctx context.Context, c *Caller, in api.ManagedListRequest) (api.PermissionsResult, error) {
	if err := o.managed("list_pending_permissions"); err != nil {
		return api.PermissionsResult{}, err
	}
	ws := c.Workspace
	if in.All {
		ws = ""
	}
	ps := o.runner.Permissions(ws)
	out := api.PermissionsResult{Permissions: make([]api.PendingPermission, len(ps))}
	for i, p := range ps {
		status := string(runner.StatusWaitingPermission)
		if !p.Managed {
			status = "waiting" // not managed: its client waits for the answer
		}
		out.Permissions[i] = api.PendingPermission{AgentID: p.Request.Agent, Status: status, Request: Permission(p.Request)}
	}
	return out, nil
}

// Respond answers a pending permission request of the caller's workspace
// (any workspace when the caller names none: request ids are unique).
func (o *Ops) Respond(ctx context.Context, c *Caller, in api.PermissionDecision) (api.SuccessResult, error) {
	if err := o.managed("respond_to_permission"); err != nil {
		return api.SuccessResult{}, err
	}
	by := in.By
	if by == "" {
		by = "api"
	}
	d, err := decision(in, by)
	if err != nil {
		return api.SuccessResult{}, err
	}
	if err := o.runner.Respond(c.Workspace, in.RequestID, d); err != nil {
		return api.SuccessResult{}, err
	}
	return api.SuccessResult{Success: true}, nil
}

// SetTitle sets the calling managed agent's title.
func (o *Ops) SetTitle(ctx context.Context, c *Caller, in api.TitleRequest) (api.SuccessResult, error) {
	if err := o.managed("set_title"); err != nil {
		return api.SuccessResult{}, err
	}
	if err := o.runner.SetTitle(ctx, c.Workspace, c.Agent, in.Title); err != nil {
		return api.SuccessResult{}, err
	}
	return api.SuccessResult{Success: true}, nil
}

// SetBranch renames the branch of the calling managed agent's worktree.
func (o *Ops) SetBranch(ctx context.Context, c *Caller, in api.BranchRequest) (api.BranchResult, error) {
	if err := o.managed("set_branch"); err != nil {
		return api.BranchResult{}, err
	}
	b, err := o.runner.SetBranch(ctx, c.Workspace, c.Agent, in.Branch)
	if err != nil {
		return api.BranchResult{}, err
	}
	return api.BranchResult{Success: true, Branch: b}, nil
}

// RequestPermission asks for permission to use a tool and blocks until
// someone answers, the permission timeout denies it, or ctx ends.
func (o *Ops) RequestPermission(ctx context.Context, c *Caller, in api.PermissionRequest) (api.PermissionAnswer, error) {
	if err := o.managed("request_permission"); err != nil {
		return api.PermissionAnswer{}, err
	}
	d, err := o.runner.RequestPermission(ctx, c.Workspace, c.Agent, in.ToolName, in.Input, in.ToolUseID)
	if err != nil {
		return api.PermissionAnswer{}, err
	}
	if d.Allow {
		return api.PermissionAnswer{Behavior: "allow", UpdatedInput: d.UpdatedInput}, nil
	}
	return api.PermissionAnswer{Behavior: "deny", Message: d.Message}, nil
}

// DefaultAskWait is how long AskPermission waits for a decision by default:
// under Claude Code's default hook timeout (60 s).
const DefaultAskWait = 50 * time.Second

// AskPermission files a permission request of the calling agent (a hook, a
// channel relay) and waits for the first decision, or closes it as expired so
// that the client falls back to its own prompt.
func (o *Ops) AskPermission(ctx context.Context, c *Caller, in api.AskPermissionRequest) (api.PermissionOutcome, error) {
	const op = "request_permission"
	if o.perms == nil {
		return api.PermissionOutcome{}, hub.Errorf(op, hub.Unavailable, "this daemon keeps no permission inbox")
	}
	switch in.Source {
	case "":
		in.Source = "api"
	case permission.SourceClaudeHook, permission.SourceCodexHook, permission.SourceChannel:
	default:
		return api.PermissionOutcome{}, hub.Errorf(op, hub.Invalid, "invalid source %q: want claude-hook, codex-hook or channel", in.Source)
	}
	wait := DefaultAskWait
	if in.Wait != 0 {
		var err error
		if wait, err = secondsArg(op, &in.Wait, DefaultAskWait, hub.MaxWaitTimeout); err != nil {
			return api.PermissionOutcome{}, err
		}
	}
	if err := c.needAgent(op); err != nil {
		return api.PermissionOutcome{}, err
	}
	got, err := o.perms.Ask(ctx, permission.Request{Workspace: c.Workspace, Agent: c.Agent, Source: in.Source, Tool: in.ToolName,
		Input: in.Input, ToolUseID: in.ToolUseID, Description: in.Description}, wait)
	if err != nil {
		return api.PermissionOutcome{}, err
	}
	out := api.PermissionOutcome{Permission: Permission(got), State: string(got.State)}
	if d := got.Decision; d != nil {
		out.Message, out.By = d.Message, d.By
		if got.State == permission.Allowed || got.State == permission.Denied {
			out.Behavior, out.UpdatedInput = d.Behavior(), d.UpdatedInput
		}
	}
	return out, nil
}

// decision reads a wire decision.
func decision(d api.PermissionDecision, by string) (runner.Decision, error) {
	const op = "respond_to_permission"
	out := runner.Decision{Message: d.Message, By: by}
	switch d.Behavior {
	case "allow":
		out.Allow = true
	case "deny":
	default:
		return out, hub.Errorf(op, hub.Invalid, "invalid behavior %q: want allow or deny", d.Behavior)
	}
	if len(d.UpdatedInput) > 0 && string(d.UpdatedInput) != "null" {
		if !out.Allow {
			return out, hub.Errorf(op, hub.Invalid, "updated_input goes with allow, not deny")
		}
		var obj map[string]any
		if err := json.Unmarshal(d.UpdatedInput, &obj); err != nil || obj == nil {
			return out, hub.Errorf(op, hub.Invalid, "updated_input must be a JSON object (the tool's input)")
		}
		out.UpdatedInput = d.UpdatedInput
	}
	return out, nil
}
