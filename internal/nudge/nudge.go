// Package nudge wakes idle agents that run in tmux: when a message arrives for
// an agent whose status is ready, it types a one-line notice into the agent's
// tmux pane, which an agent such as Claude Code takes as its next prompt. It is
// off unless the user turns it on (nudge = "tmux" in config.toml, or per agent
// with `parley mcp serve --nudge tmux`).
//
// Typing into a pane is intrusive, so it holds back: never while the agent
// says it is at work, never while the pane shows unsent input or is in a mode
// (see tmux.PaneState.HasInput for the heuristic), once per burst of messages
// (Debounce), and not again until the agent changes its status or Cooldown
// passes. It learns of messages from hub events and never blocks the hub.
//
// The daemon imports it.
package nudge

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/tmux"
)

// Target is where an agent's pane is and whether it asked to be nudged.
type Target struct {
	Socket string // tmux server socket; "" means the default server
	Pane   string // pane id, e.g. %3
	Nudge  string // "tmux" to be nudged even when nudging is not on for all
}

// Options configure a Nudger; zero values mean defaults.
type Options struct {
	Logger *slog.Logger
	// All nudges every agent that has a pane (config.toml nudge = "tmux");
	// otherwise only agents whose Target.Nudge is "tmux".
	All bool
	// Locate finds an agent's pane; ok is false when it has none (required).
	Locate func(ws, agent string) (t Target, ok bool)
	// Debounce is how long a burst of messages is collected before one
	// notice (default 2s).
	Debounce time.Duration
	// Cooldown is the least time between two notices to one agent that has
	// not changed its status since (default 30s).
	Cooldown time.Duration
	// Tmux is the tmux executable (default "tmux").
	Tmux string
}

// Nudger types notices into idle agents' panes.
type Nudger struct {
	hub *hub.Hub
	o   Options
	log *slog.Logger

	events chan hub.Event
	fire   chan key
	done   chan struct{} // closed when Run returns

	mu      sync.Mutex
	pending map[key]*burst
	last    map[key]time.Time // when the agent was last nudged
	nudged  int
}

type key struct{ ws, agent string }

type burst struct {
	from  string // sender of the latest message
	count int
}

// New returns a nudger over h; Run starts it.
func New(h *hub.Hub, opts *Options) *Nudger {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Debounce <= 0 {
		o.Debounce = 2 * time.Second
	}
	if o.Cooldown <= 0 {
		o.Cooldown = 30 * time.Second
	}
	return &Nudger{hub: h, o: o, log: o.Logger,
		events: make(chan hub.Event, 256), fire: make(chan key, 64), done: make(chan struct{}),
		pending: map[key]*burst{}, last: map[key]time.Time{}}
}

// Run watches the hub until ctx ends. Call it once.
func (n *Nudger) Run(ctx context.Context) error {
	cancel := n.hub.Subscribe(func(e hub.Event) {
		if e.Kind != hub.EventMessageSent && e.Kind != hub.EventAgentStatus {
			return
		}
		select {
		case n.events <- e:
		default: // a nudge is a courtesy: drop it rather than slow the hub
			n.log.Debug("nudge: event dropped, queue full")
		}
	})
	defer cancel()
	defer close(n.done)
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-n.events:
			n.event(e)
		case k := <-n.fire:
			n.mu.Lock()
			b := n.pending[k]
			delete(n.pending, k)
			n.mu.Unlock()
			if b != nil {
				n.maybeNudge(ctx, k, b)
			}
		}
	}
}

func (n *Nudger) event(e hub.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e.Kind == hub.EventAgentStatus {
		// The agent acted: the next message may nudge it again.
		delete(n.last, key{e.Workspace, e.Agent})
		return
	}
	for _, r := range e.Recipients {
		k := key{e.Workspace, r}
		if b := n.pending[k]; b != nil {
			b.count++
			b.from = e.Agent
			continue
		}
		n.pending[k] = &burst{from: e.Agent, count: 1}
		time.AfterFunc(n.o.Debounce, func() {
			select {
			case n.fire <- k:
			case <-n.done:
			}
		})
	}
}

// maybeNudge types the notice if every condition holds.
func (n *Nudger) maybeNudge(ctx context.Context, k key, b *burst) {
	log := n.log.With("workspace", k.ws, "agent", k.agent)
	t, ok := n.o.Locate(k.ws, k.agent)
	if !ok || t.Pane == "" || !(n.o.All || t.Nudge == "tmux") {
		return
	}
	n.mu.Lock()
	last, seen := n.last[k]
	n.mu.Unlock()
	if seen && time.Since(last) < n.o.Cooldown {
		log.Debug("nudge: cooling down")
		return
	}
	a, err := n.hub.Agent(ctx, k.ws, k.agent)
	if err != nil || a.Status != hub.StatusReady {
		log.Debug("nudge: agent not ready", "err", err)
		return
	}
	unread, err := n.hub.Unread(ctx, k.ws, k.agent)
	if err != nil || unread == 0 {
		return
	}
	tc := tmux.Client{Socket: t.Socket, Bin: n.o.Tmux}
	st, err := tc.State(ctx, t.Pane)
	if err != nil {
		log.Debug("nudge: pane unavailable", "err", err)
		return
	}
	if st.Dead || st.InMode || st.HasInput() {
		log.Debug("nudge: pane busy")
		return
	}
	if err := tc.Type(ctx, t.Pane, Notice(k.agent, unread, b.from)); err != nil {
		log.Warn("nudge: typing into the tmux pane failed", "pane", t.Pane, "err", err)
		return
	}
	// The notice told the agent of its whole inbox.
	if ds, _, err := n.hub.Inbox(ctx, k.ws, k.agent, hub.MaxCheckLimit); err == nil {
		ids := make([]string, len(ds))
		for i, d := range ds {
			ids[i] = d.MessageID
		}
		if _, err := n.hub.NoteWake(ctx, k.ws, k.agent, ids, hub.WakeTmux); err != nil {
			log.Warn("nudge: record the wake path", "err", err)
		}
	}
	n.mu.Lock()
	n.last[k] = time.Now()
	n.nudged++
	n.mu.Unlock()
	log.Info("nudged", "pane", t.Pane, "unread", unread)
}

// Notice is the line typed into the pane: no message content, which may be
// long or hostile, only counts and the sender's name.
func Notice(agent string, unread int, from string) string {
	s := "s"
	if unread == 1 {
		s = ""
	}
	return fmt.Sprintf("[parley] %s: %d unread message%s (latest from %s). Call check_messages to read them.", agent, unread, s, from)
}
