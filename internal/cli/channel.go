package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
)

// Claude Code's channel protocol (research preview; its channels reference).
const (
	capChannel           = "claude/channel"
	capChannelPermission = "claude/channel/permission"
	methodChannel        = "notifications/claude/channel"
	methodPermRequest    = "notifications/claude/channel/permission_request"
	methodPermVerdict    = "notifications/claude/channel/permission"
)

// channelInstructions tell the model what a channel message is and how to
// answer it; Claude Code adds a server's instructions to the system prompt.
const channelInstructions = `Messages from other agents arrive from Parley as <channel source="parley" from="..." message_id="..." priority="...">. They are already marked read. Act on them by priority (critical now, high at the next breakpoint), and reply with the parley send_message tool, reply_to set to the message_id.`

// channel is the bridge extension of `mcp serve --channel`: it declares
// Claude Code's channel capabilities, pushes each message for the agent as a
// notifications/claude/channel as soon as it arrives, and relays Claude
// Code's permission prompts into Parley's permission inbox, sending the
// first decision back.
type channel struct {
	c   *client.Client // as the agent
	log *slog.Logger
}

// InitResult adds the channel capabilities and instructions to the server's
// initialize result.
func (ch *channel) InitResult(msg []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m["result"] == nil {
		return msg
	}
	var res map[string]any
	if json.Unmarshal(m["result"], &res) != nil {
		return msg
	}
	caps, _ := res["capabilities"].(map[string]any)
	if caps == nil {
		caps = map[string]any{}
		res["capabilities"] = caps
	}
	exp, _ := caps["experimental"].(map[string]any)
	if exp == nil {
		exp = map[string]any{}
		caps["experimental"] = exp
	}
	exp[capChannel], exp[capChannelPermission] = map[string]any{}, map[string]any{}
	if s, _ := res["instructions"].(string); s != "" {
		res["instructions"] = s + "\n\n" + channelInstructions
	} else {
		res["instructions"] = channelInstructions
	}
	b, err := json.Marshal(res)
	if err != nil {
		return msg
	}
	m["result"] = b
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// Push renders a message the daemon pushed on the bridge's stream session
// (api.MethodMessage): leased to the session, confirmed by the bridge
// once written to Claude Code, put back when the session ends first.
func (ch *channel) Push(params json.RawMessage) []byte {
	var p struct {
		Message *api.MessageInfo `json:"message"`
	}
	if json.Unmarshal(params, &p) != nil || p.Message == nil {
		ch.log.Warn("channel: malformed pushed message", "bytes", len(params))
		return nil
	}
	return channelNotification(p.Message)
}

// channelNotification renders a message as Claude Code's channel event:
// content, and meta keys that become attributes of the <channel> tag.
func channelNotification(m *api.MessageInfo) []byte {
	meta := map[string]string{"from": m.From, "message_id": m.MessageID, "priority": m.Priority}
	if m.ThreadID != "" {
		meta["thread_id"] = m.ThreadID
	}
	if m.ReplyTo != "" {
		meta["reply_to"] = m.ReplyTo
	}
	if m.To != "" {
		meta["to"] = m.To
	}
	if m.Redelivered {
		// Pushed before without being confirmed: the agent may have it.
		meta["redelivered"], meta["delivery_count"] = "true", strconv.Itoa(m.DeliveryCount)
	}
	// Who sent it, as Parley attests (not as the content says): the
	// <channel> tag carries it beside the sender's words.
	p := m.Provenance
	for k, v := range map[string]string{"sender_kind": p.Kind, "sender_role": p.Role, "workspace": p.Workspace,
		"host": p.Host, "via": p.Via, "task": p.Task} {
		if v != "" {
			meta[k] = v
		}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": methodChannel,
		"params": map[string]any{"content": m.Content, "meta": meta}})
	return b
}

// Intercept takes Claude Code's relayed permission prompts.
func (ch *channel) Intercept(ctx context.Context, method string, raw []byte, write func([]byte) error) bool {
	if method != methodPermRequest {
		return false
	}
	var n struct {
		Params struct {
			RequestID    string `json:"request_id"`
			ToolName     string `json:"tool_name"`
			Description  string `json:"description"`
			InputPreview string `json:"input_preview"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &n) != nil || n.Params.RequestID == "" || n.Params.ToolName == "" {
		ch.log.Warn("channel: malformed permission request", "bytes", len(raw))
		return true
	}
	if ctx.Err() != nil {
		return true
	}
	// It ends with ctx: when the bridge ends, the request is abandoned.
	go func() {
		p := n.Params
		input, _ := json.Marshal(map[string]string{"input_preview": p.InputPreview})
		// Claude Code shows its own dialog meanwhile: whichever answer comes
		// first wins there; Parley's inbox waits as long as it may.
		got, err := ch.c.AskPermission(ctx, api.AskPermissionRequest{ToolName: p.ToolName, Input: input, ToolUseID: p.RequestID,
			Description: p.Description, Source: "channel", Wait: int(maxPermissionRelay / time.Second)})
		if err != nil {
			if ctx.Err() == nil {
				ch.log.Warn("channel: relay permission request", "err", err)
			}
			return
		}
		if got.Behavior == "" {
			return
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": methodPermVerdict,
			"params": map[string]string{"request_id": p.RequestID, "behavior": got.Behavior}})
		write(b)
	}()
	return true
}

// maxPermissionRelay is how long a relayed prompt waits in the inbox.
const maxPermissionRelay = 10 * time.Minute
