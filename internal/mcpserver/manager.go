package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/runner"
)

// Inputs of the manager profile (seed 003's agent-management tools).
type (
	createAgentIn struct {
		Provider string `json:"provider,omitempty" jsonschema:"claude (default), codex, command, or a provider from config.toml"`
		Cwd      string `json:"cwd" jsonschema:"absolute working directory of the agent"`
		Title    string `json:"title,omitempty" jsonschema:"short title of the agent's task"`
		Mode     string `json:"mode,omitempty" jsonschema:"permission mode: default, acceptEdits, plan or bypassPermissions"`
		Prompt   string `json:"prompt,omitempty" jsonschema:"first task, run at once"`
		Worktree bool   `json:"worktree,omitempty" jsonschema:"run the agent in a new git worktree and branch parley/<id> of cwd's repository"`
		Command  string `json:"command,omitempty" jsonschema:"for provider command: the shell command run once per turn, with the prompt on stdin or as {prompt}"`
		Name     string `json:"name,omitempty" jsonschema:"the agent's id and bus name (default: a fresh id)"`
		Role     string `json:"role,omitempty" jsonschema:"the agent's role on the bus, addressable as @role (default agent)"`
		AutoWake *bool  `json:"auto_wake,omitempty" jsonschema:"start a turn when a message arrives while the agent is idle (default true)"`
	}
	agentIDIn struct {
		AgentID string `json:"agent_id" jsonschema:"the agent's id, from create_agent or list_agents"`
	}
	waitAgentIn struct {
		AgentID string `json:"agent_id" jsonschema:"the agent's id"`
		Timeout *int   `json:"timeout,omitempty" jsonschema:"most seconds to wait (default 300, max 600)"`
	}
	promptAgentIn struct {
		AgentID string `json:"agent_id" jsonschema:"the agent's id"`
		Prompt  string `json:"prompt" jsonschema:"the task; queued when a run is in progress"`
	}
	activityIn struct {
		AgentID string `json:"agent_id" jsonschema:"the agent's id"`
		Offset  *int   `json:"offset,omitempty" jsonschema:"first event, 0 being the oldest (default: the latest events)"`
		Limit   int    `json:"limit,omitempty" jsonschema:"most events to return (default 50, max 1000)"`
	}
	modeIn struct {
		AgentID string `json:"agent_id" jsonschema:"the agent's id"`
		Mode    string `json:"mode" jsonschema:"default, acceptEdits, plan or bypassPermissions; applies from the next run"`
	}
	respondIn struct {
		RequestID    string          `json:"request_id" jsonschema:"the permission request's id"`
		Behavior     string          `json:"behavior" jsonschema:"allow or deny"`
		Message      string          `json:"message,omitempty" jsonschema:"why (shown to the agent when denying)"`
		UpdatedInput json.RawMessage `json:"updated_input,omitempty" jsonschema:"with allow: the tool input to use instead of the requested one"`
	}
)

