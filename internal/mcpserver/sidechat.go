package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/hub"
)

// The sidechat profile keeps seed 001's tools, parameters and results, so that
// a Sidechat user switches by changing the server command only. A Sidechat
// session is a Parley workspace: sessions stay isolated, and agents in other
// processes and other MCP servers reach each other through the daemon.

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

// sidechat registers seed 001's tools and its "future" has_messages and clear_messages.
func (s *Server) sidechat(srv *mcp.Server) {
	send := &mcp.Tool{Name: "send_message", Description: "Send a message (any JSON object) to an agent's inbox in a session. The agent need not exist yet: its inbox keeps the message until it is received.",
		InputSchema: cachedSchema[scSendIn](), OutputSchema: cachedSchema[scSendOut]()}
	send.InputSchema.(*jsonschema.Schema).Properties["message"] = &jsonschema.Schema{Type: "object", Description: "message payload (any JSON object)"}
	mcp.AddTool(srv, send, s.scSend)
	// receive_message returns null on timeout, which a typed result cannot say
	// (the SDK renders a nil result as the zero object): it has no output schema.
	recvIn := cachedSchema[scReceiveIn]()
	// A plain number, not the ["null","number"] union a pointer infers: some
	// clients reject unions, and an absent timeout already means "forever".
	if t := recvIn.Properties["timeout"]; t != nil {
		t.Type, t.Types = "number", nil
	}
	srv.AddTool(&mcp.Tool{Name: "receive_message", Description: "Receive the next message from an agent's inbox, oldest first, and remove it from the inbox. Blocks until a message arrives or the timeout (milliseconds) passes; returns null on timeout. Without a timeout it blocks until a message arrives.",
		InputSchema: recvIn}, s.scReceive)
	addTool(srv, "has_messages", "Report whether an agent's inbox in a session holds messages, without receiving them.", s.scHas)
	addTool(srv, "clear_messages", "Delete every pending message of an agent's inbox in a session.", s.scClear)
}

func (s *Server) scSend(ctx context.Context, req *mcp.CallToolRequest, in scSendIn) (*mcp.CallToolResult, scSendOut, error) {
	const op = "send_message"
	if err := scCheck(op, in.Session, "to", in.To); err != nil {
		return nil, scSendOut{}, err
	}
	msg := bytes.TrimSpace(in.Message)
	if len(msg) == 0 || msg[0] != '{' || !json.Valid(msg) {
		return nil, scSendOut{}, hub.Errorf(op, hub.Invalid, "message must be a JSON object")
	}
	from := IdentityFrom(ctx).Agent
	if from == "" {
		from = sidechatSender
	}
	res, err := s.hub.Send(ctx, hub.SendRequest{Workspace: in.Session, From: from, To: in.To,
		Content: summarize(msg), Payload: json.RawMessage(msg), Metadata: map[string]string{"profile": "sidechat"}})
	if err != nil {
		return nil, scSendOut{}, err
	}
	return nil, scSendOut{MessageID: res.Message.ID}, nil
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

func (s *Server) scReceive(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	const op = "receive_message"
	var in scReceiveIn
	if err := unmarshalArgs(req, &in); err != nil {
		return toolError(hub.Errorf(op, hub.Invalid, "%v", err)), nil
	}
	if err := scCheck(op, in.Session, "as", in.As); err != nil {
		return toolError(err), nil
	}
	var m *hub.Message
	var err error
	switch {
	case in.Timeout != nil && *in.Timeout < 0:
		return toolError(hub.Errorf(op, hub.Invalid, "timeout must not be negative (milliseconds; omit it to block until a message arrives)")), nil
	case in.Timeout != nil && *in.Timeout == 0:
		var ms []*hub.Message
		ms, _, err = s.hub.Check(ctx, in.Session, in.As, 1)
		if len(ms) > 0 {
			m = ms[0]
		}
	default:
		var total time.Duration // 0: forever
		if in.Timeout != nil {
			total = max(time.Duration(*in.Timeout*float64(time.Millisecond)), time.Millisecond)
		}
		m, err = s.scWait(ctx, req, in.Session, in.As, total)
	}
	if err != nil {
		return toolError(err), nil
	}
	if m == nil {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "null"}}}, nil
	}
	out := scReceiveOut{MessageID: m.ID, Message: sidechatMessage(m)}
	b, err := json.Marshal(out)
	if err != nil {
		return toolError(err), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

// scWait blocks for the next message, forever when total is 0. The hub bounds
// one wait to hub.MaxWaitTimeout, so a longer one is a chain of waits, with
// progress notifications across the whole chain.
func (s *Server) scWait(ctx context.Context, req *mcp.CallToolRequest, ws, agent string, total time.Duration) (*hub.Message, error) {
	start := time.Now()
	token := req.Params.GetProgressToken()
	for {
		chunk := hub.MaxWaitTimeout
		if total > 0 {
			left := total - time.Since(start)
			if left <= 0 {
				return nil, nil
			}
			chunk = min(chunk, left)
		}
		wr := hub.WaitRequest{Workspace: ws, Agent: agent, Timeout: chunk}
		if token != nil {
			wr.ProgressEvery = s.opts.ProgressEvery
			wr.Progress = func(time.Duration) {
				waited := time.Since(start)
				p := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: waited.Seconds(),
					Message: fmt.Sprintf("waiting for a message for %s (%ds)", agent, int(waited.Seconds()))}
				if total > 0 {
					p.Total = total.Seconds()
				}
				if err := req.Session.NotifyProgress(ctx, p); err != nil {
					s.log.Debug("progress notification", "err", err)
				}
			}
		}
		m, err := s.hub.Wait(ctx, wr)
		if err != nil || m != nil {
			return m, err
		}
	}
}

