package api

import (
	"fmt"
	"strings"
)

// Provenance is what the daemon attests of a message it delivers: who sent
// it, as what, from where, by which door, and whether a person or an agent.
// The daemon sets every field from how the message came in; no sender can
// write one. The message's content, payload and metadata are the sender's own
// words, which anyone can fill with anything (a line saying it comes from
// your user, say): provenance is what to trust about who is speaking.
type Provenance struct {
	// Sender is the sender's name: an agent's name, human:NAME for a
	// person, or "parley" for the daemon's own notices.
	Sender string `json:"sender"`
	// Kind is agent, person or parley.
	Kind string `json:"kind" jsonschema:"agent, person or parley"`
	// Role is the sender's role when it sent (agents only).
	Role      string `json:"role,omitempty"`
	Workspace string `json:"workspace"`
	// Host is the machine of the daemon that took the message.
	Host string `json:"host,omitempty"`
	// Via is the door it came in by: mcp (an agent's MCP session), cli (the
	// command line of the user who runs the daemon), dashboard (a person
	// signed in), tcp (the JSON API over TCP, with a token) or daemon (the
	// daemon itself). Empty for a message stored before Parley recorded it.
	Via string `json:"via,omitempty"`
	// Task, on a task's result, is the task: its claimant sent it with
	// complete_task.
	Task string `json:"task,omitempty"`
}

// The kinds of sender.
const (
	KindAgent  = "agent"
	KindPerson = "person"
	KindParley = "parley"
)

// Attestation says in one line who sent a message, as the daemon attests it:
// "agent bob (role reviewer) in workspace w on host box, via mcp".
func (p Provenance) Attestation() string {
	var b strings.Builder
	switch p.Kind {
	case KindPerson:
		fmt.Fprintf(&b, "person %s", p.Sender)
	case KindParley:
		b.WriteString("Parley's own notice")
		if p.Sender != "" && p.Sender != "parley" {
			fmt.Fprintf(&b, " about agent %s", p.Sender)
		}
	default:
		fmt.Fprintf(&b, "agent %s", p.Sender)
		if p.Role != "" {
			fmt.Fprintf(&b, " (role %s)", p.Role)
		}
	}
	fmt.Fprintf(&b, " in workspace %s", p.Workspace)
	if p.Host != "" {
		fmt.Fprintf(&b, " on host %s", p.Host)
	}
	if p.Via != "" {
		fmt.Fprintf(&b, ", via %s", p.Via)
	}
	if p.Task != "" {
		fmt.Fprintf(&b, ", the result of task %s", p.Task)
	}
	return b.String()
}
