package hub

import (
	"context"
	"time"
)

// Store keeps the hub's state durably. It speaks the hub's terms; every method is
// safe for concurrent use, and every write is atomic: it happens whole or not at
// all. Errors use this package's kinds (NotFound, Conflict, Unavailable...).
//
// It is the whole contract of a backend: a store that has these methods is
// complete. Three optional interfaces add only what one backend can do
// better or what daemons sharing one store need, and the hub works without
// them: SendStore (a send in one round trip), PresenceStore (when an agent
// left another daemon) and NotifyingStore (wake-ups between daemons).
//
// The contract's tests live in internal/store/storetest (RunAll); every
// implementation passes them.
type Store interface {
	// PutAgent inserts the agent or updates its role, module, status and last-seen
	// time, keeping its creation time.
	PutAgent(ctx context.Context, a *Agent) error
	// Agent returns the agent named name in ws, or a NotFound error.
	Agent(ctx context.Context, ws, name string) (*Agent, error)
	// Agents returns every agent of ws ordered by name.
	Agents(ctx context.Context, ws string) ([]*Agent, error)
	// SetAgentStatus sets the self-reported status; NotFound if there is no such agent.
	SetAgentStatus(ctx context.Context, ws, name string, st Status) error
	// TouchAgents records that the agents were seen at the given times.
	// Unknown agents are ignored.
	TouchAgents(ctx context.Context, ws string, seen map[string]time.Time) error
	// RenameAgent gives the agent old of ws the record to (to.Name, its
	// role and module; old's creation time and status when old is an
	// agent), atomically: to.Name takes old's deliveries, read or not (a
	// copy of a message both had is kept once, to.Name's), its group
	// memberships and its reservations; old's record goes; old becomes an
	// alias of to.Name, and so does every alias of old. Conflict if
	// to.Name is an agent already, or an alias of another agent; to.Name
	// stops being an alias of old (a name taken back). old need not be an
	// agent: then to is a new agent, and old only an alias.
	RenameAgent(ctx context.Context, old string, to *Agent, at time.Time) error
	// Aliases returns the aliases of ws: each old name to the agent that
	// has it now.
	Aliases(ctx context.Context, ws string) (map[string]string, error)
	// ForgetAgent removes the agent name of ws, atomically: its record, its
	// group memberships, its reservations and its old names; its copies
	// not yet read (queued, redelivered, or leased to a reader) leave the
	// inbox Bounced at at with the reason, and are returned with their
	// messages. What it sent and read stays in the history. NotFound if
	// there is no such agent.
	ForgetAgent(ctx context.Context, ws, name, reason string, at time.Time) ([]*Delivery, error)

	// CreateMessage stores m with one delivery per recipient, atomically:
	// Queued, or handed out at once for the recipients of handed (see
	// Handoff). Each handed recipient must be one of recipients, once.
	CreateMessage(ctx context.Context, m *Message, recipients []string, handed ...Handoff) error
	// Message returns the message with the id in ws, or NotFound.
	Message(ctx context.Context, ws, id string) (*Message, error)
	// MessageByKey returns the message of sender in ws stored with the
	// idempotency key, or NotFound. CreateMessage and CompleteTask refuse
	// (Conflict) a second message of the sender with the same key.
	MessageByKey(ctx context.Context, ws, sender, key string) (*Message, error)
	// Take hands up to q.Limit of the recipient's inbox deliveries (Queued or
	// Redelivered, rank <= q.MaxRank, of q.Thread if set) to q.Reader in
	// inbox order (priority rank, then the order the copies were first
	// queued: a copy that comes back keeps its place), counting one delivery
	// each, and returns them with their messages. With a reader they become
	// Delivered, leased until q.LeaseUntil; without, Read at once. Two
	// concurrent calls never return the same delivery. First it confirms
	// q.Confirm for q.Reader at q.Now, as Confirm does, and returns those it
	// confirmed too: a reader's confirmations ride its next hand-out.
	Take(ctx context.Context, q TakeQuery) (taken, confirmed []*Delivery, err error)
	// Unread counts recipient's inbox deliveries (Queued or Redelivered) with
	// rank <= maxRank.
	Unread(ctx context.Context, ws, recipient string, maxRank int) (int, error)
	// UnreadByRecipient counts the inbox deliveries with rank <= maxRank of
	// every recipient of ws, in one query; recipients with none are absent.
	UnreadByRecipient(ctx context.Context, ws string, maxRank int) (map[string]int, error)
	// Peek returns up to limit inbox deliveries of recipient in inbox order,
	// with their messages, without taking them.
	Peek(ctx context.Context, ws, recipient string, limit int) ([]*Delivery, error)
	// Confirm marks Read, at at, the deliveries leased to reader (of the
	// messages with the ids, if any given) and returns them. A delivery no
	// longer leased to reader (released, or confirmed already), or handed
	// out after at, is left alone: a confirmation speaks only for what the
	// reader held when it was made.
	Confirm(ctx context.Context, reader string, messageIDs []string, at time.Time) ([]*Delivery, error)
	// NoteWake records via (at at) as the wake path of recipient's
	// deliveries of the messages that have none yet and are still in its
	// inbox, with letter (if not "") as the letter that told of them, and
	// says how many it marked. Unknown ids are ignored.
	NoteWake(ctx context.Context, ws, recipient string, messageIDs []string, via WakePath, letter string, at time.Time) (int, error)
	// Release puts the leased deliveries that q selects back in their
	// inboxes, Redelivered, in their places, and returns them.
	Release(ctx context.Context, q ReleaseQuery) ([]*Delivery, error)
	// Reopen puts recipient's copies of the messages back in the inbox,
	// Redelivered, in their places, if they were handed out and not acked
	// (Delivered or Read), and returns them: their reader gave them up after
	// all. Other ids are ignored.
	Reopen(ctx context.Context, ws, recipient string, messageIDs []string) ([]*Delivery, error)
	// Ack marks recipient's deliveries of the messages acked (and read, if
	// they were not), whatever their state, and returns those that were not
	// acked before. Unknown ids are ignored.
	Ack(ctx context.Context, ws, recipient string, messageIDs []string, at time.Time) ([]*Delivery, error)
	// RenewClaims extends to until the leases of the claimed tasks that
	// readers hold (copies to a work queue leased to one of them; only the
	// tasks with the ids, if any are given), never shortening one, and
	// returns them. The claim's holder is alive: its session, its agent's
	// heartbeat or a managed run says so.
	RenewClaims(ctx context.Context, readers, taskIDs []string, until time.Time) ([]*Delivery, error)
	// CompleteTask ends a claimed task, in one transaction: it confirms the
	// task's copy leased to the first of readers that holds it (as Confirm
	// does, at reply.CreatedAt) and stores reply, the task's result, with
	// one queued delivery, to recipient. It returns the copy it confirmed;
	// none (and nothing written) when no reader holds it. A daemon killed
	// at any moment leaves the task either claimed without a result or
	// done with its result, never done without one.
	CompleteTask(ctx context.Context, readers []string, taskID string, reply *Message, recipient string) ([]*Delivery, error)
	// Deliveries returns every recipient's delivery of the message (without
	// the message), ordered by recipient; NotFound if there is no such message.
	Deliveries(ctx context.Context, ws, messageID string) ([]*Delivery, error)
	// DueAcks finds the messages whose ack deadline is at or before now and
	// that were not reported yet, marks them reported, and returns those
	// with recipients that have not acked. Each message is returned once
	// over the store's life, even across concurrent calls.
	DueAcks(ctx context.Context, now time.Time) ([]*Overdue, error)
	// Overdue lists the messages of ws sent by sender (any sender if empty)
	// whose ack deadline is at or before now with recipients that have not
	// acked, oldest first.
	Overdue(ctx context.Context, ws, sender string, now time.Time) ([]*Overdue, error)
	// OpenTasks returns up to limit copies of ws's tasks that are not done:
	// every delivery to a work queue (queue:NAME) that is queued,
	// redelivered or delivered (claimed), with its message, by queue, then
	// in inbox order.
	OpenTasks(ctx context.Context, ws string, limit int) ([]*Delivery, error)
	// Unacked returns up to limit messages of ws sent by sender that asked
	// for an ack (AckRequired) with recipients that have not acked, oldest
	// first, each with those recipients.
	Unacked(ctx context.Context, ws, sender string, limit int) ([]*Overdue, error)
	// History returns messages of ws, newest first, that match q.
	History(ctx context.Context, ws string, q HistoryQuery) ([]*Message, error)
	// ClearInbox marks every delivery of recipient that is not Read yet
	// (in the inbox or leased) Read, and returns how many.
	ClearInbox(ctx context.Context, ws, recipient string) (int, error)

	// CreateGroup stores a new group; Conflict if one of that name exists.
	CreateGroup(ctx context.Context, g *Group) error
	// DeleteGroup removes a group and its members; NotFound if absent.
	DeleteGroup(ctx context.Context, ws, name string) error
	// Group returns a group with its members, or NotFound.
	Group(ctx context.Context, ws, name string) (*Group, error)
	// Groups returns every group of ws with members, ordered by name.
	Groups(ctx context.Context, ws string) ([]*Group, error)
	// AddGroupMember adds m to the group (adding it twice is not an error);
	// NotFound if the group is absent.
	AddGroupMember(ctx context.Context, ws, group string, m Member) error
	// RemoveGroupMember removes m; NotFound if the group or the member is absent.
	RemoveGroupMember(ctx context.Context, ws, group string, m Member) error

	// Search returns up to q.Limit messages of ws that contain every term of q,
	// best match first (ranked by BM25 over content, payload text and metadata
	// values), each with a snippet that marks the matched words with **.
	// Viewer, when set, keeps only what that agent may read (HistoryQuery.Viewer).
	Search(ctx context.Context, ws string, q SearchQuery) ([]SearchHit, error)

	// ChangeReservations calls fn with the reservations of ws that are live at
	// now (ExpiresAt after now), oldest first, and applies the change fn
	// returns, atomically: no other ChangeReservations of ws runs in between,
	// so a conflict check in fn holds when its result is stored. Reservations
	// of ws that expired by now are forgotten in the same step. fn may run more
	// than once and must have no effects of its own; its error is returned,
	// and then nothing changes.
	ChangeReservations(ctx context.Context, ws string, now time.Time, fn func(live []*Reservation) (ReservationChange, error)) error
	// LiveReservations returns the reservations of ws live at now, oldest first.
	LiveReservations(ctx context.Context, ws string, now time.Time) ([]*Reservation, error)

	// Purge deletes the messages that q selects (created before q.Before,
	// read by every recipient, and acknowledged by every recipient if they
	// ask for it, unless their deadline is before q.AckGivenUp and their
	// overdue notice went out), with their deliveries, a bounded batch per
	// transaction so that sends are not held up. Unread messages are kept,
	// however old.
	Purge(ctx context.Context, q PurgeQuery) (PurgeResult, error)

	// PutDoor opens d, or refreshes the door of the same workspace, agent,
	// kind and session (its address, token, owner, host, uid and refresh
	// time), opening it again if it was closed; the refreshed door keeps its
	// id and opening time. It returns the door as stored.
	PutDoor(ctx context.Context, d *SessionDoor) (*SessionDoor, error)
	// CloseDoor closes the open door with the id in ws at at, with the
	// reason, and returns it; a door closed already is returned as it is,
	// but a dormant one (SessionDoor.Dormant) closed for another reason
	// takes it. NotFound if there is none.
	CloseDoor(ctx context.Context, ws, id, reason string, at time.Time) (*SessionDoor, error)
	// Doors returns ws's doors (of agent if not empty), newest opened
	// first: the open ones, and with withClosed the closed ones too.
	Doors(ctx context.Context, ws, agent string, withClosed bool) ([]*SessionDoor, error)
	// MarkLetter applies ch, at at, to recipient's copies that letter told
	// of (or, with messageIDs, to those copies, whose letter becomes
	// letter), and returns the copies it changed:
	//   - MarkSeen: those neither seen nor bounced become seen (their door
	//     state cleared);
	//   - MarkHeld, MarkUnconfirmed: those neither seen nor out of the inbox
	//     take the state (unconfirmed only where the client said nothing
	//     yet), with ch.Note and ch.Until;
	//   - MarkReleased: the held ones are handed again (no door state);
	//   - MarkOrphaned: the held ones (not seen, in the inbox) become
	//     unconfirmed, with ch.Note;
	//   - MarkNotLoaded: those still in the inbox that no path reached take
	//     the state and ch.Note;
	//   - MarkDeclined, MarkBounced: those still in the inbox (queued or
	//     redelivered, not leased) leave it, Declined or Bounced, with
	//     ch.Note as the reason.
	MarkLetter(ctx context.Context, ws, recipient, letter string, messageIDs []string, ch LetterChange, at time.Time) ([]*Delivery, error)
	// Redeliver puts recipient's Bounced or Declined copy of the message
	// back in its inbox, queued as if new (no wake path, letter, door state
	// or seen mark), and returns it; NotFound if there is no such copy.
	Redeliver(ctx context.Context, ws, recipient, messageID string) (*Delivery, error)
	// DueExpiries finds the messages whose time to live ended at or before
	// now and that were not reported yet, marks them reported, and returns
	// their copies (with the message) that nothing reached: still in the
	// inbox, never handed out, no wake path. Each message is returned once
	// over the store's life, even across concurrent calls.
	DueExpiries(ctx context.Context, now time.Time) ([]*Delivery, error)
	// Bounce takes recipient's copies of the messages out of the inbox,
	// Bounced at at with the reason, if they are still in it (queued or
	// redelivered, not leased), and returns them. Other ids are ignored.
	Bounce(ctx context.Context, ws, recipient string, messageIDs []string, reason string, at time.Time) ([]*Delivery, error)
	// Bounced returns up to limit bounced copies of ws's messages sent by
	// sender (any sender if ""), with their messages, newest bounce first.
	Bounced(ctx context.Context, ws, sender string, limit int) ([]*Delivery, error)

	// Workspaces lists every workspace that has agents, messages or groups.
	Workspaces(ctx context.Context) ([]string, error)
	// Close releases the store.
	Close() error
}

