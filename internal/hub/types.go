package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Priority orders a recipient's inbox: critical first, low last.
type Priority string

// The four priorities, highest first.
const (
	Critical Priority = "critical"
	High     Priority = "high"
	Normal   Priority = "normal"
	Low      Priority = "low"
)

// Rank is the priority's sort key: 0 for critical up to 3 for low.
func (p Priority) Rank() int {
	switch p {
	case Critical:
		return 0
	case High:
		return 1
	case Low:
		return 3
	}
	return 2
}

// ParsePriority validates s; the empty string means Normal.
func ParsePriority(s string) (Priority, error) {
	switch p := Priority(s); p {
	case "":
		return Normal, nil
	case Critical, High, Normal, Low:
		return p, nil
	}
	return "", Errorf("", Invalid, "invalid priority %q: want critical, high, normal or low", s)
}

// A PriorityFilter admits messages of priority Min or higher; the zero value
// admits all.
type PriorityFilter struct{ Min Priority }

// MaxRank is the highest rank the filter admits.
func (f PriorityFilter) MaxRank() int {
	if f.Min == "" {
		return Low.Rank()
	}
	return f.Min.Rank()
}

// ParsePriorityFilter reads seed 000's filter names: all (or empty), critical,
// high_and_above, normal_and_above.
func ParsePriorityFilter(s string) (PriorityFilter, error) {
	switch s {
	case "", "all":
		return PriorityFilter{}, nil
	case "critical":
		return PriorityFilter{Min: Critical}, nil
	case "high_and_above", "high":
		return PriorityFilter{Min: High}, nil
	case "normal_and_above", "normal":
		return PriorityFilter{Min: Normal}, nil
	}
	return PriorityFilter{}, Errorf("", Invalid, "invalid priority_filter %q: want all, critical, high_and_above or normal_and_above", s)
}

// Status is what an agent says of itself (seed 002): ready for work, at work, or offline.
type Status string

// The self-reported statuses.
const (
	StatusReady   Status = "ready"
	StatusWork    Status = "work"
	StatusOffline Status = "offline"
)

// ParseStatus validates s.
func ParseStatus(s string) (Status, error) {
	switch st := Status(s); st {
	case StatusReady, StatusWork, StatusOffline:
		return st, nil
	}
	return "", Errorf("", Invalid, "invalid status %q: want ready, work or offline", s)
}

// Agent is a participant in a workspace, known by its name.
type Agent struct {
	Workspace string
	Name      string
	Role      string
	Module    string
	Status    Status // self-reported
	CreatedAt time.Time
	LastSeen  time.Time
	// Host is the machine whose daemon last saw the agent, where a store
	// shared by several records it; the hub fills in its own host otherwise.
	Host string
	// LeftAt is when the agent's last session on a daemon ended, where a
	// store shared by several records it (PresenceStore); zero if it has not
	// left, or came back.
	LeftAt time.Time
	// SessionBound: the agent is named after its client session
	// (claude-myrepo-3f9a1c, or the name such a session chose for itself)
	// and lives as long as that session: once none of its sessions or
	// doors is open it is gone, and @everyone skips it.
	SessionBound bool
	// Provisional: its session's start registered it, so that it is
	// reachable at once, and it has made no call since; once its session
	// ends it expires (lifetime.go).
	Provisional bool
}

// ID is the agent's composite id, agent:{role}:{hash} (seed 000).
func (a *Agent) ID() string { return CompositeID(a.Workspace, a.Role, a.Name) }

// CompositeID derives the composite id of the agent name in workspace ws with role.
// The hash covers workspace and name only, so an id stays findable by its hash
// even when the role in front of it is stale.
func CompositeID(ws, role, name string) string {
	return "agent:" + role + ":" + NameHash(ws, name)
}

// NameHash is the hash part of a composite id.
func NameHash(ws, name string) string {
	sum := sha256.Sum256([]byte(ws + "\x00" + name))
	return hex.EncodeToString(sum[:6])
}

