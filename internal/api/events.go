package api

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parley-dev/parley/internal/hub"
)

// Event is one message of the GET /api/v1/events WebSocket stream: a change in
// a workspace, as JSON.
type Event struct {
	Kind      string    `json:"kind"`
	Workspace string    `json:"workspace"`
	Time      time.Time `json:"time"`
	// Agent is the agent concerned; for message.sent, the sender.
	Agent  string `json:"agent,omitempty"`
	Role   string `json:"role,omitempty"`
	Status string `json:"status,omitempty"`
	// For message.sent.
	ID         string   `json:"id,omitempty"`
	From       string   `json:"from,omitempty"`
	To         string   `json:"to,omitempty"`
	Recipients []string `json:"recipients,omitempty"`
	Priority   string   `json:"priority,omitempty"`
	Preview    string   `json:"preview,omitempty"`
	ThreadID   string   `json:"thread_id,omitempty"`
	ReplyTo    string   `json:"reply_to,omitempty"`
	// For message.delivered, .read, .acked and .redelivered: Agent is the
	// recipient, ID the message, and this its copy's delivery count.
	DeliveryCount int `json:"delivery_count,omitempty"`
	// For message.handed (a letter through the recipient's door told it),
	// .seen (its session started a turn with that) and .bounced: Agent is
	// the recipient, ID the message; Path the door's wake path, Reason why
	// it bounced.
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason,omitempty"`
	// For message.held: until when the client holds the letter, if it said.
	Until string `json:"until,omitempty"`
	// For door.opened and door.closed: the door (Reason: why it closed).
	Door *DoorInfo `json:"door,omitempty"`
	// For group.changed: the group and what happened to it (created, deleted,
	// member_added, member_removed).
	Group  string `json:"group,omitempty"`
	Change string `json:"change,omitempty"`
	// For agent.renamed: the old name, which stays an alias of Agent.
	Previous string `json:"previous,omitempty"`
	// For run.event and permission.*: a managed agent's new timeline entry
	// (its run, kind, text and tool); for managed.status, Status.
	Run      int    `json:"run,omitempty"`
	Activity string `json:"activity,omitempty"`
	Text     string `json:"text,omitempty"`
	Tool     string `json:"tool,omitempty"`
	// For permission.requested and permission.resolved from the permission
	// inbox (every agent's requests): the request (ID is its id, Preview its
	// input), its state and, once resolved, who decided and why.
	Permission *Permission `json:"permission,omitempty"`
	State      string      `json:"state,omitempty"`
	By         string      `json:"by,omitempty"`
	Message    string      `json:"message,omitempty"`
	// For agent.health and agent.stalled: Agent is the agent, Status its
	// health (working, waiting, idle, stalled, offline). For
	// agent.escalated: Status is the step (nudge, lead, person, cancel,
	// restart), Change the case (stall, permission), ID a permission
	// case's request, Text what was done.
	//
	// For task.claimed, .completed and .released: ID is the task, Recipients
	// its queue, Agent the claimant (for .released, the queue), Status
	// task_completed or task_failed for .completed.
	//
	// For task.at_risk: ID is the task, Recipients its queue, Agent the
	// claimant, Text why its claim may be lost (the daemon it came through
	// has not reached its store for nearly its daemon_timeout). For
	// daemon.store: Status cut, reclaimed or restored, Text what it means.
	//
	// For reservations.changed: the reservations granted, renewed,
	// released, force_released, or reclaimed (ended because the daemon that
	// granted them died), ended (the daemon they were granted through is
	// cut off from its store: take them as ended) or restored (it reached
	// its store again in time); Change says which.
	Reservations []ReservationInfo `json:"reservations,omitempty"`
}

// Kinds of the managed agents' events (the runner's, not the hub's).
const (
	EventRunEvent            = "run.event"            // a new entry of an agent's timeline
	EventManagedStatus       = "managed.status"       // an agent's status changed
	EventPermissionRequested = "permission.requested" // an agent waits for a decision
	EventPermissionResolved  = "permission.resolved"  // a request was answered or expired
)

// PreviewRunes bounds Event.Preview.
const PreviewRunes = 120

