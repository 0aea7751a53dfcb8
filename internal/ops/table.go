package ops

import (
	"context"
	"reflect"

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
	// What it does to the state, as MCP's tool annotations say it (a door
	// derives them from these): ReadOnly changes nothing; Destructive may
	// remove or end what cannot be had back; Idempotent, called again with
	// the same input, does nothing more; OpenWorld reaches beyond Parley
	// (another MCP server, a process it launches).
	ReadOnly, Destructive, Idempotent, OpenWorld bool
	// canonical: the table's, run for the agent the caller's name stands
	// for (Call).
	canonical bool
	run       func(o *Ops, ctx context.Context, c *Caller, in any) (any, error)
}

// Call runs the operation on o for c on in, which points to its input type
// (NewInput). A table operation runs for the agent the caller's name stands
// for: an agent that renamed itself is still called by its old name by its
// session's hooks (which derive it), by a shell's `parley` commands, and by
// a session that reconnects; each speaks as the agent it became
// (hub.Canonical). A token names its agent, and is left alone.
func (op Op) Call(ctx context.Context, o *Ops, c *Caller, in any) (any, error) {
	if op.canonical && c.Agent != "" && c.Token == "" {
		name, err := o.hub.Canonical(ctx, c.Workspace, c.Agent)
		if err != nil {
			return nil, err
		}
		c.Agent = name
	}
	return op.run(o, ctx, c, in)
}

// NewInput returns a pointer to a new, empty input of the operation.
func (op Op) NewInput() any { return reflect.New(op.In).Interface() }

// Func is an operation's function: its caller and its typed input.
type Func[In, Out any] func(context.Context, *Caller, In) (Out, error)

// Define makes an operation of fn: a door's own rendition of one, like (a
// seed profile's names and defaults over Send or Receive), which does to
// the state what like does, open to access.
func Define[In, Out any](name string, access Access, like Op, fn Func[In, Out]) Op {
	op := def(name, access, "", func(_ *Ops, ctx context.Context, c *Caller, in In) (Out, error) { return fn(ctx, c, in) })
	op.ReadOnly, op.Destructive, op.Idempotent, op.OpenWorld, op.canonical = like.ReadOnly, like.Destructive, like.Idempotent, like.OpenWorld, false
	return op
}

func def[In, Out any](name string, access Access, route string, fn func(*Ops, context.Context, *Caller, In) (Out, error)) Op {
	return Op{Name: name, Route: route, Access: access, In: reflect.TypeFor[In](), Out: reflect.TypeFor[Out](), canonical: true,
		run: func(o *Ops, ctx context.Context, c *Caller, in any) (any, error) { return fn(o, ctx, c, *in.(*In)) }}
}

// Effects of an operation, for the table (Op's fields of those names).
func (op Op) reads() Op      { op.ReadOnly, op.Idempotent = true, true; return op }
func (op Op) destroys() Op   { op.Destructive = true; return op }
func (op Op) idempotent() Op { op.Idempotent = true; return op }
func (op Op) openWorld() Op  { op.OpenWorld = true; return op }

// noInput lets an operation that takes no input sit in the table.
func noInput[Out any](fn func(*Ops, context.Context, *Caller) (Out, error)) func(*Ops, context.Context, *Caller, api.Empty) (Out, error) {
	return func(o *Ops, ctx context.Context, c *Caller, _ api.Empty) (Out, error) { return fn(o, ctx, c) }
}

