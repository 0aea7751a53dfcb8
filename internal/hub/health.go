package hub

import (
	"context"
	"time"
)

// Health is what an agent is doing, as far as the daemon can tell from what
// it sees of it: its client's hooks (a prompt, a tool call, a stop), its
// tool calls to Parley, its blocked waits, a managed agent's stream, and its
// permission requests.
type Health string

// The healths, from the most to the least telling.
const (
	// HealthWaiting: blocked in a wait (for a message, a reply, a task) or
	// on a person (a permission request nobody has answered yet).
	HealthWaiting Health = "waiting"
	// HealthWorking: in a turn that shows progress, or in a tool call.
	HealthWorking Health = "working"
	// HealthStalled: in a turn, but with no progress for the stall time,
	// while not blocked in a wait and with no tool call in flight.
	HealthStalled Health = "stalled"
	// HealthIdle: reachable, between turns.
	HealthIdle Health = "idle"
	// HealthOffline: not seen lately, and no turn in progress.
	HealthOffline Health = "offline"
)

// DefaultStallAfter is how long a turn may show no progress before its agent
// is stalled.
const DefaultStallAfter = 10 * time.Minute

// Activity is a sign of what an agent is doing, reported by its client's
// hooks, by the runner for a managed agent, or by the permission inbox.
type Activity string

// The activities.
const (
	ActSessionStart Activity = "session_start" // a client session began: idle
	ActTurnStart    Activity = "turn_start"    // a prompt was submitted
	ActToolStart    Activity = "tool_start"    // a tool call began (Tool names it)
	ActToolEnd      Activity = "tool_end"      // a tool call ended
	ActProgress     Activity = "progress"      // any other sign of life in a turn (output, a compaction)
	ActTurnEnd      Activity = "turn_end"      // the turn ended: idle
	ActSessionEnd   Activity = "session_end"   // the client session ended: offline
	ActAsk          Activity = "ask"           // a permission request waits for a person (Tool: its id)
	ActAnswered     Activity = "answered"      // that request was answered, expired or abandoned
	// ActResident: the agent is reachable between turns without a session
	// of its own (a managed agent, which the daemon wakes); ActGone undoes it.
	ActResident Activity = "resident"
	ActGone     Activity = "gone"
)

// ValidActivity checks an activity's name, for what clients report.
func ValidActivity(a Activity) error {
	switch a {
	case ActSessionStart, ActTurnStart, ActToolStart, ActToolEnd, ActProgress, ActTurnEnd, ActSessionEnd:
		return nil
	}
	return Errorf("", Invalid, "invalid activity %q: want session_start, turn_start, tool_start, tool_end, progress, turn_end or session_end", a)
}

// Health events: Agent is the agent, Status its new health, Time when it
// changed. agent.stalled comes once per stall, beside the agent.health that
// says stalled.
const (
	EventAgentHealth  EventKind = "agent.health"
	EventAgentStalled EventKind = "agent.stalled"
	// EventAgentEscalated is a step of the escalation ladder (package
	// supervise): Status is the step, Change the case (stall or
	// permission), MessageID a permission case's request, Text what was
	// done.
	EventAgentEscalated EventKind = "agent.escalated"
)

// toolGiveUp bounds how long a tool call stays in flight without an end: a
// client that crashed mid-call sends none.
const toolGiveUp = 2 * time.Hour

// activity is what the hub knows of an agent's doing. Guarded by Hub.actMu.
type activity struct {
	turn     bool
	progress time.Time            // the latest sign of progress
	tools    map[string]time.Time // hook-reported tool calls in flight, by id
	calls    int                  // tool calls to Parley in flight
	blocked  int                  // waits blocked in this hub
	asks     map[string]bool      // permission requests pending
	resident bool

	health Health    // as last announced
	since  time.Time // when it became that
}

// HealthView is an agent's health and what it rests on.
type HealthView struct {
	Health Health
	// Since is when the agent entered it, where the hub saw it; zero if it
	// saw nothing (an agent whose health comes from presence alone).
	Since time.Time
	// Progress is the latest sign of progress seen; zero if none.
	Progress time.Time
	InTurn   bool
	Tools    int // tool calls in flight
}

// NoteActivity records what the agent is doing. id names the tool call of
// ActToolStart and ActToolEnd (a tool_use id; "" counts as one anonymous
// call) and the request of ActAsk and ActAnswered. A change of health is
// announced at once.
func (h *Hub) NoteActivity(ws, name string, act Activity, id string) {
	if name == "" {
		return
	}
	now := h.now().UTC()
	k := inboxKey{ws, name}
	h.actMu.Lock()
	a := h.acts[k]
	if a == nil {
		a = &activity{}
		h.acts[k] = a
	}
	switch act {
	case ActSessionStart, ActTurnEnd:
		a.turn = false
		clear(a.tools)
	case ActTurnStart:
		a.turn = true
		clear(a.tools)
	case ActToolStart:
		a.turn = true // a tool call is part of a turn, whichever hooks came before
		if a.tools == nil {
			a.tools = map[string]time.Time{}
		}
		a.tools[id] = now
	case ActToolEnd:
		delete(a.tools, id)
	case ActSessionEnd:
		a.turn = false
		clear(a.tools)
		clear(a.asks)
	case ActAsk:
		if a.asks == nil {
			a.asks = map[string]bool{}
		}
		a.asks[id] = true
	case ActAnswered:
		delete(a.asks, id)
	case ActResident:
		a.resident = true
	case ActGone:
		a.resident = false
		a.turn = false
		clear(a.tools)
	}
	a.progress = now
	h.actMu.Unlock()
	h.announceHealth(k, now)
}