// EventKinds are the kinds of events the stream carries.
var EventKinds = []string{
	string(hub.EventAgentJoined), string(hub.EventAgentStatus), string(hub.EventAgentLeft), string(hub.EventAgentRenamed),
	string(hub.EventMessageSent), string(hub.EventGroupChanged),
	string(hub.EventMessageDelivered), string(hub.EventMessageRead),
	string(hub.EventMessageAcked), string(hub.EventMessageRedelivered),
	string(hub.EventMessageHanded), string(hub.EventMessageSeen), string(hub.EventMessageBounced),
	string(hub.EventMessageHeld), string(hub.EventMessageDeclined), string(hub.EventMessageUnconfirmed), string(hub.EventMessageNotLoaded),
	string(hub.EventDoorOpened), string(hub.EventDoorClosed),
	string(hub.EventReservations),
	string(hub.EventTaskClaimed), string(hub.EventTaskCompleted), string(hub.EventTaskReleased), string(hub.EventTaskAtRisk),
	string(hub.EventDaemonStore),
	string(hub.EventAgentHealth), string(hub.EventAgentStalled), string(hub.EventAgentEscalated),
	EventRunEvent, EventManagedStatus, EventPermissionRequested, EventPermissionResolved,
}

// ParseEventKinds reads a comma-separated list of kinds; "" means all (nil).
func ParseEventKinds(s string) (map[string]bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]bool{}
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		known := false
		for _, kk := range EventKinds {
			known = known || kk == k
		}
		if !known {
			return nil, hub.Errorf("events", hub.Invalid, "unknown event kind %q: want some of %s", k, strings.Join(EventKinds, ", "))
		}
		out[k] = true
	}
	return out, nil
}

// EventOf converts a hub event for the wire.
func EventOf(e hub.Event) Event {
	out := Event{Kind: string(e.Kind), Workspace: e.Workspace, Time: e.Time, Agent: e.Agent, Role: e.Role,
		Status: e.Status, Recipients: e.Recipients, Group: e.Group, Change: e.Change, Previous: e.Previous, Text: e.Text}
	if m := e.Message; m != nil {
		out.ID, out.From, out.To, out.Priority = m.ID, m.From, m.To, string(m.Priority)
		out.ThreadID, out.ReplyTo = m.ThreadID, m.ReplyTo
		out.Preview = Preview(m.Content)
	}
	for _, r := range e.Reservations {
		out.Reservations = append(out.Reservations, ReservationOf(r))
	}
	if e.MessageID != "" {
		out.ID, out.DeliveryCount = e.MessageID, e.Count
	}
	out.Path, out.Reason, out.Until = string(e.Via), e.Reason, FormatTime(e.Until)
	if d := e.SessionDoor; d != nil {
		out.Door = &DoorInfo{ID: d.ID, Agent: d.Agent, Kind: string(d.Kind), Session: d.Session, Address: d.Address,
			Host: d.Host, UID: d.UID, OpenedAt: FormatTime(d.OpenedAt), RefreshedAt: FormatTime(d.RefreshedAt),
			ClosedAt: FormatTime(d.ClosedAt), CloseReason: d.CloseReason, ByMCP: d.Owner != ""}
		out.Reason = d.CloseReason
	}
	return out
}

// Preview is the first PreviewRunes characters of content, with "…" when cut.
func Preview(content string) string {
	if utf8.RuneCountInString(content) <= PreviewRunes {
		return content
	}
	n := 0
	for i := range content {
		if n == PreviewRunes {
			return content[:i] + "…"
		}
		n++
	}
	return content
}