// The operations, each once, by the name the compiler checks: its name,
// who may call it, its JSON API route, and what it does to the state MCP's
// tool annotations say (reads, destroys, idempotent, openWorld). Reading
// one's own mail reads (it marks it read for its reader alone, as a mail
// client does): a client may run check_messages without asking. A new
// operation of *Ops must be added here and to table (TestTableHasEveryOp
// fails until it is).
var (
	// Messages: the caller's own.
	Send           = def("Send", Agent, "POST /messages", (*Ops).Send)
	Reply          = def("Reply", Agent, "", (*Ops).Reply)
	Broadcast      = def("Broadcast", Agent, "POST /broadcast", (*Ops).Broadcast)
	Check          = def("Check", Agent, "POST /inbox/check", (*Ops).Check).reads()
	Peek           = def("Peek", Agent, "GET /inbox", (*Ops).Peek).reads()
	Wait           = def("Wait", Agent, "POST /inbox/wait", (*Ops).Wait).reads()
	WaitForReply   = def("WaitForReply", Agent, "POST /inbox/reply", (*Ops).WaitForReply).reads()
	Receive        = def("Receive", Agent, "", (*Ops).Receive).reads()
	Unread         = def("Unread", Agent, "", noInput((*Ops).Unread)).reads()
	Clear          = def("Clear", Agent, "", noInput((*Ops).Clear)).destroys().idempotent()
	Ack            = def("Ack", Agent, "POST /acks", (*Ops).Ack).idempotent()
	Overdue        = def("Overdue", Agent, "GET /overdue", (*Ops).Overdue).reads()
	NoteWake       = def("NoteWake", Agent, "POST /inbox/woken", (*Ops).NoteWake).idempotent()
	Seen           = def("Seen", Agent, "POST /inbox/seen", (*Ops).Seen).idempotent()                   // the caller's own session saw a letter
	Bounced        = def("Bounced", Agent, "GET /bounced", (*Ops).Bounced).reads()                      // the caller's own dead letters (all=true: not a token)
	Redeliver      = def("Redeliver", Agent, "POST /messages/{message_id}/redeliver", (*Ops).Redeliver) // a token: its own messages only
	Receipt        = def("Receipt", Agent, "POST /inbox/receipts", (*Ops).Receipt).idempotent()
	MessageStatus  = def("MessageStatus", Agent, "GET /messages/{message_id}/status", (*Ops).MessageStatus).reads()
	History        = def("History", Agent, "GET /messages", (*Ops).History).reads()
	GetMessage     = def("GetMessage", Agent, "GET /messages/{id}", (*Ops).GetMessage).reads()
	Thread         = def("Thread", Agent, "", (*Ops).Thread).reads()
	SearchMessages = def("SearchMessages", Agent, "GET /search", (*Ops).SearchMessages).reads()

	// Agents and groups of the workspace.
	Join           = def("Join", Admin, "POST /agents", (*Ops).Join).idempotent() // registers any name: the token's agent exists already
	GetAgent       = def("GetAgent", Agent, "GET /agents/{name}", (*Ops).GetAgent).reads()
	ForgetAgent    = def("ForgetAgent", Admin, "DELETE /agents/{name}", (*Ops).ForgetAgent).destroys().idempotent() // a person removes one
	ListAgents     = def("ListAgents", Agent, "GET /agents", (*Ops).ListAgents).reads()
	SetStatus      = def("SetStatus", Agent, "PUT /agents/{name}/status", (*Ops).SetStatus).idempotent()
	ReportActivity = def("ReportActivity", Agent, "POST /activity", (*Ops).ReportActivity).idempotent() // the caller's own health
	MyWork         = def("MyWork", Agent, "GET /work", (*Ops).MyWork).reads()                           // the caller's own working set
	Whoami         = def("Whoami", Agent, "", (*Ops).Whoami).reads()
	Identify       = def("Identify", Admin, "POST /identify", (*Ops).Identify).reads()                    // which agent a client session on this machine speaks as
	StartSession   = def("StartSession", Admin, "POST /sessions/start", (*Ops).StartSession).idempotent() // a client session's hook registers its agent and door
	SetIdentity    = def("SetIdentity", Agent, "", (*Ops).SetIdentity)                                    // an MCP session's own name; refused to a token, which names its agent
	ListGroups     = def("ListGroups", Agent, "GET /groups", (*Ops).ListGroups).reads()
	GetGroup       = def("GetGroup", Agent, "GET /groups/{name}", (*Ops).GetGroup).reads()
	CreateGroup    = def("CreateGroup", Agent, "POST /groups", (*Ops).CreateGroup).idempotent()
	DeleteGroup    = def("DeleteGroup", Agent, "DELETE /groups/{name}", (*Ops).DeleteGroup).destroys().idempotent()
	AddMember      = def("AddMember", Agent, "POST /groups/{group}/members", (*Ops).AddMember).idempotent()
	RemoveMember   = def("RemoveMember", Agent, "DELETE /groups/{group}/members", (*Ops).RemoveMember).destroys().idempotent()

	// Reservations: the caller's own; ForceRelease ends another's.
	ReservePaths        = def("ReservePaths", Agent, "POST /reservations", (*Ops).ReservePaths)
	RenewReservations   = def("RenewReservations", Agent, "POST /reservations/renew", (*Ops).RenewReservations).idempotent()
	ReleaseReservations = def("ReleaseReservations", Agent, "POST /reservations/release", (*Ops).ReleaseReservations).idempotent()
	ListReservations    = def("ListReservations", Agent, "GET /reservations", (*Ops).ListReservations).reads()
	WhoHas              = def("WhoHas", Agent, "GET /reservations/who", (*Ops).WhoHas).reads()
	CheckPaths          = def("CheckPaths", Agent, "POST /reservations/check", (*Ops).CheckPaths).reads()
	ForceRelease        = def("ForceRelease", Admin, "POST /reservations/force-release", (*Ops).ForceRelease).destroys().idempotent()

	// Work queues: the caller claims, completes and releases its own tasks.
	Queue        = def("Queue", Agent, "GET /queues/{queue}", (*Ops).Queue).reads()
	ClaimTask    = def("ClaimTask", Agent, "POST /queues/{queue}/claim", (*Ops).ClaimTask)
	CompleteTask = def("CompleteTask", Agent, "POST /tasks/{task_id}/complete", (*Ops).CompleteTask)
	ReleaseTask  = def("ReleaseTask", Agent, "POST /tasks/{task_id}/release", (*Ops).ReleaseTask).idempotent()
	RenewTask    = def("RenewTask", Agent, "POST /tasks/{task_id}/renew", (*Ops).RenewTask).idempotent()

	// A managed agent about itself (the self profile), and a permission
	// request of the caller's own (a hook or channel on another machine).
	SetTitle          = def("SetTitle", Agent, "", (*Ops).SetTitle).idempotent()
	SetBranch         = def("SetBranch", Agent, "", (*Ops).SetBranch).idempotent()
	RequestPermission = def("RequestPermission", Agent, "", (*Ops).RequestPermission)
	AskPermission     = def("AskPermission", Agent, "POST /permissions", (*Ops).AskPermission)

	// The gateway's tools, as its MCP profile offers them (open to agent
	// tokens); its upstreams are config.toml's, the admin's.
	Tools          = def("Tools", Agent, "GET /tools", (*Ops).Tools).reads()
	CallTool       = def("CallTool", Agent, "POST /tools/call", (*Ops).CallTool).openWorld()
	ListUpstreams  = def("ListUpstreams", Admin, "GET /upstreams", (*Ops).ListUpstreams).reads()
	AddUpstream    = def("AddUpstream", Admin, "POST /upstreams", (*Ops).AddUpstream)
	RemoveUpstream = def("RemoveUpstream", Admin, "DELETE /upstreams/{name}", (*Ops).RemoveUpstream).destroys().idempotent()
	EnableUpstream = def("EnableUpstream", Admin, "PUT /upstreams/{name}/enabled", (*Ops).EnableUpstream).idempotent()
	Reload         = def("Reload", Admin, "POST /reload", (*Ops).Reload).idempotent()

	// Managing other agents and deciding for them.
	CreateAgent          = def("CreateAgent", Admin, "POST /managed/agents", (*Ops).CreateAgent).openWorld()
	WaitAgent            = def("WaitAgent", Admin, "POST /managed/agents/{agent_id}/wait", (*Ops).WaitAgent).reads()
	PromptAgent          = def("PromptAgent", Admin, "POST /managed/agents/{agent_id}/prompt", (*Ops).PromptAgent).openWorld()
	AgentStatus          = def("AgentStatus", Admin, "", (*Ops).AgentStatus).reads()
	AgentDetail          = def("AgentDetail", Admin, "GET /managed/agents/{agent_id}", (*Ops).AgentDetail).reads()
	ListManaged          = def("ListManaged", Admin, "GET /managed/agents", (*Ops).ListManaged).reads()
	CancelAgent          = def("CancelAgent", Admin, "POST /managed/agents/{agent_id}/cancel", (*Ops).CancelAgent).destroys()
	KillAgent            = def("KillAgent", Admin, "POST /managed/agents/{agent_id}/kill", (*Ops).KillAgent).destroys().idempotent()
	Activity             = def("Activity", Admin, "GET /managed/agents/{agent_id}/activity", (*Ops).Activity).reads()
	SetMode              = def("SetMode", Admin, "PUT /managed/agents/{agent_id}/mode", (*Ops).SetMode).idempotent()
	Permissions          = def("Permissions", Admin, "GET /permissions", (*Ops).Permissions).reads()
	Respond              = def("Respond", Admin, "POST /permissions/{request_id}", (*Ops).Respond)
	RespondMany          = def("RespondMany", Admin, "POST /permissions/bulk", (*Ops).RespondMany)
	PermissionRules      = def("PermissionRules", Admin, "GET /permissions/rules", (*Ops).PermissionRules).reads()
	AddPermissionRule    = def("AddPermissionRule", Admin, "POST /permissions/rules", (*Ops).AddPermissionRule)
	RemovePermissionRule = def("RemovePermissionRule", Admin, "DELETE /permissions/rules/{id}", (*Ops).RemovePermissionRule).destroys().idempotent()

	// The dashboard's views of the whole workspace, maintenance, tokens.
	UnreadByAgent       = def("UnreadByAgent", Admin, "GET /dashboard/unread", (*Ops).UnreadByAgent).reads()
	SearchWorkspace     = def("SearchWorkspace", Admin, "GET /dashboard/search", (*Ops).SearchWorkspace).reads()
	Deliveries          = def("Deliveries", Admin, "GET /dashboard/deliveries", (*Ops).Deliveries).reads()
	DashboardQueues     = def("DashboardQueues", Admin, "GET /dashboard/queues", (*Ops).DashboardQueues).reads()
	DashboardLeases     = def("DashboardLeases", Admin, "GET /dashboard/leases", (*Ops).DashboardLeases).reads()
	DashboardHealth     = def("DashboardHealth", Admin, "GET /dashboard/health", (*Ops).DashboardHealth).reads()
	DashboardLogin      = def("DashboardLogin", Admin, "POST /dashboard/login", (*Ops).DashboardLogin)
	DashboardSignOutAll = def("DashboardSignOutAll", Admin, "POST /dashboard/sign-out-all", (*Ops).DashboardSignOutAll).destroys().idempotent()
	Purge               = def("Purge", Admin, "POST /purge", (*Ops).Purge).destroys()
	Status              = def("Status", Admin, "GET /status", (*Ops).Status).reads() // the daemon's paths, store and sessions
	Health              = def("Health", Agent, "GET /health", (*Ops).Health).reads() // is the daemon up: what a remote client asks first
	CreateToken         = def("CreateToken", Admin, "POST /tokens", (*Ops).CreateToken)
	ListTokens          = def("ListTokens", Admin, "GET /tokens", (*Ops).ListTokens).reads()
	RevokeToken         = def("RevokeToken", Admin, "DELETE /tokens/{id}", (*Ops).RevokeToken).destroys().idempotent()

	// Doors are a session's on this machine, of this OS user: registered
	// and seen over the Unix socket only.
	OpenDoor  = def("OpenDoor", Admin, "POST /doors", (*Ops).OpenDoor).idempotent()
	ListDoors = def("ListDoors", Admin, "GET /doors", (*Ops).ListDoors).reads()
	CloseDoor = def("CloseDoor", Admin, "POST /doors/{id}/close", (*Ops).CloseDoor).destroys().idempotent()
)

