package api

import (
	"encoding/json"
	"time"
)

// Wire types of managed agents (the runner): the /api/v1/managed endpoints,
// /api/v1/permissions, and the results of the manager and self MCP profiles.

// ManagedAgent is an agent the daemon launched and supervises.
type ManagedAgent struct {
	AgentID   string `json:"agent_id" jsonschema:"the agent's id; also its name on the message bus"`
	Workspace string `json:"workspace"`
	Provider  string `json:"provider" jsonschema:"claude, codex, command or a provider from config.toml"`
	Title     string `json:"title"`
	Status    string `json:"status" jsonschema:"idle, running, waiting_permission, error or exited"`
	Mode      string `json:"mode" jsonschema:"default, acceptEdits, plan or bypassPermissions"`
	Role      string `json:"role"`
	Cwd       string `json:"cwd" jsonschema:"where the agent runs"`
	AutoWake  bool   `json:"auto_wake" jsonschema:"a message to the agent starts a turn when it is idle"`
	// Worktree and Branch are set when Parley made a git worktree for the agent.
	Worktree  string `json:"worktree,omitempty"`
	Branch    string `json:"branch,omitempty"`
	Command   string `json:"command,omitempty" jsonschema:"the shell command of a command provider"`
	SessionID string `json:"session_id,omitempty" jsonschema:"the provider's session, resumed by later turns"`
	LastError string `json:"last_error,omitempty"`
	// LastMessage is the last assistant text of the latest run.
	LastMessage        string       `json:"last_message,omitempty"`
	CurrentRun         *ManagedRun  `json:"current_run,omitempty"`
	Queued             int          `json:"queued" jsonschema:"prompts waiting for the current run to end"`
	PendingPermissions []Permission `json:"pending_permissions"`
	CostUSD            float64      `json:"cost_usd" jsonschema:"total cost the provider reported, in USD"`
	Runs               int          `json:"runs" jsonschema:"runs so far"`
	CreatedAt          time.Time    `json:"created_at"`
	UpdatedAt          time.Time    `json:"updated_at"`
	// Node is set for an agent that another daemon on a shared store runs:
	// that daemon's host and state directory. Only it can prompt, cancel or
	// kill the agent; every daemon shows it.
	Node string `json:"node,omitempty" jsonschema:"the daemon that runs it (host:directory) when another one on the shared store does: act on it there"`
	// Budget is its bounds and what it used of them; StopReason says why
	// a budget stopped it (status exited).
	Budget     Budget `json:"budget"`
	StopReason string `json:"stop_reason,omitempty"`
	Owner      string `json:"owner,omitempty"`
}

// ManagedRun is one turn of a managed agent.
type ManagedRun struct {
	Seq int `json:"seq" jsonschema:"the run's number, from 1"`
	// State is queued, running, completed, failed, cancelled, interrupted or killed.
	State string `json:"state"`
	// Source says where the prompt came from: prompt, create or message.
	Source      string          `json:"source"`
	Prompt      string          `json:"prompt"`
	QueuedAt    time.Time       `json:"queued_at"`
	StartedAt   *time.Time      `json:"started_at,omitempty"`
	EndedAt     *time.Time      `json:"ended_at,omitempty"`
	ExitCode    *int            `json:"exit_code,omitempty"`
	Error       string          `json:"error,omitempty"`
	CostUSD     float64         `json:"cost_usd,omitempty"`
	Usage       json.RawMessage `json:"usage,omitempty"`
	LastMessage string          `json:"last_message,omitempty"`
}

