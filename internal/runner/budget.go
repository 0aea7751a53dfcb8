package runner

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// Budgets (issue 28): what a managed agent may spend, in turns, in the cost
// its provider reports, and in the time its turns run; what all of a
// workspace's managed agents may spend together; and how many agents one
// managed agent may launch. An agent that reaches a bound stops: at the end
// of the turn that reached it (turns, cost: a provider reports its cost as
// a turn ends), or at once (time), and takes no more turns. Its timeline
// says why, and its manager is told.

// Budget bounds one agent; a zero field bounds nothing.
type Budget struct {
	MaxTurns    int           `json:"max_turns,omitempty"`
	MaxCostUSD  float64       `json:"max_cost_usd,omitempty"`
	MaxDuration time.Duration `json:"max_duration,omitempty"`
}

// IsZero reports whether b bounds nothing.
func (b Budget) IsZero() bool { return b == Budget{} }

// or fills b's unset bounds from def.
func (b Budget) or(def Budget) Budget {
	if b.MaxTurns == 0 {
		b.MaxTurns = def.MaxTurns
	}
	if b.MaxCostUSD == 0 {
		b.MaxCostUSD = def.MaxCostUSD
	}
	if b.MaxDuration == 0 {
		b.MaxDuration = def.MaxDuration
	}
	return b
}

// Check refuses a budget with a negative bound.
func (b Budget) Check() error {
	if b.MaxTurns < 0 || b.MaxCostUSD < 0 || b.MaxDuration < 0 {
		return hub.Errorf("create_agent", hub.Invalid, "a budget must not be negative: max_turns %d, max_cost %g, max_duration %s", b.MaxTurns, b.MaxCostUSD, b.MaxDuration)
	}
	return nil
}

// DefaultMaxLaunches is how many agents one managed agent may create.
const DefaultMaxLaunches = 10

// EvBudgetStopped is the timeline event of an agent its budget stopped.
const EvBudgetStopped = "budget_stopped"

// stopBudget is why a run is being stopped when its agent ran out of time.
const stopBudget = "budget"

// spent says which bound of st's budget, or of its workspace's spend cap,
// it has reached: "" if none. Call with r.mu held.
func (r *Runner) spent(st *agent) string {
	a := &st.rec
	b := a.Budget
	switch {
	case b.MaxTurns > 0 && a.Turns >= b.MaxTurns:
		return fmt.Sprintf("its budget of %d turns is spent (%d turns run)", b.MaxTurns, a.Turns)
	case b.MaxCostUSD > 0 && a.CostUSD >= b.MaxCostUSD:
		return fmt.Sprintf("its budget of %s is spent (%s reported by %s)", usd(b.MaxCostUSD), usd(a.CostUSD), a.Provider)
	case b.MaxDuration > 0 && a.Busy >= b.MaxDuration:
		return fmt.Sprintf("its budget of %s of running time is spent (%s run)", b.MaxDuration, a.Busy.Round(time.Second))
	}
	if limit := r.opts.WorkspaceMaxCost; limit > 0 {
		if total := r.workspaceSpend(a.Workspace); total >= limit {
			return fmt.Sprintf("workspace %s's spend cap of %s is reached (%s by its managed agents)", a.Workspace, usd(limit), usd(total))
		}
	}
	return ""
}

// workspaceSpend is what the managed agents of ws have cost. Call with r.mu
// held.
func (r *Runner) workspaceSpend(ws string) float64 {
	var total float64
	for _, st := range r.agents {
		if st.rec.Workspace == ws && !st.rec.CreatedAt.IsZero() {
			total += st.rec.CostUSD
		}
	}
	return total
}

// WorkspaceSpend is what the managed agents of ws have cost, and the cap
// (0: none).
func (r *Runner) WorkspaceSpend(ws string) (spent, limit float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.workspaceSpend(ws), r.opts.WorkspaceMaxCost
}

// checkLaunch refuses a create when the workspace's spend cap is reached,
// or when the creator is a managed agent that launched its share. Call
// with r.mu held.
func (r *Runner) checkLaunch(ws, owner string) error {
	const op = "create_agent"
	if limit := r.opts.WorkspaceMaxCost; limit > 0 {
		if total := r.workspaceSpend(ws); total >= limit {
			return hub.Errorf(op, hub.Forbidden, "workspace %s's spend cap of %s is reached (%s by its managed agents): no new agents (raise workspace_max_cost in [budgets] of config.toml)", ws, usd(limit), usd(total))
		}
	}
	creator := r.agents[owner]
	if owner == "" || creator == nil || creator.rec.Workspace != ws || creator.rec.CreatedAt.IsZero() {
		return nil // a person, or an agent Parley did not launch
	}
	limit := r.opts.MaxLaunches
	if limit == 0 {
		limit = DefaultMaxLaunches
	}
	n := 0
	for _, st := range r.agents {
		if st.rec.Workspace == ws && st.rec.Owner == owner && !st.rec.CreatedAt.IsZero() {
			n++
		}
	}
	if n >= limit {
		return hub.Errorf(op, hub.Forbidden, "managed agent %s has launched %d agents, its share (max_launches = %d in [budgets] of config.toml): finish with those first", owner, n, limit)
	}
	return nil
}

