package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// pendingPerm is a permission request waiting for an answer.
type pendingPerm struct {
	p      api.Permission
	st     *agent
	answer chan Decision // buffered; sent once, by whoever removed the request
}

// Decision answers a permission request.
type Decision struct {
	Allow        bool
	Message      string
	UpdatedInput json.RawMessage // replaces the tool's input when allowing
	By           string          // who answered: manager, cli, api, timeout...
}

// ParseDecision reads a wire decision.
func ParseDecision(d api.PermissionDecision, by string) (Decision, error) {
	out := Decision{Message: d.Message, By: by}
	switch d.Behavior {
	case "allow":
		out.Allow = true
	case "deny":
	default:
		return out, hub.Errorf("respond_to_permission", hub.Invalid, "invalid behavior %q: want allow or deny", d.Behavior)
	}
	if len(d.UpdatedInput) > 0 && string(d.UpdatedInput) != "null" {
		if !out.Allow {
			return out, hub.Errorf("respond_to_permission", hub.Invalid, "updated_input goes with allow, not deny")
		}
		var obj map[string]any
		if err := json.Unmarshal(d.UpdatedInput, &obj); err != nil || obj == nil {
			return out, hub.Errorf("respond_to_permission", hub.Invalid, "updated_input must be a JSON object (the tool's input)")
		}
		out.UpdatedInput = d.UpdatedInput
	}
	return out, nil
}

// RequestPermission is the self profile's request_permission: the agent ws/id
// asks whether it may run tool with input. It blocks until someone answers,
// the permission timeout denies it, or ctx ends (the agent went away).
func (r *Runner) RequestPermission(ctx context.Context, ws, id, tool string, input json.RawMessage, toolUseID string) (*api.PermissionAnswer, error) {
	const op = "request_permission"
	if strings.TrimSpace(tool) == "" {
		return nil, hub.Errorf(op, hub.Invalid, "tool_name must not be empty")
	}
	input = bytes.TrimSpace(input)
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	if !json.Valid(input) {
		return nil, hub.Errorf(op, hub.Invalid, "input must be JSON")
	}
	r.mu.Lock()
	st, err := r.lookup(op, ws, id)
	if err != nil {
		r.mu.Unlock()
		return nil, notManaged(op, ws, id)
	}
	if st.rec.Exited || r.closed {
		r.mu.Unlock()
		return &api.PermissionAnswer{Behavior: "deny", Message: "the agent was killed"}, nil
	}
	now := time.Now().UTC()
	pp := &pendingPerm{st: st, answer: make(chan Decision, 1), p: api.Permission{
		RequestID: "perm-" + strings.TrimPrefix(newID(), "ag-"), AgentID: id, Workspace: ws, ToolName: tool, Input: input,
		ToolUseID: toolUseID, RequestedAt: now, ExpiresAt: now.Add(r.opts.PermissionTimeout),
	}}
	if st.run != nil {
		pp.p.Run = st.run.run.Seq
	}
	r.perms[pp.p.RequestID] = pp
	st.perms = append(st.perms, pp)
	st.notify()
	r.mu.Unlock()
	r.emit(st, &Event{Run: pp.p.Run, Kind: EvPermission, Tool: tool, ToolUseID: toolUseID, Data: input,
		Text: fmt.Sprintf("%s asks to use %s (request %s)", id, tool, pp.p.RequestID)})
	r.log.Info("permission requested", "agent", id, "request", pp.p.RequestID, "tool", tool)

	timer := time.NewTimer(r.opts.PermissionTimeout)
	defer timer.Stop()
	var d Decision
	select {
	case d = <-pp.answer:
	case <-timer.C:
		d = r.expire(pp, Decision{Message: fmt.Sprintf("no answer within %s: denied", r.opts.PermissionTimeout), By: "timeout"})
	case <-ctx.Done():
		d = r.expire(pp, Decision{Message: "the request was abandoned", By: "agent"})
	case <-r.ctx.Done():
		d = r.expire(pp, Decision{Message: "the daemon is stopping", By: "daemon"})
	}
	ans := &api.PermissionAnswer{Behavior: "deny", Message: d.Message}
	if d.Allow {
		ans = &api.PermissionAnswer{Behavior: "allow", UpdatedInput: input}
		if d.UpdatedInput != nil {
			ans.UpdatedInput = d.UpdatedInput
		}
	} else if ans.Message == "" {
		ans.Message = "denied"
	}
	r.emit(st, &Event{Run: pp.p.Run, Kind: EvPermResolved, Tool: tool, ToolUseID: toolUseID,
		Text: fmt.Sprintf("%s %s by %s%s", pp.p.RequestID, map[string]string{"allow": "allowed", "deny": "denied"}[ans.Behavior], d.By, ifSet(": ", d.Message, "")),
		Data: mustJSON(map[string]any{"request_id": pp.p.RequestID, "behavior": ans.Behavior, "message": d.Message, "by": d.By, "updated_input": d.UpdatedInput})})
	return ans, nil
}

// expire removes pp unanswered and returns fallback, or the answer that won
// the race to it.
func (r *Runner) expire(pp *pendingPerm, fallback Decision) Decision {
	if r.take(pp.p.RequestID, "") != nil {
		return fallback
	}
	return <-pp.answer
}

// take removes the pending request id (of workspace ws, or any when ws is "")
// and returns it; nil when it is not pending.
func (r *Runner) take(id, ws string) *pendingPerm {
	r.mu.Lock()
	defer r.mu.Unlock()
	pp := r.perms[id]
	if pp == nil || (ws != "" && pp.p.Workspace != ws) {
		return nil
	}
	delete(r.perms, id)
	st := pp.st
	for i, q := range st.perms {
		if q == pp {
			st.perms = append(st.perms[:i], st.perms[i+1:]...)
			break
		}
	}
	st.notify()
	return pp
}

// Respond answers the pending request id. ws scopes it to a workspace; ""
// finds it in any (the CLI's parley allow/deny).
func (r *Runner) Respond(ws, id string, d Decision) error {
	pp := r.take(id, ws)
	if pp == nil {
		where := ""
		if ws != "" {
			where = " in workspace " + ws
		}
		return hub.Errorf("respond_to_permission", hub.NotFound, "no pending permission request %q%s: it was answered, timed out, or its run ended (see list_pending_permissions)", id, where)
	}
	r.log.Info("permission answered", "agent", pp.p.AgentID, "request", id, "allow", d.Allow, "by", d.By)
	pp.answer <- d
	return nil
}

// denyAll denies the pending requests of agent id (of every agent when id
// is "").
func (r *Runner) denyAll(id, why string) {
	r.mu.Lock()
	var ids []string
	for rid, pp := range r.perms {
		if id == "" || pp.p.AgentID == id {
			ids = append(ids, rid)
		}
	}
	r.mu.Unlock()
	for _, rid := range ids {
		if pp := r.take(rid, ""); pp != nil {
			pp.answer <- Decision{Message: why, By: "daemon"}
		}
	}
}

// Permissions lists pending requests of ws (all workspaces when ws is ""),
// oldest first.
func (r *Runner) Permissions(ws string) []api.PendingPermission {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []api.PendingPermission{}
	for _, pp := range r.perms {
		if ws != "" && pp.p.Workspace != ws {
			continue
		}
		out = append(out, api.PendingPermission{AgentID: pp.p.AgentID, Status: string(pp.st.status()), Request: pp.p})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Request.RequestedAt.Before(out[j].Request.RequestedAt) ||
			out[i].Request.RequestedAt.Equal(out[j].Request.RequestedAt) && out[i].Request.RequestID < out[j].Request.RequestID
	})
	return out
}
