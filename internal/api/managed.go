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

// CreateManagedAgentRequest is POST /api/v1/managed/agents.
type CreateManagedAgentRequest struct {
	Provider string `json:"provider"`
	Cwd      string `json:"cwd"`
	Title    string `json:"title,omitempty"`
	Mode     string `json:"mode,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
	Worktree bool   `json:"worktree,omitempty"`
	Command  string `json:"command,omitempty"`
	Name     string `json:"name,omitempty"`
	Role     string `json:"role,omitempty"`
	AutoWake *bool  `json:"auto_wake,omitempty"`
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

// PromptRequest is POST /api/v1/managed/agents/{id}/prompt.
type PromptRequest struct {
	Prompt string `json:"prompt"`
}

// PromptResult says what became of a prompt.
type PromptResult struct {
	Success bool   `json:"success"`
	AgentID string `json:"agent_id"`
	Status  string `json:"status"`
	Run     int    `json:"run" jsonschema:"the run the prompt became"`
	Queued  bool   `json:"queued" jsonschema:"true when it waits for the run in progress to end"`
}

// WaitAgentRequest is POST /api/v1/managed/agents/{id}/wait.
type WaitAgentRequest struct {
	Timeout int `json:"timeout,omitempty"`
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

// ModeRequest is PUT /api/v1/managed/agents/{id}/mode.
type ModeRequest struct {
	Mode string `json:"mode"`
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

// PermissionDecision is POST /api/v1/permissions/{id}: allow or deny, with an
// optional message (shown to the agent) or replacement tool input.
type PermissionDecision struct {
	Behavior     string          `json:"behavior"`
	Message      string          `json:"message,omitempty"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	// By says who answers (cli, dashboard...), for the timeline.
	By string `json:"by,omitempty"`
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
