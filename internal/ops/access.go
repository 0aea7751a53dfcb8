package ops

import (
	"reflect"
	"runtime"
	"strings"
)

// agentToken declares, for every operation, whether an agent token may call
// it. An agent token (`parley token create`) speaks for one agent of one
// workspace; the operations open to it act as their caller, in the caller's
// workspace, or read what any agent of that workspace may read. The others
// act for other agents (managed agents, a permission decision, another's
// reservation), span workspaces, or see what only people at the dashboard
// see: the admin token and the Unix socket only.
//
// Both doors apply it: the JSON API to the route of each operation, MCP to
// each tool. A new operation must be added here (TestEveryOpDeclared fails
// until it is); an operation missing here is refused to agent tokens.
var agentToken = map[string]bool{
	// Messages: the caller's own.
	"Send":           true,
	"Reply":          true,
	"Broadcast":      true,
	"Check":          true,
	"Peek":           true,
	"Wait":           true,
	"WaitForReply":   true,
	"Receive":        true,
	"Unread":         true,
	"Clear":          true,
	"Ack":            true,
	"Overdue":        true,
	"NoteWake":       true,
	"Receipt":        true,
	"MessageStatus":  true,
	"Seen":           true, // the caller's own session saw a letter
	"Bounced":        true, // the caller's own dead letters (All: false below)
	"History":        true,
	"GetMessage":     true,
	"Thread":         true,
	"SearchMessages": true,

	// Agents and groups of the workspace.
	"Join":         false, // registers any name: the token's agent exists already
	"GetAgent":     true,
	"ListAgents":   true,
	"SetStatus":    true,
	"Whoami":       true,
	"ListGroups":   true,
	"GetGroup":     true,
	"CreateGroup":  true,
	"DeleteGroup":  true,
	"AddMember":    true,
	"RemoveMember": true,

	// Reservations: the caller's own; ForceRelease ends another's.
	"ReservePaths":        true,
	"RenewReservations":   true,
	"ReleaseReservations": true,
	"ListReservations":    true,
	"WhoHas":              true,
	"CheckPaths":          true,
	"ForceRelease":        false,

	// Work queues: the caller claims, completes and releases its own tasks.
	"Queue":        true,
	"ClaimTask":    true,
	"CompleteTask": true,
	"ReleaseTask":  true,

	// A managed agent about itself (the self profile), and a permission
	// request of the caller's own (a hook or channel on another machine).
	"SetTitle":          true,
	"SetBranch":         true,
	"RequestPermission": true,
	"AskPermission":     true,

	// The gateway's tools, as its MCP profile offers them (open to agent
	// tokens); its upstreams are config.toml's, the admin's.
	"Tools":          true,
	"CallTool":       true,
	"ListUpstreams":  false,
	"AddUpstream":    false,
	"RemoveUpstream": false,
	"EnableUpstream": false,
	"Reload":         false,

	// Managing other agents and deciding for them.
	"CreateAgent": false,
	"WaitAgent":   false,
	"PromptAgent": false,
	"AgentStatus": false,
	"AgentDetail": false,
	"ListManaged": false,
	"CancelAgent": false,
	"KillAgent":   false,
	"Activity":    false,
	"SetMode":     false,
	"Permissions": false,
	"Respond":     false,

	// The dashboard's views of the whole workspace, maintenance, tokens.
	"UnreadByAgent":   false,
	"SearchWorkspace": false,
	"Deliveries":      false,
	"DashboardLogin":  false,
	"Purge":           false,
	"Status":          false, // the daemon's paths, store and sessions
	"Health":          true,  // is the daemon up: what a remote client asks first
	// Doors are a session's on this machine, of this OS user: registered
	// and seen over the Unix socket only.
	"OpenDoor":        false,
	"OpenSessionDoor": false,
	"CloseDoor":       false,
	"ListDoors":       false,
	"CreateToken":     false,
	"ListTokens":      false,
	"RevokeToken":     false,
}

// AgentMay reports whether an agent token may call fn, a method value of
// *Ops (o.Send). Anything else, and an operation not declared in agentToken,
// is refused.
func AgentMay(fn any) bool {
	name, ok := opName(fn)
	return ok && agentToken[name]
}

// opName is the name of the *Ops method that fn is a method value of.
func opName(fn any) (string, bool) {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return "", false
	}
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return "", false
	}
	// A method value's code is the method's wrapper: pkg.(*Ops).Name-fm.
	name, ok := strings.CutPrefix(f.Name(), opsPkg+".(*Ops).")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(name, "-fm")
}

var opsPkg = reflect.TypeFor[Ops]().PkgPath()