// sidechatMessage is the object a Sidechat reader gets: the payload as sent,
// or, for a message sent with another profile, its text and sender.
func sidechatMessage(m *hub.Message) json.RawMessage {
	if len(m.Payload) > 0 {
		return m.Payload
	}
	b, _ := json.Marshal(map[string]string{"from": m.From, "content": m.Content, "priority": string(m.Priority)})
	return b
}

func (s *Server) scHas(ctx context.Context, req *mcp.CallToolRequest, in scAgentIn) (*mcp.CallToolResult, scHasOut, error) {
	if err := scCheck("has_messages", in.Session, "agent", in.Agent); err != nil {
		return nil, scHasOut{}, err
	}
	n, err := s.hub.Unread(ctx, in.Session, in.Agent)
	if err != nil {
		return nil, scHasOut{}, err
	}
	return nil, scHasOut{HasMessages: n > 0, Count: n}, nil
}

func (s *Server) scClear(ctx context.Context, req *mcp.CallToolRequest, in scAgentIn) (*mcp.CallToolResult, scClearOut, error) {
	if err := scCheck("clear_messages", in.Session, "agent", in.Agent); err != nil {
		return nil, scClearOut{}, err
	}
	n, err := s.hub.ClearInbox(ctx, in.Session, in.Agent)
	if err != nil {
		return nil, scClearOut{}, err
	}
	return nil, scClearOut{Cleared: n}, nil
}

// scCheck validates a session and an agent ID. Agent IDs are plain names:
// Sidechat has no roles or groups, so "@x" is refused rather than expanded.
func scCheck(op, session, what, agent string) error {
	if err := hub.ValidWorkspace(session); err != nil {
		return hub.Errorf(op, hub.Invalid, "session: %v", err)
	}
	if err := hub.ValidName(what, agent); err != nil {
		return hub.Errorf(op, hub.Invalid, "%v", err)
	}
	return nil
}

// unmarshalArgs decodes a raw handler's arguments; none is an empty object.
func unmarshalArgs(req *mcp.CallToolRequest, v any) error {
	args := req.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

// toolError is a tool result with isError, for a raw handler, whose returned
// errors would be protocol errors.
func toolError(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	return &r
}
