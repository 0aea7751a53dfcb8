package hub

import (
	"context"
	"time"
)

// Store keeps the hub's state durably. It speaks the hub's terms; every method is
// safe for concurrent use, and every write is atomic: it happens whole or not at
// all. Errors use this package's kinds (NotFound, Conflict, Unavailable...).
//
// The contract lives in internal/store/storetest; every implementation passes it.
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

	// CreateMessage stores m with one unread delivery per recipient, atomically.
	CreateMessage(ctx context.Context, m *Message, recipients []string) error
	// Message returns the message with the id in ws, or NotFound.
	Message(ctx context.Context, ws, id string) (*Message, error)
	// Consume marks up to limit unread deliveries of recipient read, in inbox
	// order (priority rank, then oldest first), admitting only ranks <= maxRank,
	// and returns their messages in that order. Two concurrent calls never
	// return the same delivery.
	Consume(ctx context.Context, ws, recipient string, maxRank, limit int) ([]*Message, error)
	// Unread counts recipient's unread deliveries with rank <= maxRank.
	Unread(ctx context.Context, ws, recipient string, maxRank int) (int, error)
	// Peek returns up to limit unread messages of recipient in inbox order
	// without consuming them.
	Peek(ctx context.Context, ws, recipient string, limit int) ([]*Message, error)
	// History returns messages of ws, newest first, that match q.
	History(ctx context.Context, ws string, q HistoryQuery) ([]*Message, error)
	// ClearInbox marks every unread delivery of recipient read and returns how many.
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

	// Workspaces lists every workspace that has agents, messages or groups.
	Workspaces(ctx context.Context) ([]string, error)
	// Close releases the store.
	Close() error
}

// HistoryQuery selects messages from a workspace's history.
type HistoryQuery struct {
	Thread string // only this thread
	Agent  string // only messages sent by or delivered to this agent
	Limit  int    // at most this many (0: 100)
}