// ManagerProfile is the manager profile over rn: seed 003's eleven
// agent-management tools, scoped to the caller's workspace.
func (s *Server) ManagerProfile(rn *runner.Runner) Profile {
	return func(srv *mcp.Server) {
		addTool(srv, "create_agent", "Launch a coding agent (Claude Code, Codex, or any command) in a working directory, optionally in a new git worktree, and run its first prompt. Returns its agent_id at once; use wait_for_agent to wait for the run.",
			func(ctx context.Context, req *mcp.CallToolRequest, in createAgentIn) (*mcp.CallToolResult, api.ManagedAgent, error) {
				id := IdentityFrom(ctx)
				a, err := rn.Create(ctx, runner.CreateRequest{Workspace: id.Workspace, CreateManagedAgentRequest: api.CreateManagedAgentRequest{
					Provider: in.Provider, Cwd: in.Cwd, Title: in.Title, Mode: in.Mode, Prompt: in.Prompt, Worktree: in.Worktree,
					Command: in.Command, Name: in.Name, Role: in.Role, AutoWake: in.AutoWake}})
				if err != nil {
					return nil, api.ManagedAgent{}, err
				}
				return nil, *a, nil
			})
		addTool(srv, "wait_for_agent", "Block until the agent's current run finishes or it asks for permission (or the timeout passes). Returns its status, the pending permission request if any, and its last message. Sends progress notifications while waiting when given a progress token.",
			func(ctx context.Context, req *mcp.CallToolRequest, in waitAgentIn) (*mcp.CallToolResult, api.WaitAgentResult, error) {
				id := IdentityFrom(ctx)
				secs := 0
				if in.Timeout != nil {
					if secs = *in.Timeout; secs == 0 {
						return nil, api.WaitAgentResult{}, hub.Errorf("wait_for_agent", hub.Invalid, "timeout must be between 1 and %d seconds", int(hub.MaxWaitTimeout/time.Second))
					}
				}
				timeout, err := hub.ValidTimeout(secs)
				if err != nil {
					return nil, api.WaitAgentResult{}, err
				}
				var progress func(time.Duration)
				if token := req.Params.GetProgressToken(); token != nil {
					total := timeout.Seconds()
					progress = func(waited time.Duration) {
						err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
							ProgressToken: token, Progress: waited.Seconds(), Total: total,
							Message: fmt.Sprintf("waiting for agent %s (%ds of %ds)", in.AgentID, int(waited.Seconds()), int(total)),
						})
						if err != nil {
							s.log.Debug("progress notification", "err", err)
						}
					}
				}
				out, err := rn.Wait(ctx, id.Workspace, in.AgentID, timeout, s.opts.ProgressEvery, progress)
				if err != nil {
					return nil, api.WaitAgentResult{}, err
				}
				return nil, *out, nil
			})
		addTool(srv, "send_agent_prompt", "Send a task to an agent. It starts at once when the agent is idle, else it is queued behind the run in progress (first in, first out). Returns immediately; use wait_for_agent to wait.",
			func(ctx context.Context, req *mcp.CallToolRequest, in promptAgentIn) (*mcp.CallToolResult, api.PromptResult, error) {
				out, err := rn.Prompt(ctx, IdentityFrom(ctx).Workspace, in.AgentID, in.Prompt)
				if err != nil {
					return nil, api.PromptResult{}, err
				}
				return nil, *out, nil
			})
		addTool(srv, "get_agent_status", "Return an agent's snapshot: status (idle, running, waiting_permission, error, exited), current run, queued prompts, pending permissions, mode, cost.",
			func(ctx context.Context, req *mcp.CallToolRequest, in agentIDIn) (*mcp.CallToolResult, agentStatusOut, error) {
				a, err := rn.Get(IdentityFrom(ctx).Workspace, in.AgentID)
				if err != nil {
					return nil, agentStatusOut{}, err
				}
				return nil, agentStatusOut{Status: a.Status, Snapshot: *a}, nil
			})
		addTool(srv, "list_agents", "List the managed agents of this workspace with their status.",
			func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, api.ManagedAgentsResult, error) {
				as := rn.List(IdentityFrom(ctx).Workspace)
				return nil, api.ManagedAgentsResult{Agents: as, Count: len(as)}, nil
			})
		addTool(srv, "cancel_agent", "Interrupt the agent's current run (SIGINT, then SIGKILL after a grace period). The agent stays usable; queued prompts run next.",
			func(ctx context.Context, req *mcp.CallToolRequest, in agentIDIn) (*mcp.CallToolResult, api.SuccessResult, error) {
				out, err := rn.Cancel(ctx, IdentityFrom(ctx).Workspace, in.AgentID)
				if err != nil {
					return nil, api.SuccessResult{}, err
				}
				return nil, *out, nil
			})
		addTool(srv, "kill_agent", "Terminate an agent for good: its processes are killed, queued prompts dropped, and it takes no more prompts. Its worktree is kept.",
			func(ctx context.Context, req *mcp.CallToolRequest, in agentIDIn) (*mcp.CallToolResult, api.SuccessResult, error) {
				out, err := rn.Kill(ctx, IdentityFrom(ctx).Workspace, in.AgentID)
				if err != nil {
					return nil, api.SuccessResult{}, err
				}
				return nil, *out, nil
			})
		addTool(srv, "get_agent_activity", "Return the agent's activity timeline (assistant text, tool calls and results, errors, permission requests, run outcomes) as a readable summary plus the events, paged with offset and limit.",
			func(ctx context.Context, req *mcp.CallToolRequest, in activityIn) (*mcp.CallToolResult, api.ActivityResult, error) {
				off := -1
				if in.Offset != nil {
					if *in.Offset < 0 {
						return nil, api.ActivityResult{}, hub.Errorf("get_agent_activity", hub.Invalid, "offset must not be negative")
					}
					off = *in.Offset
				}
				if in.Limit < 0 {
					return nil, api.ActivityResult{}, hub.Errorf("get_agent_activity", hub.Invalid, "limit must not be negative")
				}
				out, err := rn.Activity(ctx, IdentityFrom(ctx).Workspace, in.AgentID, off, in.Limit)
				if err != nil {
					return nil, api.ActivityResult{}, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Content}}}, *out, nil
			})
		addTool(srv, "set_agent_mode", "Change the agent's permission mode (default, acceptEdits, plan, bypassPermissions) from its next run on.",
			func(ctx context.Context, req *mcp.CallToolRequest, in modeIn) (*mcp.CallToolResult, api.ModeResult, error) {
				out, err := rn.SetMode(ctx, IdentityFrom(ctx).Workspace, in.AgentID, in.Mode)
				if err != nil {
					return nil, api.ModeResult{}, err
				}
				return nil, *out, nil
			})
		addTool(srv, "list_pending_permissions", "List the permission requests of this workspace's agents that wait for an answer.",
			func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, api.PermissionsResult, error) {
				return nil, api.PermissionsResult{Permissions: rn.Permissions(IdentityFrom(ctx).Workspace)}, nil
			})
		addTool(srv, "respond_to_permission", "Allow or deny a pending permission request; with allow, updated_input may replace the tool's input; with deny, message tells the agent why.",
			func(ctx context.Context, req *mcp.CallToolRequest, in respondIn) (*mcp.CallToolResult, api.SuccessResult, error) {
				d, err := runner.ParseDecision(api.PermissionDecision{Behavior: in.Behavior, Message: in.Message, UpdatedInput: in.UpdatedInput}, "manager")
				if err != nil {
					return nil, api.SuccessResult{}, err
				}
				if err := rn.Respond(IdentityFrom(ctx).Workspace, in.RequestID, d); err != nil {
					return nil, api.SuccessResult{}, err
				}
				return nil, api.SuccessResult{Success: true}, nil
			})
	}
}

