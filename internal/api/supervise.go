package api

// Wire types of the dashboard's supervision views (issue 28): queues,
// leases, health, escalations, and the permission inbox's rules and bulk
// decisions.

// QueueTask is a task not done, for the Queues view.
type QueueTask struct {
	TaskID   string `json:"task_id"`
	Queue    string `json:"queue"`
	From     string `json:"from"`
	Priority string `json:"priority"`
	Preview  string `json:"preview"`
	State    string `json:"state" jsonschema:"waiting or claimed"`
	// Claimant holds a claimed task ("" while it waits, or when its holder
	// is not an agent of the workspace).
	Claimant string `json:"claimant,omitempty"`
	// Since is when it was claimed (claimed), or sent (waiting).
	Since      string `json:"since"`
	LeaseUntil string `json:"lease_until,omitempty"`
	// Deliveries counts its hand-outs; Redelivered says it went back to its
	// queue at least once (a claim ended unfinished).
	Deliveries  int  `json:"deliveries"`
	Redelivered bool `json:"redelivered"`
}

// QueueSummary counts one queue's tasks.
type QueueSummary struct {
	Queue   string `json:"queue"`
	Waiting int    `json:"waiting"`
	Claimed int    `json:"claimed"`
}

// QueuesResult is GET /api/v1/dashboard/queues: every queue of the
// workspace with a task not done, and those tasks.
type QueuesResult struct {
	Queues []QueueSummary `json:"queues"`
	Tasks  []QueueTask    `json:"tasks"`
}

// LeaseConflict is a reservation or an edit that ran into others'.
type LeaseConflict struct {
	Agent     string                `json:"agent" jsonschema:"who asked"`
	Op        string                `json:"op" jsonschema:"reserve (refused) or check (an edit hook found the file held)"`
	At        string                `json:"at"`
	Conflicts []ReservationConflict `json:"conflicts"`
}

// LeaseOverlap is two live reservations of different agents that cover
// common paths (shared ones may).
type LeaseOverlap struct {
	A    string `json:"a" jsonschema:"a reservation id"`
	B    string `json:"b"`
	Path string `json:"path" jsonschema:"a path both cover"`
}

// LeasesResult is GET /api/v1/dashboard/leases: the workspace's live
// reservations, where they overlap, and the recent conflicts.
type LeasesResult struct {
	Reservations []ReservationInfo `json:"reservations"`
	Overlaps     []LeaseOverlap    `json:"overlaps"`
	Conflicts    []LeaseConflict   `json:"conflicts"`
}

// Escalation is a step of the escalation ladder.
type Escalation struct {
	Agent   string `json:"agent"`
	Case    string `json:"case" jsonschema:"stall or permission"`
	Step    string `json:"step" jsonschema:"nudge, lead, person, cancel or restart"`
	Text    string `json:"text"`
	Time    string `json:"time"`
	Request string `json:"request,omitempty"`
}

// HealthResult is GET /api/v1/dashboard/health: the agents' health, the
// managed agents' spend against the workspace's cap, and the escalations.
type HealthResult struct {
	Agents      []AgentInfo  `json:"agents"`
	StallAfter  string       `json:"stall_after"`
	Spent       float64      `json:"spent_usd" jsonschema:"what the workspace's managed agents cost"`
	Cap         float64      `json:"cap_usd,omitempty" jsonschema:"the workspace's spend cap (0: none)"`
	Escalations []Escalation `json:"escalations"`
}

// PermissionRule is a time-boxed allow rule of the permission inbox.
type PermissionRule struct {
	ID        string `json:"id"`
	Workspace string `json:"workspace"`
	Agent     string `json:"agent,omitempty" jsonschema:"the agent it allows (empty: any agent of the workspace)"`
	ToolName  string `json:"tool_name"`
	Match     string `json:"match,omitempty" jsonschema:"what it allows: the command, word for word (shell tools; * a wildcard), a path pattern inside the workspace (file tools), or an input value, exactly"`
	By        string `json:"by"`
	Created   string `json:"created"`
	Expires   string `json:"expires"`
	Uses      int    `json:"uses"`
	// Allows says exactly what the rule allows, in words.
	Allows string `json:"allows"`
}

// PermissionRuleRequest is POST /api/v1/permissions/rules: allow tool_name
// (for agent, matching match) for minutes.
type PermissionRuleRequest struct {
	Agent    string `json:"agent,omitempty"`
	ToolName string `json:"tool_name"`
	Match    string `json:"match,omitempty"`
	Minutes  int    `json:"minutes"`
	By       string `json:"by,omitempty"`
	// DryRun checks the rule and says what it would allow, saving nothing.
	DryRun bool `json:"dry_run,omitempty"`
}

// PermissionRulesResult lists the live rules.
type PermissionRulesResult struct {
	Rules []PermissionRule `json:"rules"`
}

// RuleIDRequest names a rule: DELETE /api/v1/permissions/rules/{id}.
type RuleIDRequest struct {
	ID string `json:"id"`
}

// BulkDecision is POST /api/v1/permissions/bulk: one decision for many
// requests.
type BulkDecision struct {
	RequestIDs []string `json:"request_ids"`
	Behavior   string   `json:"behavior" jsonschema:"allow or deny"`
	Message    string   `json:"message,omitempty"`
	By         string   `json:"by,omitempty"`
}

// BulkDecided says what became of each request of a bulk decision.
type BulkDecided struct {
	Decided []string          `json:"decided"`
	Failed  map[string]string `json:"failed,omitempty" jsonschema:"request id: why (already decided, unknown)"`
}
