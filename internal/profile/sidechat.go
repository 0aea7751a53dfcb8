package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/ops"
)

// The sidechat profile keeps seed 001's tools, parameters and results, so that
// a Sidechat user switches by changing the server command only. A Sidechat
// session is a Parley workspace and its agent IDs are the caller: each tool is
// an operation of ops run for (session, agent), with Sidechat's names.

// sidechatSender signs messages sent by a session that has no agent identity:
// Sidechat messages have no sender, Parley's do.
const sidechatSender = "sidechat"

type (
	scSendIn struct {
		Session string          `json:"session" jsonschema:"session ID: agents that talk to each other share it"`
		To      string          `json:"to" jsonschema:"target agent ID"`
		Message json.RawMessage `json:"message" jsonschema:"message payload (any JSON object)"`
	}
	scSendOut struct {
		MessageID string `json:"message_id"`
	}
	scReceiveIn struct {
		Session string   `json:"session" jsonschema:"session ID"`
		As      string   `json:"as" jsonschema:"agent ID receiving the message"`
		Timeout *float64 `json:"timeout,omitempty" jsonschema:"timeout in milliseconds; if omitted, blocks until a message arrives; 0 returns at once"`
	}
	scReceiveOut struct {
		MessageID string          `json:"message_id"`
		Message   json.RawMessage `json:"message"`
	}
	scAgentIn struct {
		Session string `json:"session" jsonschema:"session ID"`
		Agent   string `json:"agent" jsonschema:"agent ID whose inbox to look at"`
	}
	scHasOut struct {
		HasMessages bool `json:"has_messages"`
		Count       int  `json:"count"`
	}
	scClearOut struct {
		Cleared int `json:"cleared"`
	}
)

// sidechatSummary bounds the text rendering stored as a message's content.
const sidechatSummary = 200

// sidechat is seed 001's tools and its "future" has_messages and clear_messages.
// They name their session and agent in their arguments: not for agent
// tokens (ops.Admin), whose door does not offer this profile either.
func Sidechat(h *Host) Profile {
	return Profile{Tools: []Tool{
		typed(h, "send_message", "Send a message (any JSON object) to an agent's inbox in a session. The agent need not exist yet: its inbox keeps the message until it is received.",
			ops.Define("sidechat send_message", ops.Admin, ops.Send, h.scSend), editInput(func(in *jsonschema.Schema) {
				in.Properties["message"] = &jsonschema.Schema{Type: "object", Description: "message payload (any JSON object)"}
			})),
		// receive_message returns null on timeout, which an output schema
		// cannot say.
		typed(h, "receive_message", "Receive the next message from an agent's inbox, oldest first, and remove it from the inbox. Blocks until a message arrives or the timeout (milliseconds) passes; returns null on timeout. Without a timeout it blocks until a message arrives.",
			ops.Define("sidechat receive_message", ops.Admin, ops.Receive, h.scReceive), noOutputSchema()),
		typed(h, "has_messages", "Report whether an agent's inbox in a session holds messages, without receiving them.", ops.Define("sidechat has_messages", ops.Admin, ops.Unread, h.scHas)),
		typed(h, "clear_messages", "Delete every pending message of an agent's inbox in a session.", ops.Define("sidechat clear_messages", ops.Admin, ops.Clear, h.scClear)),
	}}
}

// scCaller is the caller a Sidechat tool runs for: the agent of the session,
// both named by the arguments. The session is a namespace inside the
// workspace the MCP session is bound to (hub.SidechatWorkspace), never a
// workspace of its own. Agent IDs are plain names: Sidechat has no roles or
// groups, so "@x" is refused rather than expanded.
func scCaller(c *ops.Caller, op, session, what, agent string) (*ops.Caller, error) {
	if err := hub.ValidWorkspace(session); err != nil {
		return nil, hub.Errorf(op, hub.Invalid, "session: %v", err)
	}
	ws := hub.SidechatWorkspace(c.Workspace, session)
	if err := hub.ValidWorkspace(ws); err != nil {
		return nil, hub.Errorf(op, hub.Invalid, "session %q is too long for this workspace: %v", session, err)
	}
	if err := hub.ValidName(what, agent); err != nil {
		return nil, hub.Errorf(op, hub.Invalid, "%v", err)
	}
	// The session's reader too: what a read hands this session is
	// confirmed or put back as for any other read (internal/mcpserver/receipts.go).
	return &ops.Caller{Workspace: ws, Agent: agent, Reader: c.Reader, Call: c.Call, Progress: c.Progress}, nil
}

