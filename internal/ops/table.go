package ops

import (
	"context"
	"reflect"
	"sync"

	"github.com/parley-dev/parley/internal/api"
)

// Access says who may call an operation. An agent token (`parley token
// create`) speaks for one agent of one workspace: the operations open to it
// act as their caller, in the caller's workspace, or read what the read rule
// (read.go) lets that agent read. The others act for other agents (managed
// agents, a permission decision, another's reservation), span workspaces,
// or see what only people at the dashboard see: the admin token and the
// Unix socket only.
type Access bool

const (
	Admin Access = false // the Unix socket's user and the admin token
	Agent Access = true  // also an agent token, for its own agent
)

// Op is one operation: its name, its JSON API route, who may call it, and
// its function with the types of its input and output. The doors build from
// it: the JSON API its endpoints and their access check (httpapi), the MCP
// profiles their tools (mcpserver), the docs' check its routes.
type Op struct {
	Name string
	// Route is the JSON API's "METHOD /path" under api.Prefix; "" when
	// the operation is offered over MCP only (or to other operations).
	Route   string
	Access  Access
	In, Out reflect.Type
	run     func(ctx context.Context, c *Caller, in any) (any, error)
}

// Call runs the operation for c on in, which points to its input type
// (NewInput).
func (op Op) Call(ctx context.Context, c *Caller, in any) (any, error) { return op.run(ctx, c, in) }

// NewInput returns a pointer to a new, empty input of the operation.
func (op Op) NewInput() any { return reflect.New(op.In).Interface() }

// Func is an operation's function: its caller and its typed input.
type Func[In, Out any] func(context.Context, *Caller, In) (Out, error)

// Define makes an operation of fn: a door's own rendition of one (a seed
// profile's names and defaults over Send or Receive), with the access of
// what it renders.
func Define[In, Out any](name string, access Access, fn Func[In, Out]) Op {
	return def(name, access, "", fn)
}

func def[In, Out any](name string, access Access, route string, fn Func[In, Out]) Op {
	return Op{Name: name, Route: route, Access: access, In: reflect.TypeFor[In](), Out: reflect.TypeFor[Out](),
		run: func(ctx context.Context, c *Caller, in any) (any, error) { return fn(ctx, c, *in.(*In)) }}
}

// noInput lets an operation that takes no input sit in the table.
func noInput[Out any](fn func(context.Context, *Caller) (Out, error)) Func[api.Empty, Out] {
	return func(ctx context.Context, c *Caller, _ api.Empty) (Out, error) { return fn(ctx, c) }
}

