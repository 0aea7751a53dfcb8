// Package profile is Parley's MCP tool surfaces. A profile is a named set of
// tools, each an operation of package ops under the names, descriptions and
// schemas one kind of client expects: native (Parley's own, seed 000),
// lean (six tools for small context budgets), sidechat (seed 001's drop-in
// tools), agentmail (seed 002's, with its JSON-RPC error codes), manager
// (seed 003's agent management), self (for the agents Parley launched) and
// identity (set_identity, for sessions whose name Parley derived).
//
// A profile knows nothing of HTTP, of how sessions are kept or of deliveries:
// it gets what it needs from the transport that serves it (internal/mcpserver)
// through a Host: the operations, and a function that yields the caller of a
// tool call. The transport registers profiles by name
// (a Registry: mcpserver.Server.Register); a session asks for them by name.
//
// To add a profile, write a func(*Host) Profile whose tools are made with
// typed (an operation of ops, or ops.Define for a seed's rendition of one;
// its schemas are inferred from the input and output types, and hide,
// editInput, noOutputSchema and textOnly shape them) or, for a tool that
// must word its own errors, raw. Register it by name: in Builtin, which every
// /mcp endpoint offers, or from the daemon with mcpserver.Server.Register
// (as it does manager, self and gateway). Then add its name to
// TestToolsGolden and freeze its tools/list in testdata/tools-NAME.json
// (go test -update): tool names, schemas and descriptions are a contract
// with users' prompts. Profiles a session combines must not define the same
// tool name (Registry.Settle refuses the set).
package profile

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/ops"
)

// Host is what a profile needs of the transport that serves it.
type Host struct {
	// Ops runs the operations the tools map onto.
	Ops *ops.Ops
	// Caller returns the caller a tool call runs for: a copy of its
	// session's, bound to the call (its progress reporter, its reader).
	Caller func(ctx context.Context, req *mcp.CallToolRequest) *ops.Caller
}

// Profile is a named set of tools, with what else a profile needs of the
// servers that carry it.
type Profile struct {
	// Tools are the profile's fixed tools.
	Tools []Tool
	// Attach, if set, adds to each server of the profile what is not a fixed
	// tool: tools that come and go (the gateway's, whose names all hold "__"
	// and so never clash with a fixed tool), prompts, resources.
	Attach func(*mcp.Server)
	// Options, if set, adjusts the options of each server of the profile.
	Options func(*mcp.ServerOptions)
	// Middleware, if set, wraps the requests each server of the profile receives.
	Middleware mcp.Middleware
}

// AddTo adds the tool to srv.
func (t Tool) AddTo(srv *mcp.Server) {
	if t.add != nil {
		t.add(srv)
		return
	}
	srv.AddTool(t.Tool, t.Handler)
}

// IdentityName is the profile of set_identity. A session whose agent name
// Parley derived for it (api.HeaderAgentFrom: a client package such as the
// Claude Code plugin bakes in no name) gets it beside native or lean, and
// no other session does: a name that was given cannot change, and the
// tool would only take room in the model's context.
const IdentityName = "identity"

// Identity is the profile of set_identity (IdentityName).
func Identity(h *Host) Profile {
	return Profile{Tools: []Tool{
		typed(h, "set_identity", "Replace the name Parley derived for this session (claude-myrepo-3f9a1c) with one you choose, and set your role. Mail to the old name follows you.", ops.SetIdentity),
	}}
}

// Builtin are the profiles every /mcp endpoint offers, by name
// (mcpserver.New registers them). The daemon adds Manager and Self, and the
// gateway's.
var Builtin = map[string]func(*Host) Profile{
	"native":     Native,
	"lean":       Lean,
	"sidechat":   Sidechat,
	"agentmail":  Agentmail,
	IdentityName: Identity,
}
