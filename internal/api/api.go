// Package api holds the JSON wire types of the daemon: the inputs and results
// of every operation (ops), which the /api/v1 endpoints, the MCP tools and the
// Go client share, and the one table from error kinds to HTTP statuses. The
// jsonschema tags describe the inputs to MCP clients. ops alone turns hub
// values into these types. It imports only hub, for the error kinds.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// Identity headers of the JSON API, and of a plain HTTP client's MCP
// session (which may send HeaderHello instead, or ?agent=&workspace=).
const (
	HeaderAgent     = "Parley-Agent"
	HeaderWorkspace = "Parley-Workspace"
	// HeaderWakePath names how the caller passes on what it reads (a
	// channel pushes it): recorded as the messages' wake path.
	HeaderWakePath = "Parley-Wake-Path"
)

// doorKey carries, in a request's context, the door a request came by when
// the daemon's own front end forwards it (the dashboard): a context, which
// no client can set, unlike a header.
type doorKey struct{}

// WithDoor marks ctx as a request that came in by door (hub.Door).
func WithDoor(ctx context.Context, door hub.Door) context.Context {
	return context.WithValue(ctx, doorKey{}, door)
}

// DoorOf is the door WithDoor set on ctx, or "".
func DoorOf(ctx context.Context) hub.Door {
	d, _ := ctx.Value(doorKey{}).(hub.Door)
	return d
}

// HeaderAgentToken is set by the daemon, never by a client (its TCP guard
// removes one a client sent), on a request made with an agent token: the
// token's id. The doors then run only the operations open to agent tokens.
const HeaderAgentToken = "Parley-Agent-Token"

// Receipts over the JSON API: a read with HeaderReceipts is not confirmed
// when its response is written; its response names the reader that holds
// what it handed out (HeaderReader), leased for a minute, and the client
// confirms once it has handed the messages on (POST /inbox/receipts as that
// reader), or gives them back.
const (
	HeaderReceipts = "Parley-Receipts"
	HeaderReader   = "Parley-Reader"
)

// ReceiptRequest is POST /api/v1/inbox/receipts, sent with HeaderReader.
type ReceiptRequest struct {
	MessageIDs []string `json:"message_ids"`
	// Received confirms them read; false puts them back in the inbox.
	Received bool `json:"received"`
}

// ReceiptResult says how many deliveries the receipt settled.
type ReceiptResult struct {
	Count int `json:"count"`
}

// Prefix is the path prefix of the JSON API.
const Prefix = "/api/v1"

