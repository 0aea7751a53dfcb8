package ops

import (
	"context"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
)

// The dashboard's supervision views (issue 28) and the permission inbox's
// rules and bulk decisions: what people at the dashboard see and do. They
// span the workspace: the admin's (the Unix socket, the admin token, a
// signed-in browser).

// DashboardQueues lists the workspace's tasks not done: waiting, or claimed
// by whom since when, and how often each went back to its queue.
func (o *Ops) DashboardQueues(ctx context.Context, c *Caller, _ api.Empty) (api.QueuesResult, error) {
	ts, err := o.hub.OpenTasks(ctx, c.Workspace)
	if err != nil {
		return api.QueuesResult{}, err
	}
	out := api.QueuesResult{Queues: []api.QueueSummary{}, Tasks: []api.QueueTask{}}
	idx := map[string]int{}
	for _, t := range ts {
		q := api.QueueTask{TaskID: t.MessageID, Queue: t.Recipient, State: "waiting", Deliveries: t.Count,
			Redelivered: t.State == hub.Redelivered || t.Count > 1}
		if m := t.Message; m != nil {
			q.From, q.Priority, q.Preview, q.Since = m.From, string(m.Priority), api.Preview(m.Content), api.FormatTime(m.CreatedAt)
		}
		i, ok := idx[t.Recipient]
		if !ok {
			i = len(out.Queues)
			idx[t.Recipient] = i
			out.Queues = append(out.Queues, api.QueueSummary{Queue: t.Recipient})
		}
		if t.State == hub.Delivered {
			q.State, q.Claimant, q.Since, q.LeaseUntil = "claimed", t.Claimant, api.FormatTime(t.DeliveredAt), api.FormatTime(t.LeaseUntil)
			out.Queues[i].Claimed++
		} else {
			out.Queues[i].Waiting++
		}
		out.Tasks = append(out.Tasks, q)
	}
	return out, nil
}

// DashboardLeases lists the workspace's live reservations, where those of
// different agents overlap, and the conflicts this daemon saw lately.
func (o *Ops) DashboardLeases(ctx context.Context, c *Caller, _ api.Empty) (api.LeasesResult, error) {
	live, err := o.hub.Reservations(ctx, c.Workspace, "")
	if err != nil {
		return api.LeasesResult{}, err
	}
	out := api.LeasesResult{Reservations: reservationInfos(live), Overlaps: []api.LeaseOverlap{}, Conflicts: []api.LeaseConflict{}}
	for _, ov := range hub.Overlaps(live) {
		out.Overlaps = append(out.Overlaps, api.LeaseOverlap{A: ov.A.ID, B: ov.B.ID, Path: ov.Path})
	}
	for _, x := range o.hub.RecentConflicts(c.Workspace) {
		out.Conflicts = append(out.Conflicts, api.LeaseConflict{Agent: x.Agent, Op: x.Op, At: api.FormatTime(x.At),
			Conflicts: reservationConflicts(x.Conflicts)})
	}
	return out, nil
}

// DashboardHealth is the workspace's agents with their health, what its
// managed agents spent against its cap, and the escalations taken.
func (o *Ops) DashboardHealth(ctx context.Context, c *Caller, _ api.Empty) (api.HealthResult, error) {
	as, err := o.ListAgents(ctx, c, api.ListAgentsRequest{})
	if err != nil {
		return api.HealthResult{}, err
	}
	out := api.HealthResult{Agents: as.Agents, StallAfter: o.hub.StallAfter().String(), Escalations: []api.Escalation{}}
	if o.runner != nil {
		out.Spent, out.Cap = o.runner.WorkspaceSpend(c.Workspace)
	}
	if o.ladder != nil {
		for _, e := range o.ladder.Recent(c.Workspace) {
			out.Escalations = append(out.Escalations, api.Escalation{Agent: e.Agent, Case: e.Case, Step: string(e.Step), Text: e.Text,
				Time: api.FormatTime(e.Time), Request: e.Request})
		}
	}
	return out, nil
}

func (o *Ops) permissions(op string) error {
	if o.perms == nil {
		return hub.Errorf(op, hub.Unavailable, "this daemon has no permission inbox")
	}
	return nil
}