// stopSpent stops st if it has reached a bound: it takes no more turns, its
// queue is dropped, and (after the lock) its session ends, its timeline
// says why and its manager is told. It reports whether it stopped st. Call
// with r.mu held, with no run of st in progress.
func (r *Runner) stopSpent(st *agent) bool {
	why := r.spent(st)
	if why == "" || st.rec.Exited {
		return false
	}
	st.rec.Exited = true
	st.rec.StopReason = why
	st.rec.UpdatedAt = time.Now().UTC()
	dropped := st.queue
	st.queue = nil
	for _, q := range dropped {
		q.State, q.EndedAt, q.Error = RunCancelled, time.Now().UTC(), "the agent's budget stopped it: "+why
		st.finished = max(st.finished, q.Seq)
	}
	st.notify()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.afterStop(st, why, dropped)
	}()
	return true
}

// afterStop finishes stopping st for why, off the lock.
func (r *Runner) afterStop(st *agent, why string, dropped []*Run) {
	text := "stopped: " + why + ". It takes no more turns; its worktree and branch stay. Create a new agent to go on."
	r.emit(st, &Event{Kind: EvBudgetStopped, Text: text, IsError: true, Data: mustJSON(map[string]string{"reason": why})})
	r.closeSession(st)
	for _, q := range dropped {
		r.saveRun(st, q)
	}
	r.saveAgent(st)
	r.mu.Lock()
	ws, id, owner := st.rec.Workspace, st.rec.ID, st.rec.Owner
	r.mu.Unlock()
	r.log.Warn("managed agent stopped by its budget", "agent", id, "why", why)
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	if err := r.hub.SetStatus(ctx, ws, id, hub.StatusOffline); err != nil && !hub.IsNotFound(err) {
		r.log.Warn("set stopped agent offline", "agent", id, "err", err)
	}
	if owner == "" {
		owner = r.opts.Owner
	}
	if owner == "" {
		return
	}
	_, err := r.hub.Send(ctx, hub.SendRequest{Workspace: ws, From: id, To: owner, Priority: string(hub.High), Door: hub.DoorDaemon,
		Content:  fmt.Sprintf("Parley stopped managed agent %s: %s. It takes no more turns; its worktree and branch stay.", id, why),
		Metadata: map[string]string{"kind": "budget_stopped", "parley.budget": why}})
	if err != nil {
		r.log.Warn("budget stop: tell the manager", "agent", id, "owner", owner, "err", err)
	}
}

// startClock counts a's run against st's time budget: when what is left of
// it runs out during the run, the run is stopped. Call with r.mu held.
func (r *Runner) startClock(st *agent, a *active) {
	b := st.rec.Budget
	if b.MaxDuration <= 0 {
		return
	}
	left := b.MaxDuration - st.rec.Busy
	a.clock = time.AfterFunc(max(left, 0), func() {
		r.mu.Lock()
		if st.run != a || a.stop != "" {
			r.mu.Unlock()
			return
		}
		a.stop = stopBudget
		r.mu.Unlock()
		r.denyAll(st.rec.ID, "the agent's time budget ran out")
		r.stopProcess(a, r.opts.CancelGrace)
	})
}

// turnCost is a turn's cost as a provider's result line reports it: a
// total since the process started (Claude Code's total_cost_usd, less base,
// what the process had spent before this turn), or the turn's own
// (cost_usd). ok is false when the line reports none; why says why a cost
// it reports is not counted: a cost is a finite amount, never negative, and
// a total never below what was spent before (it would lift the budgets).
func turnCost(total, own *float64, base float64) (cost float64, ok bool, why string) {
	v, what := own, "cost_usd"
	if total != nil {
		v, what = total, "total_cost_usd"
	}
	switch {
	case v == nil:
		return 0, false, ""
	case math.IsNaN(*v) || math.IsInf(*v, 0):
		return 0, false, fmt.Sprintf("%s is %v", what, *v)
	case *v < 0:
		return 0, false, fmt.Sprintf("%s is negative (%v)", what, *v)
	case total != nil && *v < base:
		return 0, false, fmt.Sprintf("total_cost_usd %v is below the %v the process had spent before this turn", *v, base)
	case total != nil:
		return *v - base, true, ""
	}
	return *v, true, ""
}

// budgetLine renders a budget for people: "2 turns, $1.00, 30m0s".
func budgetLine(b Budget) string {
	var parts []string
	if b.MaxTurns > 0 {
		parts = append(parts, fmt.Sprintf("%d turns", b.MaxTurns))
	}
	if b.MaxCostUSD > 0 {
		parts = append(parts, usd(b.MaxCostUSD))
	}
	if b.MaxDuration > 0 {
		parts = append(parts, b.MaxDuration.String())
	}
	return strings.Join(parts, ", ")
}

// usd renders an amount of dollars as exactly as it was given, up to
// hundredths of a cent, or of a millionth of a cent below a cent: "$5",
// "$0.0123", "$0.000001".
func usd(v float64) string {
	if v >= 0.01 || v == 0 {
		return "$" + strconv.FormatFloat(math.Round(v*10000)/10000, 'f', -1, 64)
	}
	return "$" + strconv.FormatFloat(math.Round(v*1e8)/1e8, 'f', -1, 64)
}
