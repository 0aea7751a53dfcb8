package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/ops"
)

// The agentmail profile keeps seed 002's four tools and its error codes: bad or
// missing parameters are JSON-RPC -32602 protocol errors and an unknown tool is
// -32601 (malformed JSON, -32700, and invalid requests, -32600, are answered by
// the SDK and the bridge). The SDK would validate arguments against the input
// schema before a typed handler runs and report failures as tool results, so
// these tools have raw handlers that validate their arguments themselves.
//
// The caller is the session's agent: inside tmux, by default, the tmux window
// name, as in AgentMail.

type amReceiveOut struct {
	ID        string `json:"id"`
	From      string `json:"from"`
	To        string `json:"to"`
	Message   string `json:"message"`
	Priority  string `json:"priority"`
	Timestamp string `json:"timestamp"`
}

// agentmail is seed 002's tools, over ops, with raw handlers for its error codes.
func Agentmail(h *Host) Profile {
	str := func(desc string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: desc} }
	obj := func(props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
		if props == nil {
			props = map[string]*jsonschema.Schema{}
		}
		return &jsonschema.Schema{Type: "object", Properties: props, Required: required}
	}
	status := str("ready (idle, can take work), work (busy) or offline")
	status.Enum = []any{"ready", "work", "offline"}
	return Profile{
		Tools: []Tool{
			raw(h, &mcp.Tool{Name: "send", Description: "Send a message to another agent (by name: a tmux window name, or any agent of this workspace). Returns the message id.",
				InputSchema: obj(map[string]*jsonschema.Schema{
					"recipient": str("the receiving agent's name"),
					"message":   str("message text"),
				}, "recipient", "message")}, ops.Send, h.amSend),
			raw(h, &mcp.Tool{Name: "receive", Description: `Read your oldest unread message (higher priorities first) and mark it read; "No unread messages" when there is none.`,
				InputSchema: obj(nil)}, ops.Receive, h.amReceive),
			raw(h, &mcp.Tool{Name: "status", Description: "Set your status: ready, work or offline.",
				InputSchema: obj(map[string]*jsonschema.Schema{"status": status}, "status")}, ops.SetStatus, h.amStatus),
			raw(h, &mcp.Tool{Name: "list-recipients", Description: "List the agents you can send to (every agent of this workspace but you).",
				InputSchema: obj(nil)}, ops.ListAgents, h.amRecipients),
		},
		Middleware: unknownToolNotFound,
	}
}

// unknownToolNotFound turns the SDK's answer to an unknown tool (-32602) into
// seed 002's -32601, method not found.
func unknownToolNotFound(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var je *jsonrpc.Error
		if method == "tools/call" && errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(je.Message, "unknown tool") {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: je.Message}
		}
		return res, err
	}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + fmt.Sprintf(format, args...)}
}

// amArgs decodes the arguments as an object of strings, allowing only the
// named keys and requiring every one of them.
func amArgs(req *mcp.CallToolRequest, keys ...string) (map[string]string, error) {
	raw := bytes.TrimSpace(req.Params.Arguments)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalidParams("arguments must be a JSON object")
	}
	out := map[string]string{}
	for k, v := range m {
		if !slices.Contains(keys, k) {
			if len(keys) == 0 {
				return nil, invalidParams("%s takes no arguments, got %q", req.Params.Name, k)
			}
			return nil, invalidParams("unknown argument %q: want %s", k, strings.Join(keys, ", "))
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, invalidParams("%s must be a string", k)
		}
		out[k] = s
	}
	for _, k := range keys {
		if strings.TrimSpace(out[k]) == "" {
			return nil, invalidParams("missing required argument %q", k)
		}
	}
	return out, nil
}

// amSelf refuses a caller without an agent, with a tool error that says how
// to name it.
func amSelf(c *ops.Caller, op string) *mcp.CallToolResult {
	if c.Agent == "" {
		return toolError(hub.Errorf(op, hub.Invalid, "no agent identity: run inside tmux (the window name is the agent), or pass --agent NAME"))
	}
	return nil
}

// textResult is a tool result with a text rendering and, if v is not nil, a
// structured one.
func textResult(text string, v any) *mcp.CallToolResult {
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if v != nil {
		r.StructuredContent = v
	}
	return r
}

func (h *Host) amSend(ctx context.Context, c *ops.Caller, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := amArgs(req, "recipient", "message")
	if err != nil {
		return nil, err
	}
	rcpt := strings.TrimSpace(args["recipient"])
	if err := hub.ValidName("recipient", rcpt); err != nil {
		return nil, invalidParams("%v", err)
	}
	if r := amSelf(c, "send"); r != nil {
		return r, nil
	}
	res, err := h.Ops.Send(ctx, c, api.SendRequest{To: rcpt, Content: args["message"]})
	if err != nil {
		return toolError(err), nil
	}
	return textResult(fmt.Sprintf("Message #%s sent", res.MessageID), map[string]string{"message_id": res.MessageID}), nil
}

func (h *Host) amReceive(ctx context.Context, c *ops.Caller, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if _, err := amArgs(req); err != nil {
		return nil, err
	}
	if r := amSelf(c, "receive"); r != nil {
		return r, nil
	}
	m, err := h.Ops.Receive(ctx, c, 0)
	if err != nil {
		return toolError(err), nil
	}
	if m == nil {
		return textResult("No unread messages", nil), nil
	}
	out := amReceiveOut{ID: m.MessageID, From: m.From, To: c.Agent, Message: m.Content, Priority: m.Priority, Timestamp: m.Timestamp}
	if out.Message == "" && len(m.Payload) > 0 {
		out.Message = string(m.Payload)
	}
	return textResult(fmt.Sprintf("From: %s\nID: %s\n\n%s", m.From, m.MessageID, out.Message), out), nil
}

func (h *Host) amStatus(ctx context.Context, c *ops.Caller, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := amArgs(req, "status")
	if err != nil {
		return nil, err
	}
	if _, err := hub.ParseStatus(args["status"]); err != nil {
		return nil, invalidParams("%v", err)
	}
	if r := amSelf(c, "status"); r != nil {
		return r, nil
	}
	res, err := h.Ops.SetStatus(ctx, c, api.StatusRequest{Status: args["status"]})
	if err != nil {
		return toolError(err), nil
	}
	return textResult(fmt.Sprintf("Status set to %s", res.Status), map[string]string{"status": res.Status, "agent": res.Agent}), nil
}

func (h *Host) amRecipients(ctx context.Context, c *ops.Caller, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if _, err := amArgs(req); err != nil {
		return nil, err
	}
	res, err := h.Ops.ListAgents(ctx, c, api.ListAgentsRequest{})
	if err != nil {
		return toolError(err), nil
	}
	names := []string{}
	for _, a := range res.Agents {
		if a.Name != c.Agent {
			names = append(names, a.Name)
		}
	}
	text := "No other agents"
	if len(names) > 0 {
		text = strings.Join(names, "\n")
	}
	return textResult(text, map[string]any{"recipients": names}), nil
}
