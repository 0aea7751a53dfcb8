package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/notify"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/runner"
)

// observeRunner hears every change of a managed agent (runner.Options.Observer)
// and publishes it on the hub's one path for events: to the event stream and
// push notifications here, and to the other daemons on the store. It runs
// under the runner's lock; publishing never blocks.
func (d *Daemon) observeRunner(c runner.Change) {
	d.runnerActivity(c)
	e := api.Event{Workspace: c.Workspace, Agent: c.Agent, Time: time.Now().UTC()}
	if c.Event == nil {
		e.Kind, e.Status = api.EventManagedStatus, string(c.Status)
	} else {
		ev := c.Event
		// Permission requests are the inbox's events (observePermission),
		// for every agent: here they stay timeline entries.
		e.Kind, e.Run, e.Activity, e.Tool, e.Text = api.EventRunEvent, ev.Run, ev.Kind, ev.Tool, api.Preview(ev.Text)
	}
	d.publish(e)
}

// observePermission hears the permission inbox: every agent's requests, and
// how each ended, are published like the runner's changes.
func (d *Daemon) observePermission(pe permission.Event) {
	d.permissionActivity(pe)
	d.publish(permissionEvent(pe))
}

// publish sends an event that is not the hub's (the runner's, the
// permission inbox's) along the hub's path, encoded for the wire: the event
// stream sends it as it is (httpapi), and the daemon's own subscriber
// (daemonEvents) hands it to push notifications.
func (d *Daemon) publish(e api.Event) {
	b, err := json.Marshal(e)
	if err != nil {
		d.log.Error("encode event", "kind", e.Kind, "err", err)
		return
	}
	d.hub.Publish(hub.Event{Kind: hub.EventKind(e.Kind), Workspace: e.Workspace, Agent: e.Agent, Time: e.Time, Detail: b})
}

// daemonEvents hears the hub's events, this daemon's and those the other
// daemons on the store announce, for what the daemon does with them beside
// the hub's own subscribers: push notices of the runner's and the permission
// inbox's events, and waking a permission request decided on another
// daemon. It runs on the publisher's goroutine: it hands off, never blocks.
func (d *Daemon) daemonEvents(e hub.Event) {
	switch {
	case e.Kind == hub.EventResync:
		// A decision made elsewhere while we did not listen: each waiting
		// request looks at the store again.
		if d.perms != nil {
			d.perms.WakeAll()
		}
	case e.Detail != nil:
		var ev api.Event
		if err := json.Unmarshal(e.Detail, &ev); err != nil {
			d.log.Warn("bad event detail", "kind", e.Kind, "remote", e.Remote, "err", err)
			return
		}
		if e.Remote && ev.Kind == api.EventPermissionResolved && d.perms != nil {
			d.perms.Wake(ev.ID)
		}
		if d.notices != nil {
			d.notices.offer(ev)
		}
	case e.Remote && string(e.Kind) == api.EventPermissionResolved && d.perms != nil:
		// Decided elsewhere, its detail too large to travel: every
		// waiting request looks again.
		d.perms.WakeAll()
	}
}

// notices turns what happens into push notifications: critical messages,
// permission requests, failed runs (stalls are the escalation ladder's:
// supervise.go).
type notices struct {
	d     *Daemon
	n     *notify.Notifier
	ch    chan api.Event
	unsub func()
	done  chan struct{}
	asked map[string]bool // permission requests already announced and pending
}

// openNotices starts push notifications when config.toml has [[notify]]
// endpoints. Endpoints take effect at the next start.
func (d *Daemon) openNotices(conf *config.Config) {
	if len(conf.Notify) == 0 {
		return
	}
	ns := &notices{
		d:     d,
		n:     notify.New(config.NotifyEndpoints(conf.Notify), &notify.Options{Logger: d.log.With("subsystem", "notify")}),
		ch:    make(chan api.Event, 256),
		done:  make(chan struct{}),
		asked: map[string]bool{},
	}
	ns.unsub = d.hub.Subscribe(func(e hub.Event) {
		if e.Kind == hub.EventMessageHeld && !e.Remote {
			ns.offer(api.EventOf(e)) // this daemon's doorman heard it: it tells
			return
		}
		if e.Kind != hub.EventMessageSent || e.Message == nil {
			return
		}
		if e.Message.Priority == hub.Critical || isOverdueNotice(e.Message) {
			ev := api.EventOf(e)
			ev.Text = e.Message.Content // the whole notice, not its preview
			ns.offer(ev)
		}
	})
	d.notices = ns
}