// Message is one message as sent; its read state lives per recipient.
type Message struct {
	ID        string // ULID
	Workspace string
	From      string // sender's agent name
	To        string // the address as the sender wrote it
	Content   string // markdown
	Payload   json.RawMessage
	Priority  Priority
	ReplyTo   string
	ThreadID  string // the id of the first message of the thread
	Metadata  map[string]string
	CreatedAt time.Time
	// AckRequired asks each recipient to acknowledge the message (ack_message).
	AckRequired bool
	// AckDeadline, if not zero, is when an unacknowledged copy becomes
	// overdue: the sender is told once. Set only with AckRequired.
	AckDeadline time.Time
	// ExpiresAt, if not zero, ends the message's time to live: a copy that
	// nothing reached by then, while its recipient had no reader and no
	// door, bounces back to the sender.
	ExpiresAt time.Time
	// Deliver is how the message may draw its recipient's attention; ""
	// means its priority's default (Mode).
	Deliver DeliverMode
	// Origin is what the daemon attests of the sending: set by the hub,
	// never by the sender.
	Origin Origin
	// IdempotencyKey, if set, is the sender's name for this send: no other
	// message of the sender in the workspace has it (idempotency.go).
	IdempotencyKey string
}

// Origin is what the daemon that took a message attests of its sending,
// beside the sender's name: how it came in, as whom. Its content, metadata
// and payload are the sender's own words; these are not. A message stored
// before origins were recorded has a zero Origin.
type Origin struct {
	Role string // the sender's role when it sent, as its agent record had it; "" for a person or the daemon
	Host string // the machine of the daemon that took the send
	Door Door   // the way the message came in
	// Task is the task whose result this message is: complete_task sent
	// it, for the task's claimant, to the task's sender.
	Task string
}

// Door is the way a message came into the daemon.
type Door string

// The doors.
const (
	// DoorMCP: an MCP session, an agent's (through parley mcp serve, or
	// Streamable HTTP on the socket or over TCP).
	DoorMCP Door = "mcp"
	// DoorCLI: the JSON API on the Unix socket, which the OS user's command
	// line uses (a person typing, or a script, hook or agent's shell
	// running the parley CLI as that user).
	DoorCLI Door = "cli"
	// DoorDashboard: a person signed in to the dashboard (sender human:NAME).
	DoorDashboard Door = "dashboard"
	// DoorTCP: the JSON API over TCP, with an agent token or the admin token.
	DoorTCP Door = "tcp"
	// DoorDaemon: the daemon itself (a notice of its own: an overdue ack, a
	// managed agent's stopped loop).
	DoorDaemon Door = "daemon"
)

// MemberType says whether a group member is an agent or a whole role.
type MemberType string

// Member types.
const (
	MemberAgent MemberType = "agent"
	MemberRole  MemberType = "role"
)

// Member is one entry of a group.
type Member struct {
	Type MemberType
	ID   string // agent name or role name
}

// Group is a named set of agents and roles that can be addressed as @name.
type Group struct {
	Workspace   string
	Name        string
	Description string
	CreatedBy   string
	CreatedAt   time.Time
	Members     []Member
}

// Everyone is the built-in group of every agent in a workspace.
const Everyone = "everyone"

// Limits for names.
const (
	MaxNameLen      = 64
	MaxWorkspaceLen = 512
)

// ValidName checks an agent, role or group name: 1-64 bytes of letters, digits,
// '.', '_' or '-', starting with a letter or digit.
func ValidName(what, s string) error {
	if s == "" {
		return Errorf("", Invalid, "%s must not be empty", what)
	}
	if len(s) > MaxNameLen {
		return Errorf("", Invalid, "%s %q is too long: at most %d bytes", what, s[:MaxNameLen]+"...", MaxNameLen)
	}
	for i, r := range s {
		ok := unicode.IsLetter(r) || unicode.IsDigit(r) || (i > 0 && (r == '.' || r == '_' || r == '-'))
		if !ok {
			return Errorf("", Invalid, "invalid %s %q: use letters, digits, '.', '_' or '-', starting with a letter or digit", what, s)
		}
	}
	return nil
}

// ValidWorkspace checks a workspace name: printable, no control characters, bounded.
func ValidWorkspace(s string) error {
	if s == "" {
		return Errorf("", Invalid, "workspace must not be empty")
	}
	if len(s) > MaxWorkspaceLen || !utf8.ValidString(s) {
		return Errorf("", Invalid, "invalid workspace: at most %d bytes of UTF-8", MaxWorkspaceLen)
	}
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return Errorf("", Invalid, "invalid workspace %q: control characters are not allowed", s)
	}
	return nil
}
