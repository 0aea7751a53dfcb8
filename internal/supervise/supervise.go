// Package supervise is the daemon's escalation ladder: what it does when an
// agent stalls (the hub's agent.stalled) or a permission request waits for
// a person nobody answers. Each case climbs one step at a time, a step
// every Options.Every while the case lasts: nudge the agent through its best
// wake path, tell its lead (a role or agent named in config.toml), push a
// notice to the person, and, for a managed agent, cancel or restart its
// run as configured. Each step is an agent.escalated event (hub.EventAgentEscalated: Status
// the step, Change the case, Text what was done) on the hub's one
// event path, and a line in a bounded list the dashboard reads (Recent).
// A case ends when the agent shows progress again or the request is
// answered. The daemon imports it; it imports hub and permission, and
// reaches the runner and the notifier through small interfaces it owns.
package supervise

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
)

// Step is a rung of the ladder.
type Step string

// The steps, in order. Cancel and Restart are the last rung of a managed
// agent, as configured.
const (
	StepNudge   Step = "nudge"
	StepLead    Step = "lead"
	StepPerson  Step = "person"
	StepCancel  Step = "cancel"
	StepRestart Step = "restart"
)

// Case kinds.
const (
	CaseStall      = "stall"
	CasePermission = "permission"
)

// Defaults.
const (
	DefaultEvery           = 5 * time.Minute
	DefaultPermissionAfter = 5 * time.Minute
	// recentMax bounds the steps kept per workspace for the dashboard.
	recentMax = 100
)

// Managed is the runner, as the ladder's last rung reaches it.
type Managed interface {
	// Owner reports whether name is a managed agent of ws, and who
	// created it ("" if nobody in particular).
	Owner(ws, name string) (owner string, managed bool)
	// Cancel interrupts the agent's run in progress; Prompt queues a turn.
	Cancel(ctx context.Context, ws, id string) error
	Prompt(ctx context.Context, ws, id, prompt string) error
}

// Pusher tells the person: the daemon's push notifications. Push reports
// whether any endpoint takes notices at all.
type Pusher interface {
	Push(kind, ws, agent, id, title, message string) bool
}

// Options configure a Ladder; zero values mean defaults.
type Options struct {
	// Every is the time from one step to the next (default DefaultEvery).
	Every time.Duration
	// PermissionAfter is how long a permission request waits before its
	// ladder starts (default DefaultPermissionAfter).
	PermissionAfter time.Duration
	// Lead is told at the second step: @role (the agents of that role,
	// never a group that took its name) or an agent's name; "" means a
	// managed agent's owner, if it has one.
	Lead string
	// OnStall is a managed agent's last step: StepCancel, StepRestart, or
	// "" for none.
	OnStall Step
	Managed Managed // nil: no managed agents
	Pusher  Pusher  // nil: nobody to push to
	Logger  *slog.Logger
}

// Doors tells whether an agent's client session has a door the daemon
// writes letters through (the attention doorman): the nudge says which
// way it went.
type Doors interface {
	HasDoor(ws, agent string) bool
}

// Escalation is one step taken.
type Escalation struct {
	Workspace string
	Agent     string
	Case      string // stall or permission
	Step      Step
	Text      string // what was done, for people
	Time      time.Time
	// Request is the permission request of a permission case.
	Request string
}

// Ladder runs the escalations of one daemon.
type Ladder struct {
	h     *hub.Hub
	perms *permission.Inbox
	o     Options
	log   *slog.Logger

	doors Doors // set by UseDoors before Run

	mu     sync.Mutex
	cases  map[string]*rung // by caseKey
	recent map[string][]Escalation
	unsub  []func()
	kick   chan struct{}
}

// rung is a case and how far up it has climbed.
type rung struct {
	ws, agent, kind string
	request         string // a permission case's request id
	tool            string
	began           time.Time
	next            time.Time // when the next step is due
	climbed         int       // steps taken
	top             int       // how many steps it has, once known (Climb)
}