// PermissionRules lists the live time-boxed allow rules of the workspace.
func (o *Ops) PermissionRules(ctx context.Context, c *Caller, _ api.Empty) (api.PermissionRulesResult, error) {
	if err := o.permissions("permission rules"); err != nil {
		return api.PermissionRulesResult{}, err
	}
	out := api.PermissionRulesResult{Rules: []api.PermissionRule{}}
	for _, u := range o.perms.Rules(c.Workspace) {
		out.Rules = append(out.Rules, permissionRule(u))
	}
	return out, nil
}

// AddPermissionRule allows a tool (for an agent, matching what the person
// approved: permission.Rule's Match) for some minutes: requests that match
// are allowed when filed. With dry_run it only says what the rule would
// allow (allows), saving nothing.
func (o *Ops) AddPermissionRule(ctx context.Context, c *Caller, in api.PermissionRuleRequest) (api.PermissionRule, error) {
	const op = "add permission rule"
	if err := o.permissions(op); err != nil {
		return api.PermissionRule{}, err
	}
	if in.Minutes < 1 {
		return api.PermissionRule{}, hub.Errorf(op, hub.Invalid, "minutes must be at least 1")
	}
	by := in.By
	if by == "" {
		by = c.Agent
	}
	if by == "" {
		by = "api"
	}
	rule, ttl := permission.Rule{Workspace: c.Workspace, Agent: in.Agent, Tool: in.ToolName, Match: strings.TrimSpace(in.Match), By: by}, time.Duration(in.Minutes)*time.Minute
	if in.DryRun {
		// What the rule would allow, for the person to read first.
		u, err := permission.Check(rule, ttl)
		if err != nil {
			return api.PermissionRule{}, err
		}
		return permissionRule(*u), nil
	}
	u, err := o.perms.AddRule(rule, ttl)
	if err != nil {
		return api.PermissionRule{}, err
	}
	return permissionRule(*u), nil
}

// RemovePermissionRule ends a rule now.
func (o *Ops) RemovePermissionRule(ctx context.Context, c *Caller, in api.RuleIDRequest) (api.SuccessResult, error) {
	if err := o.permissions("remove permission rule"); err != nil {
		return api.SuccessResult{}, err
	}
	if err := o.perms.RemoveRule(c.Workspace, in.ID); err != nil {
		return api.SuccessResult{}, err
	}
	return api.SuccessResult{Success: true}, nil
}

// maxBulk bounds one bulk decision.
const maxBulk = 500

// RespondMany gives one decision to many requests (of any workspace, as a
// single decision's id does); each that was still pending takes it.
func (o *Ops) RespondMany(ctx context.Context, c *Caller, in api.BulkDecision) (api.BulkDecided, error) {
	const op = "respond to permissions"
	if len(in.RequestIDs) == 0 || len(in.RequestIDs) > maxBulk {
		return api.BulkDecided{}, hub.Errorf(op, hub.Invalid, "give 1 to %d request_ids, not %d", maxBulk, len(in.RequestIDs))
	}
	if in.Behavior != "allow" && in.Behavior != "deny" {
		return api.BulkDecided{}, hub.Errorf(op, hub.Invalid, "behavior %q: want allow or deny", in.Behavior)
	}
	out := api.BulkDecided{Decided: []string{}}
	for _, id := range in.RequestIDs {
		_, err := o.Respond(ctx, c, api.PermissionDecision{RequestID: id, Behavior: in.Behavior, Message: in.Message, By: in.By})
		if err != nil {
			if out.Failed == nil {
				out.Failed = map[string]string{}
			}
			out.Failed[id] = err.Error()
			continue
		}
		out.Decided = append(out.Decided, id)
	}
	return out, nil
}

func permissionRule(u permission.Rule) api.PermissionRule {
	return api.PermissionRule{ID: u.ID, Workspace: u.Workspace, Agent: u.Agent, ToolName: u.Tool, Match: u.Match, By: u.By,
		Created: api.FormatTime(u.Created), Expires: api.FormatTime(u.Expires), Uses: u.Uses, Allows: u.Allows()}
}