// SendStore is a Store that sends in one round trip: it stores a message and
// reads its recipients' agents (for the presence a send reports) together. A
// store on a server (PostgreSQL) pays a round trip per call, and a send was
// two. A store that several daemons share also tells the others of the
// send's events (SendEvents) in the same transaction, so that they hear of
// the message exactly when it is stored, and the hub does not announce them
// after it.
type SendStore interface {
	// SendMessage is CreateMessage that also returns the agents of the
	// recipients that exist, in any order.
	SendMessage(ctx context.Context, m *Message, recipients []string, handed ...Handoff) ([]*Agent, error)
}

// NotifyingStore is a Store that several daemons share (PostgreSQL): it
// carries their events between them. The daemon gives its notifications to
// the hub (Options.Notifier) and runs them beside it. Such a store tells the
// others of a send in the send's own transaction: SendMessage (if it is a
// SendStore) of the send's events, CompleteTask of its reply's message.sent
// (SendEvents); the hub announces the rest.
type NotifyingStore interface {
	Notifications() Notifications
}

// Notifications tell the other daemons on a shared store of this daemon's
// events (Notifier), and give theirs to this daemon's hub (Run).
type Notifications interface {
	Notifier
	// Run listens until ctx ends, relaying the events of the other
	// daemons to w (and waking all of w's waiters after a lost
	// connection).
	Run(ctx context.Context, w Waker)
}

// Waker is what Notifications.Run hands the other daemons' events to: a Hub.
type Waker interface {
	Relay(e Event)
	Wake(ws string, recipients []string)
	WakeAll()
}

// PresenceStore is a Store that several daemons share and that records when
// an agent left: its last session on a daemon ended. The other daemons know
// the agent only from the store, and would show it active until its
// last-seen time aged out of ActiveWindow; with this they show it gone at
// once. Agent and Agents fill in LeftAt.
type PresenceStore interface {
	// SetAgentLeft records when the agent's last session ended; the zero
	// time clears it (a session opened again). Unknown agents are ignored.
	SetAgentLeft(ctx context.Context, ws, name string, at time.Time) error
}

// HistoryQuery selects messages from a workspace's history.
type HistoryQuery struct {
	Thread string // only this thread
	Agent  string // only messages sent by or delivered to this agent
	// Viewer, if set, keeps only what that agent may read: the messages of
	// every thread in which it sent a message or was delivered one. So it
	// reads its own messages and the rest of the conversations it takes part
	// in (a reply in its thread, even between two others), and nothing else
	// of the workspace. A message without a thread id is a thread of its own.
	// Search's Viewer admits the same.
	Viewer string
	Limit  int // at most this many (0: 100)
}