// ActivityEvent is one entry of a managed agent's timeline.
type ActivityEvent struct {
	Seq  int64     `json:"seq"`
	Run  int       `json:"run"`
	Time time.Time `json:"time"`
	// Kind is run_started, text, tool_use, tool_result, error, result,
	// permission_requested, permission_resolved, run_finished, interrupted or note.
	Kind      string          `json:"kind"`
	Text      string          `json:"text,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
}

// Permission is a pending permission request of an agent, managed or not.
type Permission struct {
	RequestID string          `json:"request_id"`
	AgentID   string          `json:"agent_id"`
	Workspace string          `json:"workspace"`
	Run       int             `json:"run"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// Source is who asked: managed, claude-hook, codex-hook, channel, codex-app.
	Source      string    `json:"source,omitempty"`
	Description string    `json:"description,omitempty"`
	RequestedAt time.Time `json:"requested_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// CreateManagedAgentRequest is the create_agent input and POST /api/v1/managed/agents.
type CreateManagedAgentRequest struct {
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
	// The agent's budget: it stops once it reaches one (at the end of the
	// turn that reached it, or at once for time), says why in its
	// timeline, and its creator is told. Unset: the provider's default
	// from config.toml, if any.
	MaxTurns    int     `json:"max_turns,omitempty" jsonschema:"stop after this many turns"`
	MaxCost     float64 `json:"max_cost,omitempty" jsonschema:"stop once the provider's reported cost reaches this many USD"`
	MaxDuration string  `json:"max_duration,omitempty" jsonschema:"stop once its turns have run this long in all, a duration such as 30m or 2h"`
}

// Budget is a managed agent's budget and what it used of it.
type Budget struct {
	MaxTurns    int     `json:"max_turns,omitempty"`
	MaxCost     float64 `json:"max_cost,omitempty"`
	MaxDuration string  `json:"max_duration,omitempty"`
	Turns       int     `json:"turns"`
	CostUSD     float64 `json:"cost_usd"`
	BusySeconds float64 `json:"busy_seconds"`
}

// ManagedListRequest is the manager's list_agents input and GET
// /api/v1/managed/agents; also GET /api/v1/permissions.
type ManagedListRequest struct {
	// All lists every workspace's (the JSON API offers it, the tools do not).
	All bool `json:"all,omitempty"`
}

// AgentIDRequest names a managed agent: the get_agent_status, cancel_agent
// and kill_agent input, and GET /api/v1/managed/agents/{agent_id}.
type AgentIDRequest struct {
	AgentID string `json:"agent_id" jsonschema:"the agent's id, from create_agent or list_agents"`
}

// AgentStatusResult is get_agent_status's result (seed 003: status and snapshot).
type AgentStatusResult struct {
	Status   string       `json:"status"`
	Snapshot ManagedAgent `json:"snapshot"`
}

// ManagedAgentsResult is GET /api/v1/managed/agents and list_agents (manager).
type ManagedAgentsResult struct {
	Agents []ManagedAgent `json:"agents"`
	Count  int            `json:"count"`
}

// ManagedAgentDetail is GET /api/v1/managed/agents/{id}: the agent and its
// latest runs, newest first.
type ManagedAgentDetail struct {
	ManagedAgent
	RecentRuns []ManagedRun `json:"recent_runs"`
}

// PromptRequest is the send_agent_prompt input and POST
// /api/v1/managed/agents/{agent_id}/prompt.
type PromptRequest struct {
	AgentID string `json:"agent_id" jsonschema:"the agent's id"`
	Prompt  string `json:"prompt" jsonschema:"the task; streamed into the run in progress when the provider steers, else queued"`
}

// PromptResult says what became of a prompt.
type PromptResult struct {
	Success bool   `json:"success"`
	AgentID string `json:"agent_id"`
	Status  string `json:"status"`
	Run     int    `json:"run" jsonschema:"the run the prompt became"`
	Queued  bool   `json:"queued" jsonschema:"true when it waits for the run in progress to end"`
	// Steered is set when the prompt was streamed into the run in progress
	// (a steerable provider): it ends with that run.
	Steered bool `json:"steered,omitempty" jsonschema:"true when it was streamed into the run in progress, and ends with it"`
}

// WaitAgentRequest is the wait_for_agent input and POST
// /api/v1/managed/agents/{agent_id}/wait.
type WaitAgentRequest struct {
	AgentID string `json:"agent_id" jsonschema:"the agent's id"`
	Timeout *int   `json:"timeout,omitempty" jsonschema:"most seconds to wait (default 300 with a progress token, else 50; max 600)"`
	Run     int    `json:"run,omitempty" jsonschema:"the run to wait for, as create_agent or send_agent_prompt returned it (default: the current run, else the next queued)"`
}

// WaitAgentResult is what wait_for_agent returns.
type WaitAgentResult struct {
	AgentID string `json:"agent_id"`
	Status  string `json:"status"`
	// Permission is the pending permission request that ended the wait, if any.
	Permission  *Permission `json:"permission"`
	LastMessage string      `json:"last_message"`
	Run         *ManagedRun `json:"run,omitempty"`
	TimedOut    bool        `json:"timed_out"`
	Waited      float64     `json:"waited_seconds"`
}

// ActivityRequest is the get_agent_activity input and GET
// /api/v1/managed/agents/{agent_id}/activity.
type ActivityRequest struct {
	AgentID string `json:"agent_id" jsonschema:"the agent's id"`
	Offset  *int   `json:"offset,omitempty" jsonschema:"first event, 0 being the oldest (default: the latest events)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"most events to return (default 50, max 1000)"`
}

