package api

import "time"

// TokenRequest is POST /api/v1/tokens: issue an agent token.
type TokenRequest struct {
	Agent     string `json:"agent"`
	Workspace string `json:"workspace"`
	// Role is the role the agent has under the token; empty: the role it
	// has now, or the default role of a new agent.
	Role string `json:"role,omitempty"`
}

// TokenInfo describes an agent token; Token, the secret, is set only in the
// answer to its creation and is never shown again.
type TokenInfo struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent"`
	Workspace string    `json:"workspace"`
	Role      string    `json:"role,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Token     string    `json:"token,omitempty"`
}

// TokenList is GET /api/v1/tokens.
type TokenList struct {
	Tokens []TokenInfo `json:"tokens"`
}

// TokenID names a token: DELETE /api/v1/tokens/{id}.
type TokenID struct {
	ID string `json:"id"`
}