// agentStatusOut is get_agent_status's result (seed 003: status and snapshot).
type agentStatusOut struct {
	Status   string           `json:"status"`
	Snapshot api.ManagedAgent `json:"snapshot"`
}

// Inputs of the self profile.
type (
	setTitleIn struct {
		Title string `json:"title" jsonschema:"a short title of what you work on"`
	}
	setBranchIn struct {
		Branch string `json:"branch" jsonschema:"the new name of your worktree's git branch"`
	}
	requestPermissionIn struct {
		ToolName  string          `json:"tool_name" jsonschema:"the tool that needs permission"`
		Input     json.RawMessage `json:"input" jsonschema:"the tool's input"`
		ToolUseID string          `json:"tool_use_id,omitempty" jsonschema:"the tool call's id"`
	}
	setBranchOut struct {
		Success bool   `json:"success"`
		Branch  string `json:"branch"`
	}
)

// SelfProfile is the self profile over rn, for agents Parley launched: they
// set their title, rename their worktree's branch, and ask for permission.
func (s *Server) SelfProfile(rn *runner.Runner) Profile {
	return func(srv *mcp.Server) {
		addTool(srv, "set_title", "Set your display title (what you are working on).",
			func(ctx context.Context, req *mcp.CallToolRequest, in setTitleIn) (*mcp.CallToolResult, api.SuccessResult, error) {
				id := IdentityFrom(ctx)
				if _, err := rn.SetTitle(ctx, id.Workspace, id.Agent, in.Title); err != nil {
					return nil, api.SuccessResult{}, err
				}
				return nil, api.SuccessResult{Success: true}, nil
			})
		addTool(srv, "set_branch", "Rename the git branch of the worktree Parley made for you. Refused when you do not run in a Parley-made worktree.",
			func(ctx context.Context, req *mcp.CallToolRequest, in setBranchIn) (*mcp.CallToolResult, setBranchOut, error) {
				id := IdentityFrom(ctx)
				b, err := rn.SetBranch(ctx, id.Workspace, id.Agent, in.Branch)
				if err != nil {
					return nil, setBranchOut{}, err
				}
				return nil, setBranchOut{Success: true, Branch: b}, nil
			})
		// Claude Code's --permission-prompt-tool reads the first text content
		// as {"behavior":"allow","updatedInput":{...}} or {"behavior":"deny","message":"..."}.
		mcp.AddTool(srv, &mcp.Tool{
			Name:        "request_permission",
			Description: "Ask the people or agent managing you for permission to use a tool; blocks until they answer. Used by Claude Code as its --permission-prompt-tool.",
			InputSchema: cachedSchema[requestPermissionIn](),
		}, func(ctx context.Context, req *mcp.CallToolRequest, in requestPermissionIn) (*mcp.CallToolResult, any, error) {
			id := IdentityFrom(ctx)
			ans, err := rn.RequestPermission(ctx, id.Workspace, id.Agent, in.ToolName, in.Input, in.ToolUseID)
			if err != nil {
				return nil, nil, err
			}
			b, err := json.Marshal(ans)
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	}
}