// ActivityResult is GET /api/v1/managed/agents/{id}/activity and get_agent_activity.
type ActivityResult struct {
	AgentID     string          `json:"agent_id"`
	Status      string          `json:"status"`
	CurrentMode string          `json:"current_mode"`
	UpdateCount int             `json:"update_count" jsonschema:"events in the whole timeline"`
	Offset      int             `json:"offset"`
	Content     string          `json:"content" jsonschema:"a readable summary of the events returned"`
	Events      []ActivityEvent `json:"events"`
}

// Text is the result's rendering for a model: the readable summary.
func (r ActivityResult) Text() string { return r.Content }

// ModeRequest is the set_agent_mode input and PUT
// /api/v1/managed/agents/{agent_id}/mode.
type ModeRequest struct {
	AgentID string `json:"agent_id" jsonschema:"the agent's id"`
	Mode    string `json:"mode" jsonschema:"default, acceptEdits, plan or bypassPermissions; applies from the next run"`
}

// ModeResult is set_agent_mode's result.
type ModeResult struct {
	Success bool   `json:"success"`
	NewMode string `json:"new_mode"`
}

// SuccessResult is the result of cancel and kill.
type SuccessResult struct {
	Success bool   `json:"success"`
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// PendingPermission is one entry of list_pending_permissions.
type PendingPermission struct {
	AgentID string     `json:"agent_id"`
	Status  string     `json:"status"`
	Request Permission `json:"request"`
}

// PermissionsResult is GET /api/v1/permissions and list_pending_permissions.
type PermissionsResult struct {
	Permissions []PendingPermission `json:"permissions"`
}

// PermissionDecision is the respond_to_permission input and POST
// /api/v1/permissions/{request_id}: allow or deny, with an optional message
// (shown to the agent) or replacement tool input.
type PermissionDecision struct {
	RequestID    string          `json:"request_id" jsonschema:"the permission request's id"`
	Behavior     string          `json:"behavior" jsonschema:"allow or deny"`
	Message      string          `json:"message,omitempty" jsonschema:"why (shown to the agent when denying)"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty" jsonschema:"with allow: the tool input to use instead of the requested one"`
	// By says who answers (cli, dashboard...), for the timeline; the
	// manager's tool answers as "manager".
	By string `json:"by,omitempty"`
}

// TitleRequest is the set_title input.
type TitleRequest struct {
	Title string `json:"title" jsonschema:"a short title of what you work on"`
}

// BranchRequest is the set_branch input.
type BranchRequest struct {
	Branch string `json:"branch" jsonschema:"the new name of your worktree's git branch"`
}

// BranchResult is the set_branch result.
type BranchResult struct {
	Success bool   `json:"success"`
	Branch  string `json:"branch"`
}

// PermissionRequest is the request_permission input (Claude Code's
// --permission-prompt-tool calls it).
type PermissionRequest struct {
	ToolName  string          `json:"tool_name" jsonschema:"the tool that needs permission"`
	Input     json.RawMessage `json:"input" jsonschema:"the tool's input"`
	ToolUseID string          `json:"tool_use_id,omitempty" jsonschema:"the tool call's id"`
}

// PermissionAnswer is the JSON text request_permission returns, in the shape
// Claude Code's --permission-prompt-tool expects.
type PermissionAnswer struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
}

// AskPermissionRequest is POST /api/v1/permissions: an agent's client (a
// PermissionRequest hook, a channel relay) files a request in the inbox and
// waits up to Wait seconds for the first decision.
type AskPermissionRequest struct {
	ToolName    string          `json:"tool_name"`
	Input       json.RawMessage `json:"input,omitempty"`
	ToolUseID   string          `json:"tool_use_id,omitempty"`
	Description string          `json:"description,omitempty"`
	Source      string          `json:"source,omitempty" jsonschema:"claude-hook, codex-hook or channel"`
	Wait        int             `json:"wait,omitempty" jsonschema:"seconds to wait for a decision (default 60, max 600)"`
}

// PermissionOutcome is how a request ended: State pending (nobody decided in
// time: the request is closed as expired), allowed or denied.
type PermissionOutcome struct {
	Permission
	State        string          `json:"state"`
	Behavior     string          `json:"behavior,omitempty"` // allow or deny, when decided
	Message      string          `json:"message,omitempty"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	By           string          `json:"by,omitempty"`
}