// New returns a ladder over h's events and perms' requests (nil: no
// permission cases). Run starts it.
func New(h *hub.Hub, perms *permission.Inbox, o Options) *Ladder {
	if o.Every <= 0 {
		o.Every = DefaultEvery
	}
	if o.PermissionAfter <= 0 {
		o.PermissionAfter = DefaultPermissionAfter
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	l := &Ladder{h: h, perms: perms, o: o, log: o.Logger, cases: map[string]*rung{}, recent: map[string][]Escalation{},
		kick: make(chan struct{}, 1)}
	l.unsub = append(l.unsub, h.Subscribe(l.onHub))
	if perms != nil {
		l.unsub = append(l.unsub, perms.Subscribe(l.onPermission))
	}
	return l
}

// UseDoors tells the ladder of the doorman, whose letters carry its nudges.
// Call it before Run.
func (l *Ladder) UseDoors(d Doors) { l.doors = d }

func caseKey(kind, ws, id string) string { return kind + "\x00" + ws + "\x00" + id }

// onHub opens a stall case when an agent stalls, and closes it when the
// agent's health changes. It runs on the publisher's goroutine: it only
// records.
func (l *Ladder) onHub(e hub.Event) {
	if e.Remote {
		return // each daemon escalates what it sees of its own agents
	}
	switch e.Kind {
	case hub.EventAgentStalled:
		now := time.Now()
		l.mu.Lock()
		k := caseKey(CaseStall, e.Workspace, e.Agent)
		if l.cases[k] == nil {
			l.cases[k] = &rung{ws: e.Workspace, agent: e.Agent, kind: CaseStall, began: now, next: now}
		}
		l.mu.Unlock()
		l.poke()
	case hub.EventAgentHealth:
		if e.Status != string(hub.HealthStalled) {
			l.mu.Lock()
			delete(l.cases, caseKey(CaseStall, e.Workspace, e.Agent))
			l.mu.Unlock()
		}
	}
}

// onPermission opens a case for each pending request, due after
// PermissionAfter, and closes it once the request is resolved.
func (l *Ladder) onPermission(e permission.Event) {
	r := e.Request
	k := caseKey(CasePermission, r.Workspace, r.ID)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Kind == permission.EventRequested && r.State == permission.Pending {
		now := time.Now()
		l.cases[k] = &rung{ws: r.Workspace, agent: r.Agent, kind: CasePermission, request: r.ID, tool: r.Tool,
			began: now, next: now.Add(l.o.PermissionAfter)}
		l.poke()
		return
	}
	delete(l.cases, k)
}

func (l *Ladder) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Run climbs the ladders until ctx ends: each step at the time it is due.
func (l *Ladder) Run(ctx context.Context) {
	defer func() {
		for _, u := range l.unsub {
			u()
		}
	}()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		l.Climb(ctx, time.Now())
		wait := time.Hour
		if next := l.nextDue(); !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-l.kick:
		}
	}
}

// nextDue is when the next step of a case that can still climb is due;
// zero if none can.
func (l *Ladder) nextDue() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var next time.Time
	for _, c := range l.cases {
		if c.top > 0 && c.climbed >= c.top {
			continue
		}
		if next.IsZero() || c.next.Before(next) {
			next = c.next
		}
	}
	return next
}

// Climb takes every step due at now.
func (l *Ladder) Climb(ctx context.Context, now time.Time) {
	l.mu.Lock()
	var due []rung
	for _, c := range l.cases {
		if !now.Before(c.next) {
			due = append(due, *c)
			c.climbed++
			c.next = now.Add(l.o.Every)
		}
	}
	l.mu.Unlock()
	for _, c := range due {
		// Not under mu: the runner, which steps asks, publishes on the hub
		// under its own lock, and onHub takes mu.
		steps := l.steps(c)
		l.mu.Lock()
		if cc := l.cases[caseKey(c.kind, c.ws, c.key())]; cc != nil {
			cc.top = len(steps)
		}
		l.mu.Unlock()
		if c.climbed >= len(steps) {
			continue // at the top: nothing more to do
		}
		l.take(ctx, c, steps[c.climbed], now)
	}
}

// key is what names the case among its kind's: the agent of a stall, the
// request of a permission case.
func (c rung) key() string {
	if c.kind == CasePermission {
		return c.request
	}
	return c.agent
}

// steps is the ladder of a case: a stall starts with a nudge; a permission
// request with the lead (the agent is blocked on it: a nudge changes
// nothing); a managed agent's ends with its configured action.
func (l *Ladder) steps(c rung) []Step {
	var s []Step
	if c.kind == CaseStall {
		s = append(s, StepNudge)
	}
	s = append(s, StepLead, StepPerson)
	if l.o.OnStall != "" && l.o.Managed != nil {
		if _, ok := l.o.Managed.Owner(c.ws, c.agent); ok {
			s = append(s, l.o.OnStall)
		}
	}
	return s
}

// what names the case for people.
func (c rung) what(now time.Time) string {
	if c.kind == CasePermission {
		return fmt.Sprintf("%s's permission request %s (to use %s) has waited %s for an answer", c.agent, c.request, c.tool, now.Sub(c.began).Round(time.Second))
	}
	return fmt.Sprintf("%s has shown no progress in its turn for %s", c.agent, now.Sub(c.began).Round(time.Second))
}

// take does one step of c and announces it.
func (l *Ladder) take(ctx context.Context, c rung, step Step, now time.Time) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	text, err := l.do(ctx, c, step, now)
	if err != nil {
		text = fmt.Sprintf("%s: failed: %v", step, err)
		l.log.Warn("escalation step failed", "workspace", c.ws, "agent", c.agent, "case", c.kind, "step", step, "err", err)
	} else {
		l.log.Info("escalated", "workspace", c.ws, "agent", c.agent, "case", c.kind, "step", step)
	}
	e := Escalation{Workspace: c.ws, Agent: c.agent, Case: c.kind, Step: step, Text: text, Time: now.UTC(), Request: c.request}
	l.mu.Lock()
	rs := append(l.recent[c.ws], e)
	if len(rs) > recentMax {
		rs = slices.Clone(rs[len(rs)-recentMax:])
	}
	l.recent[c.ws] = rs
	l.mu.Unlock()
	l.h.Announce(hub.Event{Kind: hub.EventAgentEscalated, Workspace: c.ws, Agent: c.agent, Status: string(step), Change: c.kind,
		MessageID: c.request, Text: text})
}