// Line renders e as one readable line for a terminal.
func (e Event) Line() string {
	t := e.Time.Local().Format("15:04:05")
	switch hub.EventKind(e.Kind) {
	case hub.EventMessageSent:
		prio := ""
		if e.Priority != "" && e.Priority != string(hub.Normal) {
			prio = " [" + e.Priority + "]"
		}
		to := e.To
		if len(e.Recipients) > 0 && (len(e.Recipients) > 1 || e.Recipients[0] != e.To) {
			to += " (" + strings.Join(e.Recipients, ", ") + ")"
		}
		return fmt.Sprintf("%s %s  %s -> %s%s: %s", t, e.Workspace, e.From, to, prio, oneLine(e.Preview))
	case hub.EventAgentJoined:
		return fmt.Sprintf("%s %s  %s joined as %s", t, e.Workspace, e.Agent, e.Role)
	case hub.EventAgentStatus:
		return fmt.Sprintf("%s %s  %s is %s", t, e.Workspace, e.Agent, e.Status)
	case hub.EventAgentLeft:
		return fmt.Sprintf("%s %s  %s left", t, e.Workspace, e.Agent)
	case hub.EventMessageHanded:
		return fmt.Sprintf("%s %s  %s told of %s through its door (%s)", t, e.Workspace, e.Agent, e.ID, e.Path)
	case hub.EventMessageSeen:
		return fmt.Sprintf("%s %s  %s's session saw %s", t, e.Workspace, e.Agent, e.ID)
	case hub.EventMessageBounced:
		return fmt.Sprintf("%s %s  %s bounced from %s: %s", t, e.Workspace, e.ID, e.Agent, e.Reason)
	case hub.EventMessageHeld:
		return fmt.Sprintf("%s %s  %s's session holds the letter of %s: %s", t, e.Workspace, e.Agent, e.ID, e.Reason)
	case hub.EventMessageDeclined:
		return fmt.Sprintf("%s %s  %s declined by %s's session: %s", t, e.Workspace, e.ID, e.Agent, e.Reason)
	case hub.EventMessageUnconfirmed:
		return fmt.Sprintf("%s %s  %s's session went idle with no word of %s", t, e.Workspace, e.Agent, e.ID)
	case hub.EventMessageNotLoaded:
		return fmt.Sprintf("%s %s  %s queued for %s: %s", t, e.Workspace, e.ID, e.Agent, e.Reason)
	case hub.EventDoorOpened, hub.EventDoorClosed:
		if e.Door == nil {
			break
		}
		if e.Kind == string(hub.EventDoorClosed) {
			return fmt.Sprintf("%s %s  %s's %s door closed: %s", t, e.Workspace, e.Agent, e.Door.Kind, e.Reason)
		}
		return fmt.Sprintf("%s %s  %s's %s door opened (session %s)", t, e.Workspace, e.Agent, e.Door.Kind, e.Door.Session)
	case hub.EventAgentRenamed:
		return fmt.Sprintf("%s %s  %s is now %s (%s)", t, e.Workspace, e.Previous, e.Agent, e.Role)
	case hub.EventGroupChanged:
		return fmt.Sprintf("%s %s  group %s %s", t, e.Workspace, e.Group, strings.ReplaceAll(e.Change, "_", " "))
	case hub.EventReservations:
		paths := make([]string, len(e.Reservations))
		for i, r := range e.Reservations {
			paths[i] = r.Path
		}
		return fmt.Sprintf("%s %s  %s %s %s", t, e.Workspace, e.Agent, strings.ReplaceAll(e.Change, "_", " "), strings.Join(paths, " "))
	case hub.EventTaskClaimed, hub.EventTaskCompleted, hub.EventTaskReleased:
		queue := strings.Join(e.Recipients, ",")
		switch hub.EventKind(e.Kind) {
		case hub.EventTaskClaimed:
			return fmt.Sprintf("%s %s  %s claimed task %s from %s: %s", t, e.Workspace, e.Agent, e.ID, queue, oneLine(e.Preview))
		case hub.EventTaskCompleted:
			return fmt.Sprintf("%s %s  %s finished task %s of %s (%s)", t, e.Workspace, e.Agent, e.ID, queue, strings.TrimPrefix(e.Status, "task_"))
		}
		return fmt.Sprintf("%s %s  task %s went back to %s", t, e.Workspace, e.ID, queue)
	case hub.EventTaskAtRisk:
		return fmt.Sprintf("%s %s  %s's claim on task %s may be lost: %s", t, e.Workspace, e.Agent, e.ID, oneLine(e.Text))
	case hub.EventDaemonStore:
		return fmt.Sprintf("%s %s  daemon %s: %s", t, e.Workspace, e.Status, oneLine(e.Text))
	}
	switch e.Kind {
	case EventManagedStatus:
		return fmt.Sprintf("%s %s  %s is %s", t, e.Workspace, e.Agent, strings.ReplaceAll(e.Status, "_", " "))
	case EventRunEvent, EventPermissionRequested, EventPermissionResolved:
		return fmt.Sprintf("%s %s  %s run %d %s: %s", t, e.Workspace, e.Agent, e.Run, strings.ReplaceAll(e.Activity, "_", " "), oneLine(e.Text))
	}
	return fmt.Sprintf("%s %s  %s %s", t, e.Workspace, e.Kind, e.Agent)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
