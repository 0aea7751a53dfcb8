package api

import "time"

// TokenRequest is POST /api/v1/tokens: issue an agent token.
type TokenRequest struct {
	Agent     string `json:"agent"`
	Workspace string `json:"workspace"`
	// Role is the role the agent has under the token; empty: the role it
	// has now, or the default role of a new agent.
	Role string `json:"role,omitempty"`
	// Server is the URL teammates reach the daemon at, for the answer's
	// Line; empty: the daemon's own (Status.ServerURL).
	Server string `json:"server,omitempty"`
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
	// Server and Line, in the answer to a creation: the URL a teammate's
	// agent reaches the daemon at, and the one command line that connects
	// it (`parley mcp serve --server`). Empty when the daemon serves no
	// TCP listener and none was named.
	Server string `json:"server,omitempty"`
	Line   string `json:"line,omitempty"`
}

// ServeLine is the command line that connects an agent to the team server
// at server with the agent token tok.
func ServeLine(server, tok string) string {
	return EnvToken + "=" + tok + " parley mcp serve --server " + server
}

// EnvToken is the environment variable of `parley mcp serve --server`'s
// agent token.
const EnvToken = "PARLEY_TOKEN"

// TokenList is GET /api/v1/tokens.
type TokenList struct {
	Tokens []TokenInfo `json:"tokens"`
}

// TokenID names a token: DELETE /api/v1/tokens/{id}.
type TokenID struct {
	ID string `json:"id"`
}