func (h *Host) scSend(ctx context.Context, c *ops.Caller, in scSendIn) (scSendOut, error) {
	const op = "send_message"
	sc, err := scCaller(c, op, in.Session, "to", in.To)
	if err != nil {
		return scSendOut{}, err
	}
	msg := bytes.TrimSpace(in.Message)
	if len(msg) == 0 || msg[0] != '{' || !json.Valid(msg) {
		return scSendOut{}, hub.Errorf(op, hub.Invalid, "message must be a JSON object")
	}
	from := c.Agent
	if from == "" {
		from = sidechatSender
	}
	res, err := h.Ops.Send(ctx, &ops.Caller{Workspace: sc.Workspace, Agent: from},
		// The inbox of an agent that does not exist yet keeps it (seed 001).
		api.SendRequest{To: in.To, Content: summarize(msg), Payload: json.RawMessage(msg), Metadata: map[string]string{"profile": "sidechat"},
			KeepUnjoined: true})
	if err != nil {
		return scSendOut{}, err
	}
	return scSendOut{MessageID: res.MessageID}, nil
}

// summarize renders a payload as compact JSON cut to sidechatSummary bytes:
// people reading the inbox in the CLI or dashboard see what it is about.
func summarize(payload []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, payload) != nil {
		b.Reset()
		b.Write(payload)
	}
	s := b.String()
	if len(s) <= sidechatSummary {
		return s
	}
	cut := sidechatSummary
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func (h *Host) scReceive(ctx context.Context, c *ops.Caller, in scReceiveIn) (*scReceiveOut, error) {
	const op = "receive_message"
	rc, err := scCaller(c, op, in.Session, "as", in.As)
	if err != nil {
		return nil, err
	}
	timeout := ops.Forever
	if in.Timeout != nil {
		if *in.Timeout < 0 {
			return nil, hub.Errorf(op, hub.Invalid, "timeout must not be negative (milliseconds; omit it to block until a message arrives)")
		}
		timeout = time.Duration(*in.Timeout * float64(time.Millisecond))
		if *in.Timeout > 0 {
			timeout = max(timeout, time.Millisecond)
		}
	}
	m, err := h.Ops.Receive(ctx, rc, timeout)
	if err != nil || m == nil {
		return nil, err
	}
	return &scReceiveOut{MessageID: m.MessageID, Message: sidechatMessage(m)}, nil
}

// sidechatMessage is the object a Sidechat reader gets: the payload as sent,
// or, for a message sent with another profile, its text and sender.
func sidechatMessage(m *api.MessageInfo) json.RawMessage {
	if len(m.Payload) > 0 {
		return m.Payload
	}
	b, _ := json.Marshal(map[string]string{"from": m.From, "content": m.Content, "priority": m.Priority})
	return b
}

func (h *Host) scHas(ctx context.Context, c *ops.Caller, in scAgentIn) (scHasOut, error) {
	ac, err := scCaller(c, "has_messages", in.Session, "agent", in.Agent)
	if err != nil {
		return scHasOut{}, err
	}
	n, err := h.Ops.Unread(ctx, ac)
	if err != nil {
		return scHasOut{}, err
	}
	return scHasOut{HasMessages: n > 0, Count: n}, nil
}

func (h *Host) scClear(ctx context.Context, c *ops.Caller, in scAgentIn) (scClearOut, error) {
	ac, err := scCaller(c, "clear_messages", in.Session, "agent", in.Agent)
	if err != nil {
		return scClearOut{}, err
	}
	n, err := h.Ops.Clear(ctx, ac)
	if err != nil {
		return scClearOut{}, err
	}
	return scClearOut{Cleared: n}, nil
}
