// Package api holds the JSON wire types of the daemon's /api/v1 endpoints and of
// the native MCP profile's results, shared by the daemon's handlers, the MCP
// tools and the Go client. It converts hub values to wire values and maps error
// kinds to HTTP statuses (the one table). It imports only hub.
package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// Identity headers; the same names are accepted as query parameters
// (agent, workspace, profile, role, module) on /mcp.
const (
	HeaderAgent     = "Parley-Agent"
	HeaderWorkspace = "Parley-Workspace"
	HeaderRole      = "Parley-Role"
	HeaderModule    = "Parley-Module"
	HeaderProfile   = "Parley-Profile"
)

// Headers of a session started inside tmux (`parley mcp serve` sends them at
// initialize): where the agent's pane is, and whether it asked to be nudged.
const (
	HeaderTmuxSocket = "Parley-Tmux-Socket"
	HeaderTmuxPane   = "Parley-Tmux-Pane"
	HeaderNudge      = "Parley-Nudge"
)

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
	// Listen is the TCP address served besides the socket, if any.
	Listen string `json:"listen,omitempty"`
	// Goroutines is the daemon's goroutine count, for leak checks under load.
	Goroutines int `json:"goroutines"`
}

// JoinRequest is POST /api/v1/agents.
type JoinRequest struct {
	Name   string `json:"name"`
	Role   string `json:"role,omitempty"`
	Module string `json:"module,omitempty"`
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
}

// ListAgentsResult is GET /api/v1/agents and the list_agents tool result.
type ListAgentsResult struct {
	Agents []AgentInfo `json:"agents"`
	Count  int         `json:"count"`
}

// StatusRequest is PUT /api/v1/agents/{name}/status.
type StatusRequest struct {
	Status string `json:"status"`
}

// SendRequest is POST /api/v1/messages.
type SendRequest struct {
	To       string            `json:"to"`
	Content  string            `json:"content"`
	Priority string            `json:"priority,omitempty"`
	ReplyTo  string            `json:"reply_to,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Payload  json.RawMessage   `json:"payload,omitempty"`
}

// SendResult is the send_message result (seed 000 plus recipients and thread).
type SendResult struct {
	Status          string   `json:"status" jsonschema:"delivered"`
	MessageID       string   `json:"message_id"`
	RecipientStatus string   `json:"recipient_status" jsonschema:"active, offline or unregistered (of the first recipient); mixed for several"`
	Recipients      []string `json:"recipients"`
	ThreadID        string   `json:"thread_id"`
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
}

// CheckRequest is POST /api/v1/inbox/check.
type CheckRequest struct {
	Limit int `json:"limit,omitempty"`
}

// CheckResult is the check_messages result and GET /api/v1/inbox.
type CheckResult struct {
	Status    string        `json:"status" jsonschema:"messages or empty"`
	Messages  []MessageInfo `json:"messages"`
	Remaining int           `json:"remaining"`
}

// WaitRequest is POST /api/v1/inbox/wait.
type WaitRequest struct {
	Timeout        int    `json:"timeout,omitempty"`
	PriorityFilter string `json:"priority_filter,omitempty"`
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

// BroadcastRequest is POST /api/v1/broadcast.
type BroadcastRequest struct {
	Content  string           `json:"content"`
	Priority string           `json:"priority,omitempty"`
	Filter   *BroadcastFilter `json:"filter,omitempty"`
}

// BroadcastResult is the broadcast_message result.
type BroadcastResult struct {
	Status     string   `json:"status" jsonschema:"sent, partial or no_recipients"`
	SentTo     []string `json:"sent_to"`
	FailedTo   []string `json:"failed_to"`
	TotalSent  int      `json:"total_sent"`
	MessageIDs []string `json:"message_ids"`
}

// GroupRequest is POST /api/v1/groups.
type GroupRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// GroupResult is the create_group and delete_group result.
type GroupResult struct {
	Status string `json:"status"`
	Name   string `json:"name"`
}

// MemberRequest is POST and DELETE /api/v1/groups/{name}/members.
type MemberRequest struct {
	MemberType string `json:"member_type"`
	MemberID   string `json:"member_id"`
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

// HistoryResult is GET /api/v1/messages.
type HistoryResult struct {
	Messages []MessageInfo `json:"messages"`
}

// ErrorBody is the body of every non-2xx JSON API response.
type ErrorBody struct {
	Error struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// ---- conversions ----

// TimeFormat is how times go on the wire.
const TimeFormat = time.RFC3339Nano

// FormatTime renders t, or "" for the zero time.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeFormat)
}

// Message converts a hub message.
func Message(m *hub.Message) MessageInfo {
	return MessageInfo{
		MessageID: m.ID, From: m.From, To: m.To, Content: m.Content,
		Priority: string(m.Priority), Timestamp: FormatTime(m.CreatedAt),
		ReplyTo: m.ReplyTo, ThreadID: m.ThreadID, Metadata: m.Metadata, Payload: m.Payload,
	}
}

// Messages converts a slice, never returning nil.
func Messages(ms []*hub.Message) []MessageInfo {
	out := make([]MessageInfo, len(ms))
	for i, m := range ms {
		out[i] = Message(m)
	}
	return out
}

// Agent converts a hub agent view.
func Agent(a hub.AgentView) AgentInfo {
	st := "offline"
	if a.Active {
		st = "active"
	}
	return AgentInfo{
		Name: a.Name, Role: a.Role, Module: a.Module, Status: st,
		LastSeenAt: FormatTime(a.LastSeen), AgentID: a.ID(), WorkStatus: string(a.Status),
		Workspace: a.Workspace, Host: a.Host,
	}
}

// Group converts a hub group to its detail form.
func Group(g *hub.Group) GroupDetail {
	d := GroupDetail{Name: g.Name, Description: g.Description, CreatedAt: FormatTime(g.CreatedAt),
		CreatedBy: g.CreatedBy, Members: make([]MemberInfo, len(g.Members))}
	for i, m := range g.Members {
		d.Members[i] = MemberInfo{Type: string(m.Type), ID: m.ID}
	}
	return d
}

// ---- errors ----

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