// table lists every operation.
var table = []Op{
	Send, Reply, Broadcast, Check, Peek, Wait,
	WaitForReply, Receive, Unread, Clear, Ack, Overdue,
	NoteWake, Seen, Bounced, Redeliver, Receipt, MessageStatus,
	History, GetMessage, Thread, SearchMessages, Join, GetAgent,
	ForgetAgent, ListAgents, SetStatus, ReportActivity, MyWork, Whoami,
	Identify, StartSession, SetIdentity, ListGroups, GetGroup, CreateGroup,
	DeleteGroup, AddMember, RemoveMember, ReservePaths, RenewReservations, ReleaseReservations,
	ListReservations, WhoHas, CheckPaths, ForceRelease, Queue, ClaimTask,
	CompleteTask, ReleaseTask, RenewTask, SetTitle, SetBranch, RequestPermission, AskPermission,
	Tools, CallTool, ListUpstreams, AddUpstream, RemoveUpstream, EnableUpstream,
	Reload, CreateAgent, WaitAgent, PromptAgent, AgentStatus, AgentDetail,
	ListManaged, CancelAgent, KillAgent, Activity, SetMode, Permissions,
	Respond, RespondMany, PermissionRules, AddPermissionRule, RemovePermissionRule, UnreadByAgent,
	SearchWorkspace, Deliveries, DashboardQueues, DashboardLeases, DashboardHealth, DashboardLogin,
	DashboardSignOutAll, Purge, Status, Health, CreateToken, ListTokens,
	RevokeToken, OpenDoor, ListDoors, CloseDoor,
}

// Table lists every operation.
func Table() []Op { return table }