// do carries out a step and says what it did.
func (l *Ladder) do(ctx context.Context, c rung, step Step, now time.Time) (string, error) {
	switch step {
	case StepNudge:
		// A message is the agent's best wake path by construction: every
		// path there is (a blocked wait, the client's door, a channel, its
		// hooks, tmux, a managed agent's turn) takes it from the inbox.
		// Steered: through the door of its session, a letter reaches its
		// running turn between tool calls (or starts one).
		_, err := l.h.Send(ctx, hub.SendRequest{Workspace: c.ws, From: hub.NoticeSender, To: c.agent, Priority: string(hub.High), Door: hub.DoorDaemon,
			Deliver: string(hub.DeliverSteer),
			Content: fmt.Sprintf("Parley: you have shown no progress in your turn for %s. If you are stuck, say so to your lead or ask for help with send_message; "+
				"if you are waiting on something, say what. Call my_work to see the tasks, reservations and asks you hold.", now.Sub(c.began).Round(time.Second)),
			Metadata: map[string]string{"kind": "nudge", "case": c.kind}})
		if err != nil {
			return "", err
		}
		way := "its next read, hook or turn"
		switch {
		case l.doors != nil && l.doors.HasDoor(c.ws, c.agent):
			way = "a letter through its session's door"
		case l.o.Managed != nil:
			if _, ok := l.o.Managed.Owner(c.ws, c.agent); ok {
				way = "its managed session"
			}
		}
		return "nudged " + c.agent + " with a message, by " + way, nil
	case StepLead:
		lead := l.o.Lead
		if lead == "" && l.o.Managed != nil {
			if owner, ok := l.o.Managed.Owner(c.ws, c.agent); ok && !strings.HasPrefix(owner, hub.HumanPrefix) {
				lead = owner
			}
		}
		if lead == "" || lead == c.agent {
			return "no lead to tell: set lead in [escalation] of config.toml", nil
		}
		_, err := l.h.Send(ctx, hub.SendRequest{Workspace: c.ws, From: hub.NoticeSender, To: LeadAddress(lead), Priority: string(hub.High), Door: hub.DoorDaemon,
			Content:  fmt.Sprintf("Parley escalation: %s. Parley nudged it; look into it, or answer it (parley allow|deny for a permission request).", c.what(now)),
			Metadata: map[string]string{"kind": "escalation", "case": c.kind, "agent": c.agent, "request": c.request}})
		if err != nil {
			return "", err
		}
		return "told " + lead, nil
	case StepPerson:
		if l.o.Pusher == nil {
			return "no notifier: add a [[notify]] endpoint to config.toml", nil
		}
		kind, title := "agent_stalled", c.agent+" is stalled"
		if c.kind == CasePermission {
			kind, title = "permission", c.agent+" still waits for a permission"
		}
		id := c.kind + ":" + c.agent
		if c.request != "" {
			id = c.request
		}
		if !l.o.Pusher.Push(kind, c.ws, c.agent, id, title, c.what(now)+".") {
			return "no notifier takes " + kind + " notices", nil
		}
		return "pushed a notice to the person", nil
	case StepCancel, StepRestart:
		if err := l.o.Managed.Cancel(ctx, c.ws, c.agent); err != nil {
			return "", err
		}
		if step == StepCancel {
			return "cancelled " + c.agent + "'s run", nil
		}
		why := "it stalled (no progress for a while)"
		if c.kind == CasePermission {
			why = "its permission request for " + c.tool + " went unanswered"
		}
		if err := l.o.Managed.Prompt(ctx, c.ws, c.agent, "Parley restarted your turn: "+why+". Carry on with your task where you left off; call my_work to see what you hold."); err != nil {
			return "", err
		}
		return "restarted " + c.agent + "'s run", nil
	}
	return "", fmt.Errorf("unknown step %q", step)
}

// Recent returns the steps taken in ws, oldest first.
func (l *Ladder) Recent(ws string) []Escalation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recent[ws])
}

// ValidStep checks an on_stall action.
func ValidStep(s string) error {
	switch Step(s) {
	case "", StepCancel, StepRestart:
		return nil
	}
	return hub.Errorf("", hub.Invalid, "invalid on_stall %q: want cancel, restart or nothing", s)
}

// LeadAddress is the address of a lead as config.toml names it: "@ROLE" is
// the role (hub.RolePrefix), whatever group has the same name; "@role:R"
// and "@group:G" say which themselves; else an agent's name.
func LeadAddress(lead string) string {
	if strings.HasPrefix(lead, "@") && !strings.HasPrefix(lead, hub.RolePrefix) && !strings.HasPrefix(lead, hub.GroupPrefix) {
		return hub.RolePrefix + lead[1:]
	}
	return lead
}

// Lead is the lead that config.toml names ([escalation] lead), or "".
func (l *Ladder) Lead() string { return l.o.Lead }