// table is every operation, each once, in one list: its name, who may call
// it, and its JSON API route. A new operation of *Ops must be added here
// (TestTableHasEveryOp fails until it is).
func (o *Ops) table() []Op {
	return []Op{
		// Messages: the caller's own.
		def("Send", Agent, "POST /messages", o.Send),
		def("Reply", Agent, "", o.Reply),
		def("Broadcast", Agent, "POST /broadcast", o.Broadcast),
		def("Check", Agent, "POST /inbox/check", o.Check),
		def("Peek", Agent, "GET /inbox", o.Peek),
		def("Wait", Agent, "POST /inbox/wait", o.Wait),
		def("WaitForReply", Agent, "POST /inbox/reply", o.WaitForReply),
		def("Receive", Agent, "", o.Receive),
		def("Unread", Agent, "", noInput(o.Unread)),
		def("Clear", Agent, "", noInput(o.Clear)),
		def("Ack", Agent, "POST /acks", o.Ack),
		def("Overdue", Agent, "GET /overdue", o.Overdue),
		def("NoteWake", Agent, "POST /inbox/woken", o.NoteWake),
		def("Seen", Agent, "POST /inbox/seen", o.Seen),                                // the caller's own session saw a letter
		def("Bounced", Agent, "GET /bounced", o.Bounced),                              // the caller's own dead letters (all=true: not a token)
		def("Redeliver", Agent, "POST /messages/{message_id}/redeliver", o.Redeliver), // a token: its own messages only
		def("Receipt", Agent, "POST /inbox/receipts", o.Receipt),
		def("MessageStatus", Agent, "GET /messages/{message_id}/status", o.MessageStatus),
		def("History", Agent, "GET /messages", o.History),
		def("GetMessage", Agent, "GET /messages/{id}", o.GetMessage),
		def("Thread", Agent, "", o.Thread),
		def("SearchMessages", Agent, "GET /search", o.SearchMessages),

		// Agents and groups of the workspace.
		def("Join", Admin, "POST /agents", o.Join), // registers any name: the token's agent exists already
		def("GetAgent", Agent, "GET /agents/{name}", o.GetAgent),
		def("ForgetAgent", Admin, "DELETE /agents/{name}", o.ForgetAgent), // a person removes one
		def("ListAgents", Agent, "GET /agents", o.ListAgents),
		def("SetStatus", Agent, "PUT /agents/{name}/status", o.SetStatus),
		def("ReportActivity", Agent, "POST /activity", o.ReportActivity), // the caller's own health
		def("MyWork", Agent, "GET /work", o.MyWork),                      // the caller's own working set
		def("Whoami", Agent, "", o.Whoami),
		def("Identify", Admin, "POST /identify", o.Identify),               // which agent a client session on this machine speaks as
		def("StartSession", Admin, "POST /sessions/start", o.StartSession), // a client session's hook registers its agent and door
		def("SetIdentity", Agent, "", o.SetIdentity),                       // an MCP session's own name; refused to a token, which names its agent
		def("ListGroups", Agent, "GET /groups", o.ListGroups),
		def("GetGroup", Agent, "GET /groups/{name}", o.GetGroup),
		def("CreateGroup", Agent, "POST /groups", o.CreateGroup),
		def("DeleteGroup", Agent, "DELETE /groups/{name}", o.DeleteGroup),
		def("AddMember", Agent, "POST /groups/{group}/members", o.AddMember),
		def("RemoveMember", Agent, "DELETE /groups/{group}/members", o.RemoveMember),

		// Reservations: the caller's own; ForceRelease ends another's.
		def("ReservePaths", Agent, "POST /reservations", o.ReservePaths),
		def("RenewReservations", Agent, "POST /reservations/renew", o.RenewReservations),
		def("ReleaseReservations", Agent, "POST /reservations/release", o.ReleaseReservations),
		def("ListReservations", Agent, "GET /reservations", o.ListReservations),
		def("WhoHas", Agent, "GET /reservations/who", o.WhoHas),
		def("CheckPaths", Agent, "POST /reservations/check", o.CheckPaths),
		def("ForceRelease", Admin, "POST /reservations/force-release", o.ForceRelease),

		// Work queues: the caller claims, completes and releases its own tasks.
		def("Queue", Agent, "GET /queues/{queue}", o.Queue),
		def("ClaimTask", Agent, "POST /queues/{queue}/claim", o.ClaimTask),
		def("CompleteTask", Agent, "POST /tasks/{task_id}/complete", o.CompleteTask),
		def("ReleaseTask", Agent, "POST /tasks/{task_id}/release", o.ReleaseTask),

		// A managed agent about itself (the self profile), and a permission
		// request of the caller's own (a hook or channel on another machine).
		def("SetTitle", Agent, "", o.SetTitle),
		def("SetBranch", Agent, "", o.SetBranch),
		def("RequestPermission", Agent, "", o.RequestPermission),
		def("AskPermission", Agent, "POST /permissions", o.AskPermission),

		// The gateway's tools, as its MCP profile offers them (open to agent
		// tokens); its upstreams are config.toml's, the admin's.
		def("Tools", Agent, "GET /tools", o.Tools),
		def("CallTool", Agent, "POST /tools/call", o.CallTool),
		def("ListUpstreams", Admin, "GET /upstreams", o.ListUpstreams),
		def("AddUpstream", Admin, "POST /upstreams", o.AddUpstream),
		def("RemoveUpstream", Admin, "DELETE /upstreams/{name}", o.RemoveUpstream),
		def("EnableUpstream", Admin, "PUT /upstreams/{name}/enabled", o.EnableUpstream),
		def("Reload", Admin, "POST /reload", o.Reload),

		// Managing other agents and deciding for them.
		def("CreateAgent", Admin, "POST /managed/agents", o.CreateAgent),
		def("WaitAgent", Admin, "POST /managed/agents/{agent_id}/wait", o.WaitAgent),
		def("PromptAgent", Admin, "POST /managed/agents/{agent_id}/prompt", o.PromptAgent),
		def("AgentStatus", Admin, "", o.AgentStatus),
		def("AgentDetail", Admin, "GET /managed/agents/{agent_id}", o.AgentDetail),
		def("ListManaged", Admin, "GET /managed/agents", o.ListManaged),
		def("CancelAgent", Admin, "POST /managed/agents/{agent_id}/cancel", o.CancelAgent),
		def("KillAgent", Admin, "POST /managed/agents/{agent_id}/kill", o.KillAgent),
		def("Activity", Admin, "GET /managed/agents/{agent_id}/activity", o.Activity),
		def("SetMode", Admin, "PUT /managed/agents/{agent_id}/mode", o.SetMode),
		def("Permissions", Admin, "GET /permissions", o.Permissions),
		def("Respond", Admin, "POST /permissions/{request_id}", o.Respond),
		def("RespondMany", Admin, "POST /permissions/bulk", o.RespondMany),
		def("PermissionRules", Admin, "GET /permissions/rules", o.PermissionRules),
		def("AddPermissionRule", Admin, "POST /permissions/rules", o.AddPermissionRule),
		def("RemovePermissionRule", Admin, "DELETE /permissions/rules/{id}", o.RemovePermissionRule),

		// The dashboard's views of the whole workspace, maintenance, tokens.
		def("UnreadByAgent", Admin, "GET /dashboard/unread", o.UnreadByAgent),
		def("SearchWorkspace", Admin, "GET /dashboard/search", o.SearchWorkspace),
		def("Deliveries", Admin, "GET /dashboard/deliveries", o.Deliveries),
		def("DashboardQueues", Admin, "GET /dashboard/queues", o.DashboardQueues),
		def("DashboardLeases", Admin, "GET /dashboard/leases", o.DashboardLeases),
		def("DashboardHealth", Admin, "GET /dashboard/health", o.DashboardHealth),
		def("DashboardLogin", Admin, "POST /dashboard/login", o.DashboardLogin),
		def("DashboardSignOutAll", Admin, "POST /dashboard/sign-out-all", o.DashboardSignOutAll),
		def("Purge", Admin, "POST /purge", o.Purge),
		def("Status", Admin, "GET /status", o.Status), // the daemon's paths, store and sessions
		def("Health", Agent, "GET /health", o.Health), // is the daemon up: what a remote client asks first
		def("CreateToken", Admin, "POST /tokens", o.CreateToken),
		def("ListTokens", Admin, "GET /tokens", o.ListTokens),
		def("RevokeToken", Admin, "DELETE /tokens/{id}", o.RevokeToken),

		// Doors are a session's on this machine, of this OS user: registered
		// and seen over the Unix socket only.
		def("OpenDoor", Admin, "POST /doors", o.OpenDoor),
		def("ListDoors", Admin, "GET /doors", o.ListDoors),
		def("CloseDoor", Admin, "POST /doors/{id}/close", o.CloseDoor),
	}
}