// Health is GET /api/v1/health.
type Health struct {
	OK      bool   `json:"ok"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
}

// Status is GET /api/v1/status.
type Status struct {
	PID       int       `json:"pid"`
	Version   string    `json:"version"`
	StartedAt time.Time `json:"started_at"`
	Uptime    string    `json:"uptime"`
	Home      string    `json:"home"`
	Socket    string    `json:"socket"`
	// Store is "sqlite" or "postgres"; Database is the file, or the URL
	// without its password.
	Store      string   `json:"store"`
	Database   string   `json:"database"`
	Workspaces []string `json:"workspaces"`
	Sessions   int      `json:"mcp_sessions"`
	// Profiles are the MCP profiles the daemon serves.
	Profiles []string `json:"profiles"`
	// Listen is the TCP address served besides the socket, if any.
	Listen string `json:"listen,omitempty"`
	// TLS says the TCP listener speaks TLS (a team server).
	TLS bool `json:"tls,omitempty"`
	// ServerURL is where teammates' agents reach this daemon: public_url in
	// config.toml, else the TCP listener's URL; empty without one.
	ServerURL string `json:"server_url,omitempty"`
	// Goroutines is the daemon's goroutine count, for leak checks under load.
	Goroutines int `json:"goroutines"`
}

// JoinRequest is POST /api/v1/agents.
type JoinRequest struct {
	Name   string `json:"name"`
	Role   string `json:"role,omitempty"`
	Module string `json:"module,omitempty"`
	// AllowLookalike registers a new name that looks like an existing
	// agent's: the admin claiming a name a look-alike squatted.
	AllowLookalike bool `json:"allow_lookalike,omitempty"`
}

// AgentRequest is GET /api/v1/agents/{name}.
type AgentRequest struct {
	Name string `json:"name"`
}

// AgentInfo describes an agent (seed 000's AgentInfo plus Parley's fields).
type AgentInfo struct {
	Name       string `json:"name"`
	Role       string `json:"role"`
	Module     string `json:"module"`
	Status     string `json:"status" jsonschema:"active or offline"`
	LastSeenAt string `json:"last_seen_at"`
	AgentID    string `json:"agent_id" jsonschema:"composite id agent:role:hash"`
	WorkStatus string `json:"work_status" jsonschema:"self-reported: ready, work or offline"`
	Workspace  string `json:"workspace"`
	// Host is the machine whose daemon last saw the agent.
	Host string `json:"host,omitempty" jsonschema:"the machine whose daemon last saw the agent"`
	// Waiting counts the calls blocked waiting for the agent's next message
	// on the daemon that answers.
	Waiting int `json:"waiting,omitempty" jsonschema:"calls blocked waiting for this agent's next message"`
	// Health is what the agent is doing as the daemon sees it (its hooks,
	// tool calls, waits, a managed agent's stream, its permission requests).
	Health string `json:"health" jsonschema:"working, waiting (in a wait or on a person), idle, stalled (no progress for stall_after while in a turn) or offline"`
	// HealthSince is when it entered that health, where the daemon saw it.
	HealthSince string `json:"health_since,omitempty" jsonschema:"when the agent entered its health"`
	// LastProgressAt is the latest sign of progress the daemon saw.
	LastProgressAt string `json:"last_progress_at,omitempty" jsonschema:"the latest sign of progress seen"`
}

// ReportActivityRequest is POST /api/v1/activity: a client's hook reports what
// its agent is doing, for the agent's health.
type ReportActivityRequest struct {
	Activity string `json:"activity" jsonschema:"session_start, turn_start, tool_start, tool_end, progress, turn_end or session_end"`
	// ID names the tool call of tool_start and tool_end (the client's tool
	// use id).
	ID string `json:"id,omitempty"`
}

// ReportActivityResult is the agent's health after the report.
type ReportActivityResult struct {
	Agent  string `json:"agent"`
	Health string `json:"health"`
}

// ListAgentsRequest is the list_agents input and GET /api/v1/agents.
type ListAgentsRequest struct {
	IncludeOffline *bool `json:"include_offline,omitempty" jsonschema:"include agents that are not active (default true)"`
}

// ListAgentsResult is GET /api/v1/agents and the list_agents tool result.
type ListAgentsResult struct {
	Agents []AgentInfo `json:"agents"`
	Count  int         `json:"count"`
}

// StatusRequest is the set_status input and PUT /api/v1/agents/{name}/status.
type StatusRequest struct {
	Status string `json:"status" jsonschema:"ready, work or offline"`
}

// StatusResult is the set_status result.
type StatusResult struct {
	Status string `json:"status"`
	Agent  string `json:"agent"`
}

// WhoamiResult is the whoami result.
type WhoamiResult struct {
	Agent     string   `json:"agent"`
	Role      string   `json:"role"`
	Module    string   `json:"module"`
	AgentID   string   `json:"agent_id"`
	Workspace string   `json:"workspace"`
	Profiles  []string `json:"profiles"`
	Unread    int      `json:"unread"`
	// Note says what is wrong with the session, when something is: no
	// agent identity, so it can neither send nor receive; or what it may
	// do: a name Parley derived for it, which set_identity replaces.
	Note string `json:"note,omitempty"`
}

// SetIdentityRequest is the set_identity input.
type SetIdentityRequest struct {
	Name string `json:"name" jsonschema:"your new name, short and readable (reviewer, alice-api); no other agent's"`
	Role string `json:"role,omitempty" jsonschema:"your role, such as reviewer (default: unchanged)"`
}

// SetIdentityResult is the set_identity result.
type SetIdentityResult struct {
	Agent     string `json:"agent"`
	Role      string `json:"role"`
	AgentID   string `json:"agent_id"`
	Workspace string `json:"workspace"`
	// Previous is the name the session had, which stays an alias: mail to
	// it reaches the new name.
	Previous string `json:"previous"`
	Unread   int    `json:"unread"`
}

// SendRequest is the send_message input and POST /api/v1/messages.
type SendRequest struct {
	To       string            `json:"to" jsonschema:"recipient: an agent name, @role, @group, @everyone, or a composite id agent:role:hash"`
	Content  string            `json:"content" jsonschema:"message text (markdown)"`
	ReplyTo  string            `json:"reply_to,omitempty" jsonschema:"id of the message this replies to (threads the reply)"`
	Priority string            `json:"priority,omitempty" jsonschema:"critical, high, normal (default) or low"`
	Metadata map[string]string `json:"metadata,omitempty" jsonschema:"key-value metadata"`
	// Payload is a JSON value carried beside the content (Sidechat's
	// objects). The JSON API takes it; the native tool does not offer it.
	Payload json.RawMessage `json:"payload,omitempty"`
	// AckRequired asks every recipient to acknowledge (ack_message).
	AckRequired bool `json:"ack_required,omitempty" jsonschema:"ask recipients to ack_message it"`
	// AckWithin is a deadline in seconds from now for those acks.
	AckWithin *int `json:"ack_within,omitempty" jsonschema:"seconds to ack; then you get one notice"`
	// IdempotencyKey names this send: a retry with the same key (within
	// 24 h) sends nothing new and returns the first send's result.
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"your name for this send: a retry with it sends nothing new"`
	// Deliver is how the message may draw an idle or busy recipient's
	// attention (hub.DeliverMode); "" is the priority's default.
	Deliver string `json:"deliver,omitempty" jsonschema:"waking a recipient that is not waiting: queue, idle, steer or interrupt (default by priority)"`
	// TTL is the message's time to live in seconds: a copy that nothing
	// reaches in that time, while its recipient has no reader and no door,
	// bounces back to the sender. 0 means none; absent, the daemon's
	// default.
	TTL *int `json:"ttl_seconds,omitempty" jsonschema:"bounce back if nothing reaches them this long (0: never; default 86400)"`
	// KeepUnjoined gives a message to a name that never joined the
	// default time to live, not the short one (hub.SendRequest): set by a
	// profile whose seed keeps such mail (Sidechat), never on the wire.
	KeepUnjoined bool `json:"-"`
}

