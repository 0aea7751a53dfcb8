package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/parley-dev/parley/internal/permission"
)

// Decision answers a permission request: the answer a runner gets, and the
// one RequestPermission returns.
type Decision struct {
	Allow        bool
	Message      string
	UpdatedInput json.RawMessage // replaces the tool's input when allowing
	By           string          // who answered: manager, cli, api, timeout...
}

// RequestPermission is the self profile's request_permission: the agent ws/id
// asks whether it may run tool with input. The request goes to the
// permission inbox, where anyone may decide it; it blocks until someone
// does, the permission timeout denies it, or ctx ends (the agent went away).
// An allow carries the input to use; a deny carries a message for the agent.
func (r *Runner) RequestPermission(ctx context.Context, ws, id, tool string, input json.RawMessage, toolUseID string) (*Decision, error) {
	const op = "request_permission"
	r.mu.Lock()
	st, err := r.lookup(op, ws, id)
	if err != nil {
		r.mu.Unlock()
		return nil, notManaged(op, ws, id)
	}
	if st.rec.Exited || r.closed {
		r.mu.Unlock()
		return &Decision{Message: "the agent was killed", By: "daemon"}, nil
	}
	run := 0
	if st.run != nil {
		run = st.run.run.Seq
	}
	r.mu.Unlock()

	req, err := r.inbox.File(ctx, permission.Request{Workspace: ws, Agent: id, Source: permission.SourceManaged, Tool: tool,
		Input: input, ToolUseID: toolUseID, Run: run, ExpiresAt: time.Now().UTC().Add(r.opts.PermissionTimeout)})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	st.perms = append(st.perms, req)
	st.notify()
	r.mu.Unlock()
	r.emit(st, &Event{Run: run, Kind: EvPermission, Tool: tool, ToolUseID: toolUseID, Data: req.Input,
		Text: fmt.Sprintf("%s asks to use %s (request %s)", id, tool, req.ID)})

	// The request ends with the run's context, its expiry or the daemon.
	wctx, cancel := context.WithDeadline(ctx, req.ExpiresAt)
	defer cancel()
	stop := context.AfterFunc(r.ctx, cancel)
	defer stop()
	got, err := r.inbox.Wait(wctx, req.ID)
	if err != nil {
		state, why := permission.Expired, fmt.Sprintf("no answer within %s: denied", r.opts.PermissionTimeout)
		switch {
		case r.ctx.Err() != nil:
			state, why = permission.Abandoned, "the daemon is stopping"
		case ctx.Err() != nil:
			state, why = permission.Abandoned, "the request was abandoned"
		}
		if got, err = r.inbox.Close(context.WithoutCancel(ctx), req.ID, state, why); err != nil {
			got = &permission.Request{ID: req.ID, State: state, Decision: &permission.Decision{Message: why, By: string(state)}}
		}
	}
	r.mu.Lock()
	st.dropPermission(req.ID)
	r.mu.Unlock()

	d := got.Decision
	if d == nil {
		d = &permission.Decision{By: "daemon"}
	}
	by := d.By
	if got.State == permission.Expired {
		by = "timeout"
	}
	ans := &Decision{Message: d.Message, By: by}
	behavior, verb := "deny", "denied"
	if got.State == permission.Allowed {
		ans = &Decision{Allow: true, UpdatedInput: req.Input, By: by}
		if d.UpdatedInput != nil {
			ans.UpdatedInput = d.UpdatedInput
		}
		behavior, verb = "allow", "allowed"
	} else if ans.Message == "" {
		ans.Message = "denied"
	}
	r.emit(st, &Event{Run: run, Kind: EvPermResolved, Tool: tool, ToolUseID: toolUseID,
		Text: fmt.Sprintf("%s %s by %s%s", req.ID, verb, by, ifSet(": ", d.Message, "")),
		Data: mustJSON(map[string]any{"request_id": req.ID, "behavior": behavior, "message": d.Message, "by": by, "updated_input": d.UpdatedInput})})
	return ans, nil
}

// Respond decides the permission request id. ws scopes it to a workspace;
// "" finds it in any (the CLI's parley allow/deny). Requests of any agent,
// managed or not, are in the one inbox; the first decision wins.
//
// A request decided here leaves its agent's pending list before Respond
// returns, so a wait_for_agent that follows sees the agent running again,
// not still waiting on the request it just answered.
func (r *Runner) Respond(ws, id string, d Decision) error {
	req, err := r.inbox.Decide(context.Background(), ws, id, permission.Decision{Allow: d.Allow, Message: d.Message, UpdatedInput: d.UpdatedInput, By: d.By})
	if err != nil {
		return err
	}
	r.mu.Lock()
	if st := r.agents[req.Agent]; st != nil && st.rec.Workspace == req.Workspace {
		st.dropPermission(req.ID)
	}
	r.mu.Unlock()
	return nil
}

// dropPermission removes request id from st's pending list, if there, and
// wakes st's waiters. Call with r.mu held.
func (st *agent) dropPermission(id string) {
	for i, p := range st.perms {
		if p.ID == id {
			st.perms = append(st.perms[:i], st.perms[i+1:]...)
			st.notify()
			return
		}
	}
}

// denyAll ends the pending requests of agent id (of every agent when id is
// ""): their asker is gone or going.
func (r *Runner) denyAll(id, why string) {
	r.mu.Lock()
	var ids []string
	for _, st := range r.agents {
		if id == "" || st.rec.ID == id {
			for _, p := range st.perms {
				ids = append(ids, p.ID)
			}
		}
	}
	r.mu.Unlock()
	for _, rid := range ids {
		if _, err := r.inbox.Close(context.Background(), rid, permission.Abandoned, why); err != nil {
			r.log.Warn("close permission request", "request", rid, "err", err)
		}
	}
}

// Permissions lists pending requests of ws (all workspaces when ws is ""),
// oldest first: those of every agent, managed or not.
func (r *Runner) Permissions(ws string) []Pending {
	reqs, err := r.inbox.Pending(context.Background(), ws)
	if err != nil {
		r.log.Error("list pending permissions", "err", err)
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Pending, 0, len(reqs))
	for _, p := range reqs {
		st := r.agents[p.Agent]
		out = append(out, Pending{Request: p, Managed: st != nil && st.rec.Workspace == p.Workspace})
	}
	return out
}
