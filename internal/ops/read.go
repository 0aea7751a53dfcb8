package ops

import (
	"context"

	"github.com/parley-dev/parley/internal/hub"
)

// The read rule: what an agent token may read of its workspace's messages.
//
// An agent token speaks for one agent, and reads that agent's messages
// only: the ones it sent, the ones delivered to it, and the rest of every
// thread in which it sent or received one (hub.HistoryQuery.Viewer). Every
// operation that hands out a message or tells anything of one (its content,
// its status, its thread, a reply to it or in it) applies the rule here,
// in one of two ways:
//
//   - a list passes ReadViewer(c) to the store as its Viewer, and gets only
//     what the rule admits;
//   - an operation on one message by its id asks mayRead, which answers a
//     message the rule does not admit as one that does not exist.
//
// The Unix socket's user and the admin token read the whole workspace: they
// are the people at the CLI and the dashboard, trusted with everything.
// Reading one's own inbox (check, wait, receive, claim) hands out only what
// was delivered to the caller, so it needs no rule of its own.
//
// readRule lists every operation open to agent tokens (the table, Agent) that
// reads messages, and how it applies the rule; TestReadRuleCoversReads
// fails for an open operation that is in neither readRule nor readsNone,
// and e2e's TestTokenReadRule tries each of them through every door.
var readRule = map[string]string{
	History.Name:        "Viewer",
	SearchMessages.Name: "Viewer",
	GetMessage.Name:     "mayRead",
	Thread.Name:         "mayRead",
	MessageStatus.Name:  "mayRead; copies: the sender's all, a recipient's own",
	Reply.Name:          "mayRead of the message replied to",
	Send.Name:           "mayRead of reply_to: no joining another's thread",
	WaitForReply.Name:   "mayRead of the message waited on",
	Overdue.Name:        "its own messages; all=true refused",
	Bounced.Name:        "its own messages' bounced copies; all=true refused",
	Redeliver.Name:      "its own messages: another's is not found",
	Queue.Name:          "the tasks waiting in a queue: any agent may claim them",
	Check.Name:          "its own inbox",
	Peek.Name:           "its own inbox",
	Wait.Name:           "its own inbox",
	Receive.Name:        "its own inbox",
	ClaimTask.Name:      "a task it claims",
	Unread.Name:         "its own inbox: a count",
}

// readsNone lists the operations open to agent tokens that read no message.
var readsNone = []string{
	Broadcast.Name, Clear.Name, Ack.Name, NoteWake.Name, Seen.Name, Receipt.Name, GetAgent.Name, ListAgents.Name, SetStatus.Name, Whoami.Name, SetIdentity.Name,
	ListGroups.Name, GetGroup.Name, CreateGroup.Name, DeleteGroup.Name, AddMember.Name, RemoveMember.Name,
	ReservePaths.Name, RenewReservations.Name, ReleaseReservations.Name, ListReservations.Name, WhoHas.Name, CheckPaths.Name,
	CompleteTask.Name, ReleaseTask.Name, RenewTask.Name, SetTitle.Name, SetBranch.Name, RequestPermission.Name, AskPermission.Name,
	Tools.Name, CallTool.Name, Health.Name, ReportActivity.Name,
	MyWork.Name, // its own tasks (claimed by it), reservations and asks (sent by it)
}

// ReadRuleOps names the operations open to agent tokens that read messages:
// the cases an end-to-end test of the rule must try.
func ReadRuleOps() []string {
	names := make([]string, 0, len(readRule))
	for n := range readRule {
		names = append(names, n)
	}
	return names
}

// ReadViewer is the agent whose messages bound what c may read, or "" when c
// may read the whole workspace: an agent token's agent, else nobody.
func ReadViewer(c *Caller) string {
	if c.Token != "" {
		return c.Agent
	}
	return ""
}

// mayRead applies the rule to one message that c named by its id: a
// message c may not read is NotFound, as if it did not exist, so that its id
// tells c nothing.
func (o *Ops) mayRead(ctx context.Context, c *Caller, op string, m *hub.Message) error {
	ok, err := o.hub.Readable(ctx, ReadViewer(c), m)
	if err != nil {
		return err
	}
	if !ok {
		return noMessage(op, m.ID)
	}
	return nil
}

// noMessage is the one answer for a message that does not exist and for one
// the caller may not read.
func noMessage(op, id string) error {
	return hub.Errorf(op, hub.NotFound, "no message %q in this workspace", id)
}

// message returns the message with the id, if c may read it.
func (o *Ops) message(ctx context.Context, c *Caller, op, id string) (*hub.Message, error) {
	m, err := o.hub.Message(ctx, c.Workspace, id)
	if hub.IsNotFound(err) {
		return nil, noMessage(op, id)
	}
	if err != nil {
		return nil, err
	}
	if err := o.mayRead(ctx, c, op, m); err != nil {
		return nil, err
	}
	return m, nil
}