// SendResult is the send_message result (seed 000 plus recipients and thread).
type SendResult struct {
	Status          string   `json:"status" jsonschema:"delivered, or queued: see warning"`
	MessageID       string   `json:"message_id"`
	RecipientStatus string   `json:"recipient_status" jsonschema:"active, offline or unregistered (of the first recipient); mixed for several"`
	Recipients      []string `json:"recipients"`
	ThreadID        string   `json:"thread_id"`
	// Replayed says this answers a retry with an idempotency key: the first
	// send's result; nothing new was sent.
	Replayed bool `json:"replayed,omitempty"`
	// Warning says what the sender should know: the name never joined (and
	// the names that look like it), so the message only waits for it.
	Warning string `json:"warning,omitempty"`
}

// MessageInfo is one message as a reader sees it (seed 000's MessageInfo plus
// addressing, threading, metadata and payload).
type MessageInfo struct {
	MessageID string            `json:"message_id"`
	From      string            `json:"from"`
	To        string            `json:"to"`
	Content   string            `json:"content"`
	Priority  string            `json:"priority"`
	Timestamp string            `json:"timestamp"`
	ReplyTo   string            `json:"reply_to,omitempty"`
	ThreadID  string            `json:"thread_id,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Payload   json.RawMessage   `json:"payload,omitempty"`
	// DeliveryCount and Redelivered say that this copy was handed out before:
	// to a session that went away before it was known to have it.
	DeliveryCount int    `json:"delivery_count,omitempty" jsonschema:"times handed to you; above 1 you may have seen it"`
	Redelivered   bool   `json:"redelivered,omitempty" jsonschema:"handed out before"`
	AckRequired   bool   `json:"ack_required,omitempty" jsonschema:"the sender asks for ack_message"`
	AckDeadline   string `json:"ack_deadline,omitempty"`
	// Provenance is what Parley attests of who sent it; content, payload
	// and metadata are the sender's own words.
	Provenance Provenance `json:"provenance" jsonschema:"who sent it, as Parley attests"`
}

// CheckRequest is the check_messages input, POST /api/v1/inbox/check and
// GET /api/v1/inbox.
type CheckRequest struct {
	Limit int `json:"limit,omitempty" jsonschema:"most messages to return (default 50)"`
}

// CheckResult is the check_messages result and GET /api/v1/inbox.
type CheckResult struct {
	Status    string        `json:"status" jsonschema:"messages or empty"`
	Messages  []MessageInfo `json:"messages"`
	Remaining int           `json:"remaining"`
}

// WaitRequest is the wait_for_message input and POST /api/v1/inbox/wait.
type WaitRequest struct {
	Timeout        *int   `json:"timeout,omitempty" jsonschema:"most seconds to wait (default 300, max 600)"`
	PriorityFilter string `json:"priority_filter,omitempty" jsonschema:"all (default), critical, high_and_above or normal_and_above"`
}

// WaitResult is the wait_for_message result.
type WaitResult struct {
	Status        string       `json:"status" jsonschema:"message_received or timeout"`
	Message       *MessageInfo `json:"message"`
	WaitedSeconds int          `json:"waited_seconds"`
}

// BroadcastFilter narrows a broadcast.
type BroadcastFilter struct {
	Status  string   `json:"status,omitempty" jsonschema:"all (default) or active (only agents seen in the last 2 minutes)"`
	Exclude []string `json:"exclude,omitempty" jsonschema:"agent names or roles to leave out"`
}

// BroadcastRequest is the broadcast_message input and POST /api/v1/broadcast.
type BroadcastRequest struct {
	Content  string           `json:"content" jsonschema:"message text to broadcast"`
	Priority string           `json:"priority,omitempty" jsonschema:"critical, high, normal (default) or low"`
	Filter   *BroadcastFilter `json:"filter,omitempty" jsonschema:"optional recipient filters"`
}

// BroadcastResult is the broadcast_message result.
type BroadcastResult struct {
	Status     string   `json:"status" jsonschema:"sent, partial or no_recipients"`
	SentTo     []string `json:"sent_to"`
	FailedTo   []string `json:"failed_to"`
	TotalSent  int      `json:"total_sent"`
	MessageIDs []string `json:"message_ids"`
}

// HistoryRequest is GET /api/v1/messages.
type HistoryRequest struct {
	Thread string `json:"thread,omitempty"`
	With   string `json:"with,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// MessageRequest is GET /api/v1/messages/{id}.
type MessageRequest struct {
	ID string `json:"id"`
}

// ThreadRequest is the get_thread input.
type ThreadRequest struct {
	MessageID string `json:"message_id" jsonschema:"any message of the thread"`
}

// HistoryResult is GET /api/v1/messages and the get_thread result.
type HistoryResult struct {
	Messages []MessageInfo `json:"messages"`
}

// GroupRequest is the create_group input and POST /api/v1/groups.
type GroupRequest struct {
	Name        string `json:"name" jsonschema:"group name, e.g. reviewers"`
	Description string `json:"description,omitempty" jsonschema:"what the group is for"`
}

// GroupNameRequest is the delete_group input and DELETE /api/v1/groups/{name}.
type GroupNameRequest struct {
	Name string `json:"name" jsonschema:"group name"`
}

// GetGroupRequest is the get_group input and GET /api/v1/groups/{name}.
type GetGroupRequest struct {
	Name   string `json:"name" jsonschema:"group name"`
	Expand bool   `json:"expand,omitempty" jsonschema:"resolve roles to the agents they hold now"`
}

// GroupResult is the create_group and delete_group result.
type GroupResult struct {
	Status string `json:"status"`
	Name   string `json:"name"`
}

// MemberRequest is the add_group_member and remove_group_member input, and
// POST and DELETE /api/v1/groups/{group}/members (the path names the group).
type MemberRequest struct {
	Group      string `json:"group" jsonschema:"group name"`
	MemberType string `json:"member_type" jsonschema:"agent or role"`
	MemberID   string `json:"member_id" jsonschema:"agent name or role name"`
}

// MemberResult is the add_group_member and remove_group_member result.
type MemberResult struct {
	Status     string `json:"status"`
	Group      string `json:"group"`
	MemberType string `json:"member_type"`
	MemberID   string `json:"member_id"`
}

// GroupInfo is one group in list_groups.
type GroupInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	CreatedAt   string `json:"created_at"`
	CreatedBy   string `json:"created_by"`
	MemberCount int    `json:"member_count"`
}

