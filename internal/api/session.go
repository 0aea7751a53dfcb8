package api

// IdentifyRequest asks which agent a process of a client session speaks
// as (POST /api/v1/identify): a hook or a command that resolved Agent, the
// name it was given, in the client session Session (its key) whose own
// name is Own.
type IdentifyRequest struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	Own     string `json:"own,omitempty"`
	// Fixed: the name is the runner's (a managed agent), never given up.
	Fixed bool `json:"fixed,omitempty"`
}

// IdentifyResult is the agent the process speaks as, and, when that is not
// the name it asked for, why.
type IdentifyResult struct {
	Agent string `json:"agent"`
	// Derived: the name is the client session's own, not the one it was
	// given (which another live client session holds).
	Derived bool   `json:"derived,omitempty"`
	Note    string `json:"note,omitempty"`
}

// ForgetResult is what DELETE /api/v1/agents/{name} did.
type ForgetResult struct {
	Agent string `json:"agent"`
	// Bounced counts its copies that were not read: each went back to its
	// sender, with the reason.
	Bounced int `json:"bounced"`
}

// SessionStartRequest is POST /api/v1/sessions/start: a client session's
// hook (Codex's SessionStart, Claude Code's) registers the session's agent
// and its door at the session's start, before any tool call, so that the
// session is reachable from its first second.
type SessionStartRequest struct {
	Role   string `json:"role,omitempty"`
	Module string `json:"module,omitempty"`
	// Derived: the agent's name is the client session's own; it lives as
	// long as the session, and is provisional until its first call.
	Derived bool         `json:"derived,omitempty"`
	Door    *DoorRequest `json:"door,omitempty"`
}

// SessionStartResult is the session's agent and door as registered.
type SessionStartResult struct {
	Agent AgentInfo `json:"agent"`
	Door  *DoorInfo `json:"door,omitempty"`
}