// Table lists every operation.
func (o *Ops) Table() []Op {
	o.tableOnce.Do(o.buildTable)
	return o.ops
}

// Op returns the operation named name, which must be one (a door's tool list
// names them; an unknown name is a bug, found by the first session).
func (o *Ops) Op(name string) Op {
	o.tableOnce.Do(o.buildTable)
	op, ok := o.byName[name]
	if !ok {
		panic("ops: no operation " + name)
	}
	return op
}

func (o *Ops) buildTable() {
	o.ops = o.table()
	o.byName = make(map[string]Op, len(o.ops))
	for i, op := range o.ops {
		o.ops[i].run = o.speakingAs(op.run)
		o.byName[op.Name] = o.ops[i]
	}
}

// speakingAs runs an operation for the agent the caller's name stands for:
// an agent that renamed itself is still called by its old name by its
// session's hooks (which derive it), by a shell's `parley` commands, and by
// a session that reconnects; each speaks as the agent it became
// (hub.Canonical). A token names its agent, and is left alone.
func (o *Ops) speakingAs(run func(context.Context, *Caller, any) (any, error)) func(context.Context, *Caller, any) (any, error) {
	return func(ctx context.Context, c *Caller, in any) (any, error) {
		if c.Agent != "" && c.Token == "" {
			name, err := o.hub.Canonical(ctx, c.Workspace, c.Agent)
			if err != nil {
				return nil, err
			}
			c.Agent = name
		}
		return run(ctx, c, in)
	}
}

// opTable holds the table once built.
type opTable struct {
	tableOnce sync.Once
	ops       []Op
	byName    map[string]Op
}
