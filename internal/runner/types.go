package runner

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parley-dev/parley/internal/permission"
)

// Status is a managed agent's state as the manager sees it.
type Status string

// The statuses of a managed agent.
const (
	StatusIdle              Status = "idle"
	StatusRunning           Status = "running"
	StatusWaitingPermission Status = "waiting_permission"
	StatusError             Status = "error"
	StatusExited            Status = "exited"
)

// RunState is where a run is in its life.
type RunState string

// The states of a run. Queued and running are open; the rest are final.
const (
	RunQueued      RunState = "queued"
	RunRunning     RunState = "running"
	RunCompleted   RunState = "completed"
	RunFailed      RunState = "failed"
	RunCancelled   RunState = "cancelled"
	RunInterrupted RunState = "interrupted" // the daemon died during the run
	RunKilled      RunState = "killed"
)

// Open reports whether the run has not ended.
func (s RunState) Open() bool { return s == RunQueued || s == RunRunning }

// Modes are the permission modes a managed agent can have (Claude Code's names;
// other providers map them, see provider.go).
var Modes = []string{"default", "acceptEdits", "plan", "bypassPermissions"}

// Agent is a managed agent as stored. Its live state (the run in progress,
// pending permissions) is the runner's.
type Agent struct {
	ID        string    `json:"id"`
	Workspace string    `json:"workspace"`
	Provider  string    `json:"provider"`
	Title     string    `json:"title"`
	Mode      string    `json:"mode"`
	Role      string    `json:"role"`
	Cwd       string    `json:"cwd"`      // where it runs
	Origin    string    `json:"origin"`   // the cwd it was created with
	Worktree  string    `json:"worktree"` // the worktree Parley made, if any
	Branch    string    `json:"branch"`
	Command   string    `json:"command"` // the command provider's shell command
	AutoWake  bool      `json:"auto_wake"`
	Owner     string    `json:"owner,omitempty"` // who created it: told when auto-wake stops a loop
	SessionID string    `json:"session_id"`
	Exited    bool      `json:"exited"`
	LastError string    `json:"last_error"`
	CostUSD   float64   `json:"cost_usd"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Budget bounds its turns, cost and running time (budget.go); Turns and
	// Busy are what it used of them, beside CostUSD. StopReason says why a
	// budget stopped it, if one did (it is then Exited).
	Budget     Budget        `json:"budget"`
	Turns      int           `json:"turns,omitempty"`
	Busy       time.Duration `json:"busy,omitempty"`
	StopReason string        `json:"stop_reason,omitempty"`
}

// Run is one turn of an agent: a prompt and what became of it.
type Run struct {
	AgentID     string          `json:"agent_id"`
	Seq         int             `json:"seq"`
	State       RunState        `json:"state"`
	Source      string          `json:"source"` // prompt, create, message
	Prompt      string          `json:"prompt"`
	QueuedAt    time.Time       `json:"queued_at"`
	StartedAt   time.Time       `json:"started_at"`
	EndedAt     time.Time       `json:"ended_at"`
	PID         int             `json:"pid"`
	ExitCode    *int            `json:"exit_code,omitempty"`
	Error       string          `json:"error"`
	CostUSD     float64         `json:"cost_usd"`
	Usage       json.RawMessage `json:"usage,omitempty"`
	LastMessage string          `json:"last_message"`

	// sentTo is the session its prompt was written to, when it was streamed
	// into a turn that did not take it in: that session runs it next.
	sentTo *session
}

// Snapshot is a managed agent as it is now: its stored record and its live
// state. The runner hands out copies; changing one changes nothing.
type Snapshot struct {
	Agent
	Status      Status
	Current     *Run // the run in progress, if any
	LastMessage string
	Queued      int // prompts waiting for the current run to end
	Pending     []*permission.Request
	Runs        int // runs so far
	// Node is the daemon that runs the agent when another daemon on the
	// store does (peers.go); "" for this daemon's own.
	Node string
}

// Enqueued says what became of a prompt.
type Enqueued struct {
	Status Status // the agent's, once the prompt is queued
	Run    int    // the run the prompt became
	Queued bool   // it waits for the run in progress to end
	// Steered: it was streamed into the run in progress, and ends with it
	// (a provider with steer = true).
	Steered bool
}

// Outcome is what a cancel or a kill did.
type Outcome struct {
	Done   bool // false: there was nothing to stop
	Status Status
	Note   string // a line for people: "run 3 cancelled", "already exited"
}

// Waited is how a wait for an agent's run ended.
type Waited struct {
	Status Status
	// Permission is the pending request that ended the wait, if any.
	Permission  *permission.Request
	Run         *Run // the run waited for: ended, running or queued
	LastMessage string
	TimedOut    bool
	Waited      time.Duration
}

// Page is a stretch of an agent's activity timeline.
type Page struct {
	Status Status
	Mode   string
	Total  int // events in the whole timeline
	Offset int // the position of Events[0], 0 being the oldest
	Events []*Event
}

// Pending is a pending permission request, of any agent.
type Pending struct {
	Request *permission.Request
	Managed bool // the asker is a managed agent of this runner
}

// Event is one entry of an agent's activity timeline, as stored. Its JSON is
// the stores' format, not a wire format: ops maps it to the API's.
type Event struct {
	AgentID   string          `json:"agent_id"`
	Seq       int64           `json:"seq"` // from 1, per agent, without gaps
	Run       int             `json:"run"`
	Time      time.Time       `json:"time"`
	Kind      string          `json:"kind"`
	Text      string          `json:"text,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
}

// Event kinds.
const (
	EvRunStarted   = "run_started"
	EvText         = "text"
	EvToolUse      = "tool_use"
	EvToolResult   = "tool_result"
	EvError        = "error"
	EvResult       = "result"
	EvPermission   = "permission_requested"
	EvPermResolved = "permission_resolved"
	EvRunFinished  = "run_finished"
	EvInterrupted  = "interrupted"
	EvNote         = "note"
	EvLoopStopped  = "loop_stopped" // auto-wake stopped a chain of automatic replies
	EvSteered      = "steered"      // a prompt streamed into the run in progress
	EvRefused      = "refused"      // the provider refused a tool call without asking anyone
)

// Store keeps managed agents, their runs and their timelines. The runner owns
// this interface; internal/store/sqlite implements it. Writes are atomic.
type Store interface {
	// PutManagedAgent inserts or replaces the agent.
	PutManagedAgent(ctx context.Context, a *Agent) error
	// ManagedAgents returns every managed agent, oldest first.
	ManagedAgents(ctx context.Context) ([]*Agent, error)
	// PutRun inserts or replaces the run (agent id, seq).
	PutRun(ctx context.Context, r *Run) error
	// Runs returns up to limit runs of the agent, newest first.
	Runs(ctx context.Context, agentID string, limit int) ([]*Run, error)
	// OpenRuns returns every queued or running run of every agent, oldest first.
	OpenRuns(ctx context.Context) ([]*Run, error)
	// AppendEvents stores events whose seqs follow the agent's last one.
	AppendEvents(ctx context.Context, evs []*Event) error
	// Events returns up to limit events of the agent from position offset
	// (0 is the oldest), and how many it has in all.
	Events(ctx context.Context, agentID string, offset, limit int) ([]*Event, int, error)
}