// toolCall counts a tool call of the agent to Parley as in flight until the
// returned function is called.
func (h *Hub) ToolCall(ws, name string) (done func()) {
	if name == "" {
		return func() {}
	}
	k := inboxKey{ws, name}
	h.bump(k, func(a *activity) { a.calls++ })
	return func() { h.bump(k, func(a *activity) { a.calls-- }) }
}

// bump changes the agent's activity, counts it as progress, and announces a
// change of health.
func (h *Hub) bump(k inboxKey, fn func(*activity)) {
	now := h.now().UTC()
	h.actMu.Lock()
	a := h.acts[k]
	if a == nil {
		a = &activity{}
		h.acts[k] = a
	}
	fn(a)
	a.progress = now
	h.actMu.Unlock()
	h.announceHealth(k, now)
}

// left forgets the activity of an agent whose last session ended: its
// client is gone, and with it its turn.
func (h *Hub) leftActivity(k inboxKey) {
	h.actMu.Lock()
	if a := h.acts[k]; a != nil {
		a.turn = false
		clear(a.tools)
	}
	h.actMu.Unlock()
	h.announceHealth(k, h.now().UTC())
}

// StallAfter is how long a turn may show no progress before its agent is
// stalled.
func (h *Hub) StallAfter() time.Duration { return h.stallAfter }

// healthOf is the health of an agent with activity act (nil: none seen)
// and presence active (asked only when it matters). Call with actMu held.
func (h *Hub) healthOf(act *activity, active func() bool, now time.Time) (Health, time.Time) {
	if act == nil {
		if active() {
			return HealthIdle, time.Time{}
		}
		return HealthOffline, time.Time{}
	}
	tools := 0
	for _, at := range act.tools {
		if now.Sub(at) < toolGiveUp {
			tools++
		}
	}
	switch {
	case act.blocked > 0 || len(act.asks) > 0:
		return HealthWaiting, act.progress
	case tools > 0 || (act.turn && act.calls > 0):
		// A call to Parley counts in a turn only: without hooks that say
		// where turns end, a client's calls would flip it to working and
		// back on each one.
		return HealthWorking, act.progress
	case act.turn && now.Sub(act.progress) >= h.stallAfter:
		return HealthStalled, act.progress.Add(h.stallAfter)
	case act.turn:
		return HealthWorking, act.progress
	case act.resident || active():
		return HealthIdle, act.progress
	}
	return HealthOffline, act.progress
}

// Health reports the agent's health.
func (h *Hub) Health(a *Agent) HealthView {
	active := h.active(a) // before actMu: it takes mu
	now := h.now().UTC()
	k := inboxKey{a.Workspace, a.Name}
	h.actMu.Lock()
	defer h.actMu.Unlock()
	act := h.acts[k]
	st, since := h.healthOf(act, func() bool { return active }, now)
	v := HealthView{Health: st, Since: since}
	if act != nil {
		v.Progress, v.InTurn = act.progress, act.turn
		v.Tools = len(act.tools) + act.calls
		if act.health == st && !act.since.IsZero() {
			v.Since = act.since
		}
	}
	return v
}

// announceHealth publishes the agent's health if it changed, and
// agent.stalled when it became stalled.
func (h *Hub) announceHealth(k inboxKey, now time.Time) {
	h.actMu.Lock()
	a := h.acts[k]
	if a == nil {
		h.actMu.Unlock()
		return
	}
	// Presence is mu's; actMu is never held while taking mu elsewhere, so
	// taking mu under actMu cannot deadlock.
	st, _ := h.healthOf(a, func() bool { return h.presentNow(k) }, now)
	if st == a.health {
		h.actMu.Unlock()
		return
	}
	a.health, a.since = st, now
	h.actMu.Unlock()
	h.publish(Event{Kind: EventAgentHealth, Workspace: k.ws, Agent: k.name, Status: string(st)})
	if st == HealthStalled {
		h.log.Info("agent stalled", "workspace", k.ws, "agent", k.name, "after", h.stallAfter)
		h.publish(Event{Kind: EventAgentStalled, Workspace: k.ws, Agent: k.name, Status: string(st)})
	}
}

// presentNow is presence from memory: an open session, or seen within
// ActiveWindow and not gone since. (An agent known only from the store's
// last-seen time, seen by another daemon, counts as absent here.)
func (h *Hub) presentNow(k inboxKey) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[k] > 0 {
		return true
	}
	seen, left := h.seen[k], h.left[k]
	return !seen.IsZero() && h.now().Sub(seen) < ActiveWindow && (left.IsZero() || seen.After(left))
}

// watchHealth announces the changes that time brings (a turn that went
// quiet stalls; an agent not seen lately goes offline) until ctx ends.
func (h *Hub) watchHealth(ctx context.Context) {
	every := min(max(h.stallAfter/4, 50*time.Millisecond), 15*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.CheckHealth()
		}
	}
}

// CheckHealth announces each tracked agent's change of health now; Run does
// it periodically.
func (h *Hub) CheckHealth() {
	h.actMu.Lock()
	keys := make([]inboxKey, 0, len(h.acts))
	for k := range h.acts {
		keys = append(keys, k)
	}
	h.actMu.Unlock()
	now := h.now().UTC()
	for _, k := range keys {
		h.announceHealth(k, now)
	}
}