// offer hands e to the notices' goroutine; it never blocks.
func (ns *notices) offer(e api.Event) {
	select {
	case ns.ch <- e:
	default:
		ns.d.log.Warn("notify: behind; an event was not considered", "kind", e.Kind)
	}
}

// run turns events into notices until ctx ends.
func (ns *notices) run(ctx context.Context) {
	defer close(ns.done)
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-ns.ch:
			ns.consider(e)
		}
	}
}

// isOverdueNotice reports whether m is the hub's notice to a sender that an
// ack it asked for is overdue.
func isOverdueNotice(m *hub.Message) bool {
	return m.From == hub.NoticeSender && m.Metadata["kind"] == "ack_overdue"
}

func (ns *notices) consider(e api.Event) {
	switch {
	case e.Kind == string(hub.EventMessageSent) && e.From == hub.NoticeSender:
		ns.n.Notify(notify.Notice{Kind: notify.AckOverdue, Workspace: e.Workspace, Agent: e.To, ID: e.ID,
			Title: fmt.Sprintf("ack overdue for %s", e.To), Message: e.Text})
	case e.Kind == string(hub.EventMessageHeld):
		ns.n.Notify(notify.Notice{Kind: notify.Held, Workspace: e.Workspace, Agent: e.Agent, ID: e.ID + "/" + e.Agent,
			Title:   fmt.Sprintf("%s's session holds a message for you to approve", e.Agent),
			Message: fmt.Sprintf("Message %s to %s is held in its Claude Code session: %s\nSee it: parley delivery %s", e.ID, e.Agent, e.Reason, e.ID)})
	case e.Kind == string(hub.EventMessageSent):
		ns.n.Notify(notify.Notice{Kind: notify.Critical, Workspace: e.Workspace, Agent: e.From, ID: e.ID,
			Title:   fmt.Sprintf("critical: %s → %s", e.From, e.To),
			Message: e.Preview})
	case e.Kind == api.EventPermissionRequested:
		// The request's details are the runner's; ask it here, off its lock.
		pending := map[string]bool{}
		for _, p := range ns.d.runner.Permissions(e.Workspace) {
			q := p.Request
			pending[q.ID] = true
			if ns.asked[q.ID] {
				continue
			}
			ns.n.Notify(notify.Notice{Kind: notify.Permission, Workspace: q.Workspace, Agent: q.Agent, ID: q.ID,
				Title: fmt.Sprintf("%s asks to use %s", q.Agent, q.Tool),
				Message: fmt.Sprintf("%s asks to use %s with %s\nAnswer in the dashboard, or: parley allow %s / parley deny %s",
					q.Agent, q.Tool, api.Preview(string(q.Input)), q.ID, q.ID)})
		}
		for id := range ns.asked {
			if !pending[id] {
				delete(ns.asked, id)
			}
		}
		for id := range pending {
			ns.asked[id] = true
		}
	case e.Kind == api.EventRunEvent && e.Activity == runner.EvError:
		ns.n.Notify(notify.Notice{Kind: notify.AgentError, Workspace: e.Workspace, Agent: e.Agent,
			ID: fmt.Sprintf("%s/run-%d", e.Agent, e.Run), Title: fmt.Sprintf("%s failed", e.Agent),
			Message: fmt.Sprintf("Run %d of %s failed: %s", e.Run, e.Agent, e.Text)})
	}
}

func (ns *notices) close() {
	ns.unsub()
	ns.n.Close()
}

// permissionEvent converts a permission inbox event for the wire.
func permissionEvent(e permission.Event) api.Event {
	r := e.Request
	out := api.Event{Kind: string(e.Kind), Workspace: r.Workspace, Time: r.RequestedAt, Agent: r.Agent, ID: r.ID, Run: r.Run,
		Tool: r.Tool, Preview: api.Preview(string(r.Input)), State: string(r.State),
		Permission: &api.Permission{RequestID: r.ID, AgentID: r.Agent, Workspace: r.Workspace, Run: r.Run, ToolName: r.Tool,
			Input: r.Input, ToolUseID: r.ToolUseID, Source: r.Source, Description: r.Description, RequestedAt: r.RequestedAt, ExpiresAt: r.ExpiresAt}}
	if d := r.Decision; d != nil {
		out.Time, out.By, out.Message = d.At, d.By, d.Message
	}
	return out
}
