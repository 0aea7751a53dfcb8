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