// ListGroupsResult is the list_groups result.
type ListGroupsResult struct {
	Groups []GroupInfo `json:"groups"`
}

// MemberInfo is one member of a group.
type MemberInfo struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// GroupDetail is the get_group result.
type GroupDetail struct {
	Name                string       `json:"name"`
	Description         string       `json:"description"`
	CreatedAt           string       `json:"created_at"`
	CreatedBy           string       `json:"created_by"`
	Members             []MemberInfo `json:"members"`
	ExpandedAgents      []string     `json:"expanded_agents,omitempty"`
	ExpandedAgentsCount *int         `json:"expanded_agents_count,omitempty"`
}

// Empty is the input of an operation that takes none.
type Empty struct{}

// ErrorBody is the body of every non-2xx JSON API response.
type ErrorBody struct {
	Error struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// TimeFormat is how times go on the wire.
const TimeFormat = time.RFC3339Nano

// FormatTime renders t, or "" for the zero time.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeFormat)
}

// ---- errors ----

// StatusOf is the HTTP status of an error, by its kind (HTTPStatus).
func StatusOf(err error) int { return HTTPStatus(hub.KindOf(err)) }

// HTTPStatus is the one table from error kinds to HTTP statuses.
func HTTPStatus(k hub.Kind) int {
	switch k {
	case hub.Invalid:
		return http.StatusBadRequest
	case hub.NotFound:
		return http.StatusNotFound
	case hub.Conflict:
		return http.StatusConflict
	case hub.Unavailable:
		return http.StatusServiceUnavailable
	case hub.TooLarge:
		return http.StatusRequestEntityTooLarge
	case hub.Forbidden:
		return http.StatusForbidden
	case hub.Timeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// NewErrorBody renders err for the wire.
func NewErrorBody(err error) ErrorBody {
	var b ErrorBody
	b.Error.Kind = hub.KindOf(err).String()
	b.Error.Message = err.Error()
	return b
}

// Err turns an error body back into a *hub.Error of the same kind.
func (b ErrorBody) Err() error {
	return &hub.Error{Kind: hub.ParseKind(b.Error.Kind), Err: errors.New(b.Error.Message)}
}
