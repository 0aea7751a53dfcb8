package profile

import (
	"context"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/ops"
)

// Manager is the manager profile: seed 003's eleven agent-management tools,
// scoped to the caller's workspace.
func Manager(h *Host) Profile {
	return Profile{Tools: []Tool{
		typed(h, "create_agent", "Launch a coding agent (Claude Code, Codex, or any command) in a working directory, optionally in a new git worktree, and run its first prompt. Returns its agent_id at once; use wait_for_agent to wait for the run.", ops.CreateAgent),
		typed(h, "wait_for_agent", "Block until the agent's current run (or the given run) finishes or it asks for permission (or the timeout passes). Returns its status, the pending permission request if any, and its last message. Sends progress notifications while waiting when given a progress token.", ops.WaitAgent),
		typed(h, "send_agent_prompt", "Send a task to an agent. It starts at once when the agent is idle; during a run it is streamed into that run when the agent's provider steers (Claude by default: the result says steered), else queued behind it (first in, first out). Returns immediately; use wait_for_agent to wait.", ops.PromptAgent),
		typed(h, "get_agent_status", "Return an agent's snapshot: status (idle, running, waiting_permission, error, exited), current run, queued prompts, pending permissions, mode, cost.", ops.AgentStatus),
		typed(h, "list_agents", "List the managed agents of this workspace with their status.", ops.ListManaged, hide("all")),
		typed(h, "cancel_agent", "Interrupt the agent's current run (an interrupt request to a steering provider's process, else SIGINT; then SIGKILL after a grace period). The agent stays usable; queued prompts run next.", ops.CancelAgent),
		typed(h, "kill_agent", "Terminate an agent for good: its processes are killed, queued prompts dropped, and it takes no more prompts. Its worktree is kept.", ops.KillAgent),
		typed(h, "get_agent_activity", "Return the agent's activity timeline (assistant text, tool calls and results, errors, permission requests, run outcomes) as a readable summary plus the events, paged with offset and limit.", ops.Activity),
		typed(h, "set_agent_mode", "Change the agent's permission mode (default, acceptEdits, plan, bypassPermissions) from its next run on.", ops.SetMode),
		typed(h, "list_pending_permissions", "List the permission requests of this workspace's agents that wait for an answer.", ops.Permissions, hide("all")),
		typed(h, "respond_to_permission", "Allow or deny a pending permission request; with allow, updated_input may replace the tool's input; with deny, message tells the agent why.",
			ops.Define("respond_to_permission", ops.Respond.Access, ops.Respond, func(ctx context.Context, c *ops.Caller, in api.PermissionDecision) (api.SuccessResult, error) {
				in.By = "manager"
				return h.Ops.Respond(ctx, c, in)
			}), hide("by")),
	}}
}

// Self is the self profile, for agents Parley launched: they set their
// title, rename their worktree's branch, and ask for permission.
func Self(h *Host) Profile {
	return Profile{Tools: []Tool{
		typed(h, "set_title", "Set your display title (what you are working on).", ops.SetTitle),
		typed(h, "set_branch", "Rename the git branch of the worktree Parley made for you. Refused when you do not run in a Parley-made worktree.", ops.SetBranch),
		// Claude Code's --permission-prompt-tool wants one text block,
		// {"behavior":"allow","updatedInput":{...}} or {"behavior":"deny","message":"..."},
		// and nothing else: structured content beside it is refused.
		typed(h, "request_permission", "Ask the people or agent managing you for permission to use a tool; blocks until they answer. Used by Claude Code as its --permission-prompt-tool.", ops.RequestPermission, textOnly()),
	}}
}
