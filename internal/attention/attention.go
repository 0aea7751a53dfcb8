// Package attention draws an agent's attention to its mail through the door
// of its client session: when mail comes for an agent that is not blocked
// in a wait, and its session registered a door (Claude Code's inbox socket,
// a Codex thread), the doorman writes one short letter through it (who
// wrote, the priority, the first line, and "call check_messages"), which
// starts a turn in an idle session or reaches a busy one in its turn. The
// agent then reads through its MCP session as always.
//
// A letter is not a read: it hands nothing out and leases nothing. It
// records, per copy, the door as the path that reached the agent and the
// letter's id (handed); after that, only what the client says of the letter
// changes the copies. Claude Code sends receipts to the letter's sender
// address, this daemon's socket in the session's socket directory: a letter
// held for a person (with why), then delivered or denied; expired, refused
// or dropped. The session's hooks report the letter seen when its turn
// carries it (the prompt, or the transcript, holds the letter). The Codex
// queue gives the letter to a turn. Where the client says nothing and the
// session goes idle (Claude Code's idle notice), the copies are
// unconfirmed, never seen. A declined letter's copies leave the inbox
// (declined); a dropped or expired one's bounce; their senders are told,
// and `parley redeliver` sends them again. A held copy whose message's time
// to live ends bounces ("hold expired"); copies still held when the daemon
// starts are unconfirmed: their receipts went to the old daemon's socket.
//
// One letter per burst: while a letter waits for its session's word, new
// mail waits; a held letter holds back the next (they would be held too)
// and lets the other wake paths (hooks, tmux) reach the agent meanwhile.
// Once the session's turn carries the letter, or it is over, what came in
// the meantime and is still unread gets the next letter.
//
// Wake order per agent: a blocked wait takes the message at its send (the
// hub hands it over; nothing is left for a letter); else the door; the
// channel, hooks and tmux run beside it (the nudger skips agents with a
// door); a managed agent is woken by its runner, and by the door only while
// its turn cannot take mail.
//
// The daemon runs one Doorman; it writes only the doors of its own machine
// and OS user.
package attention

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/hub"
)

// Options configure a Doorman; zero values mean defaults.
type Options struct {
	Logger *slog.Logger
	// Host and UID name this machine and OS user: only their doors are
	// written. Host "" takes a door of any host (a store that one daemon
	// alone uses); UID 0 means this process's user (os.Getuid, -1 on
	// Windows, as the doors record it).
	Host string
	UID  int
	// TakesMail, if set, reports whether another part of the daemon (the
	// runner, for managed agents) brings the agent its mail itself now:
	// then no letter is written.
	TakesMail func(ws, agent string) bool
	// SeenTimeout is how long a letter that nobody saw holds back the next
	// one (default 5 minutes).
	SeenTimeout time.Duration
	// Retry is how long after a failed letter (not a gone door) the next
	// try waits (default 5 s).
	Retry time.Duration
	// NoReplies turns off Claude Code's receipts and idle notices, which
	// need a socket of this process in the session's socket directory:
	// without them a letter says nothing back, and its copies stay handed
	// (or are seen, through the session's hooks).
	NoReplies bool
	// Unconfirmed is how long after a Claude Code session said it is idle
	// a letter it took without a word of it turns unconfirmed (default 3 s:
	// its hooks report a seen letter before the session goes idle).
	Unconfirmed time.Duration
	// Version names Parley to Codex's app-server.
	Version string
	// CodexResume resumes a Codex thread that its app-server has not
	// loaded, to queue a letter there (config.toml codex_resume); without
	// it no letter goes to such a thread, and its copies are marked not
	// loaded.
	CodexResume bool
}

// Doorman writes letters through doors. Run starts it.
type Doorman struct {
	hub *hub.Hub
	o   Options
	log *slog.Logger

	events chan hub.Event
	ctx    context.Context

	mu      sync.Mutex
	agents  map[key]*agentState
	doors   map[key]map[string]bool   // the ids of each agent's open doors, of this host and user
	dormant map[key]map[string]bool   // the ids of each agent's dormant Codex doors (hub.SessionDoor.Dormant), of this host and user
	replies map[string]*door.Listener // by socket directory
	qwen    qwenReplies               // Qwen Code's receipts (doors.go)
	working int                       // agents looked at now
	wg      sync.WaitGroup
	// handling counts events taken off the queue and not yet handled.
	handling atomic.Int32
	// following counts the letters whose sessions' word is awaited.
	following atomic.Int32
}

type key struct{ ws, agent string }

// agentState is what the doorman knows of one agent's attention.
type agentState struct {
	working bool    // a goroutine writes for it now
	again   bool    // look again when it is done
	letter  *letter // written, not seen yet
	// idleAt is when its client last said it was idle (a Claude Code idle
	// notice), which outranks its status for the next letter.
	idleAt time.Time
	// waitingIdle: a letter of mode idle waits for the session to be idle.
	waitingIdle bool
	retry       *time.Timer
	// failed counts the letters in a row that could not be written for a
	// reason other than a gone door.
	failed int
}

// letter is an outstanding letter.
type letter struct {
	id   string
	at   time.Time
	door *hub.SessionDoor
	// held: the client holds it for a person: no other letter goes until
	// the person decides, and the other wake paths take over meanwhile.
	held bool
}

// New returns a doorman over h.
func New(h *hub.Hub, opts *Options) *Doorman {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.UID == 0 {
		o.UID = os.Getuid() // -1 on Windows, as its doors record
	}
	if o.SeenTimeout <= 0 {
		o.SeenTimeout = 5 * time.Minute
	}
	if o.Retry <= 0 {
		o.Retry = 5 * time.Second
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Unconfirmed <= 0 {
		o.Unconfirmed = 3 * time.Second
	}
	return &Doorman{hub: h, o: o, log: o.Logger, events: make(chan hub.Event, 4096),
		agents: map[key]*agentState{}, doors: map[key]map[string]bool{}, dormant: map[key]map[string]bool{}, replies: map[string]*door.Listener{}}
}

// Run watches the hub until ctx ends, then waits for the letters in
// flight. Call it once.
func (d *Doorman) Run(ctx context.Context) error {
	d.ctx = ctx
	var dropped sync.Once
	rescan := make(chan struct{}, 1)
	cancel := d.hub.Subscribe(func(e hub.Event) {
		switch e.Kind {
		case hub.EventMessageSent, hub.EventResync, hub.EventMessageSeen, hub.EventDoorOpened, hub.EventDoorClosed, hub.EventAgentStatus,
			hub.EventMessageRedelivered:
		default:
			return
		}
		d.handling.Add(1)
		select {
		case d.events <- e:
		default:
			d.handling.Add(-1)
			// Never slow the hub: look at every agent with a door again.
			dropped.Do(func() { d.log.Warn("doorman: event queue full; rescanning") })
			select {
			case rescan <- struct{}{}:
			default:
			}
		}
	})
	defer cancel()
	d.loadDoors(ctx)
	for {
		select {
		case <-ctx.Done():
			d.mu.Lock()
			for _, st := range d.agents {
				if st.retry != nil {
					st.retry.Stop()
				}
			}
			d.mu.Unlock()
			d.wg.Wait()
			d.mu.Lock()
			for _, l := range d.replies {
				if l != nil {
					l.Close()
				}
			}
			d.mu.Unlock()
			d.closeQwen()
			return nil
		case <-rescan:
			d.rescanAll()
		case e := <-d.events:
			d.event(e)
			d.handling.Add(-1)
		}
	}
}

// rescanAll looks at every agent with a door.
func (d *Doorman) rescanAll() {
	d.mu.Lock()
	ks := make([]key, 0, len(d.doors)+len(d.dormant))
	for k := range d.doors {
		ks = append(ks, k)
	}
	for k := range d.dormant {
		if d.doors[k] == nil {
			ks = append(ks, k)
		}
	}
	d.mu.Unlock()
	for _, k := range ks {
		d.poke(k)
	}
}

// HasDoor reports whether the agent has an open door the doorman writes,
// whose session takes its letters now (or a dormant Codex door, with
// CodexResume): a tmux nudge would only repeat its letter. While the
// session holds a letter for a person, the other paths reach the agent.
func (d *Doorman) HasDoor(ws, agent string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := key{ws, agent}
	if st := d.agents[k]; st != nil && st.letter != nil && st.letter.held {
		return false
	}
	return len(d.doors[k]) > 0 || d.o.CodexResume && len(d.dormant[k]) > 0
}

// Quiet reports whether the doorman has nothing to do now: every event it
// was sent is handled, and no agent is being looked at. Letters' watchers
// (waiting for a session to take a letter) may still run.
func (d *Doorman) Quiet() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.handling.Load() == 0 && d.working == 0
}

// Following counts the letters whose client's word the doorman awaits.
func (d *Doorman) Following() int { return int(d.following.Load()) }

// mine reports whether the doorman may write door dr: open or dormant, of
// this host and user.
func (d *Doorman) mine(dr *hub.SessionDoor) bool {
	return (dr.Open() || dr.Dormant()) && (d.o.Host == "" || dr.Host == d.o.Host) && dr.UID == d.o.UID
}

// openDoor records that door id of k is open; d.mu is held.
func (d *Doorman) openDoor(k key, id string) {
	addDoor(d.doors, k, id)
	dropDoor(d.dormant, k, id)
}

// closeDoor records that door id of k closed, and whether it is dormant
// now; d.mu is held.
func (d *Doorman) closeDoor(k key, id string, dormant bool) {
	dropDoor(d.doors, k, id)
	if dormant {
		addDoor(d.dormant, k, id)
	} else {
		dropDoor(d.dormant, k, id)
	}
}

func addDoor(m map[key]map[string]bool, k key, id string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][id] = true
}

func dropDoor(m map[key]map[string]bool, k key, id string) {
	if delete(m[k], id); len(m[k]) == 0 {
		delete(m, k)
	}
}

// loadDoors learns the open doors of every workspace.
func (d *Doorman) loadDoors(ctx context.Context) {
	wss, err := d.hub.Workspaces(ctx)
	if err != nil {
		d.log.Warn("doorman: list workspaces", "err", err)
		return
	}
	for _, ws := range wss {
		ds, err := d.hub.Doors(ctx, ws, "", false)
		if err != nil {
			d.log.Warn("doorman: list doors", "workspace", ws, "err", err)
			continue
		}
		// And the dormant ones, among the newest closed (a listing is
		// bounded: the open ones are listed apart).
		if all, err := d.hub.Doors(ctx, ws, "", true); err == nil {
			ds = append(ds, slices.DeleteFunc(all, func(dr *hub.SessionDoor) bool { return !dr.Dormant() })...)
		}
		seen := map[string]bool{}
		for _, dr := range ds {
			if d.mine(dr) {
				d.mu.Lock()
				if dr.Open() {
					d.openDoor(key{ws, dr.Agent}, dr.ID)
				} else {
					d.closeDoor(key{ws, dr.Agent}, dr.ID, true)
				}
				d.mu.Unlock()
				if !seen[dr.Agent] {
					seen[dr.Agent] = true
					d.orphanHeld(ctx, key{ws, dr.Agent})
				}
				d.poke(key{ws, dr.Agent}) // mail may have come while it was down
			}
		}
	}
}

// orphanedNote is why a held copy turned unconfirmed at the daemon's start.
const orphanedNote = "the session held the letter when the Parley daemon stopped; what it did with the letter since cannot reach this daemon (its receipts go to the old daemon's address). Approve it in the session if it is still held; its turn then reports it seen."

// orphanHeld marks unconfirmed the agent's copies that a session held
// when this daemon started: the letters were written by a daemon before
// it, whose reply socket (named by its pid) gets their receipts, so that
// nothing will ever say delivered, denied or expired of them here.
func (d *Doorman) orphanHeld(ctx context.Context, k key) {
	ds, _, err := d.hub.Inbox(ctx, k.ws, k.agent, maxLetterList)
	if err != nil {
		d.log.Warn("doorman: read inbox", "workspace", k.ws, "agent", k.agent, "err", err)
		return
	}
	done := map[string]bool{}
	for _, c := range ds {
		if c.Door != hub.DoorHeld || c.Letter == "" || done[c.Letter] {
			continue
		}
		done[c.Letter] = true
		if _, err := d.hub.MarkLetter(ctx, k.ws, k.agent, c.Letter, hub.LetterChange{Mark: hub.MarkOrphaned, Note: orphanedNote}); err != nil {
			d.log.Warn("doorman: mark a held letter unconfirmed", "agent", k.agent, "letter", c.Letter, "err", err)
		}
	}
}

func (d *Doorman) event(e hub.Event) {
	switch e.Kind {
	case hub.EventMessageSent:
		// Here or on another daemon sharing the store (Remote): the
		// recipient's door may be this daemon's.
		for _, r := range e.Recipients {
			d.poke(key{e.Workspace, r})
		}
	case hub.EventMessageRedelivered:
		d.poke(key{e.Workspace, e.Agent}) // back in the inbox
	case hub.EventResync:
		d.rescanAll() // the other daemons' events may have been missed
	case hub.EventDoorOpened, hub.EventDoorClosed:
		if e.SessionDoor == nil || (d.o.Host != "" && e.SessionDoor.Host != d.o.Host) || e.SessionDoor.UID != d.o.UID {
			return
		}
		k := key{e.Workspace, e.SessionDoor.Agent}
		d.mu.Lock()
		// By id, not by count: the start's list of open doors and an
		// opened event may both name one door.
		if e.Kind == hub.EventDoorOpened {
			d.openDoor(k, e.SessionDoor.ID)
		} else {
			d.closeDoor(k, e.SessionDoor.ID, e.SessionDoor.Dormant())
		}
		d.mu.Unlock()
		if e.Kind == hub.EventDoorOpened {
			d.poke(k) // mail that came before the door
		}
	case hub.EventMessageSeen:
		d.seen(key{e.Workspace, e.Agent}, e.Letter)
	case hub.EventAgentStatus:
		if e.Status == string(hub.StatusReady) {
			d.mu.Lock()
			st := d.agents[key{e.Workspace, e.Agent}]
			waiting := st != nil && st.waitingIdle
			d.mu.Unlock()
			if waiting {
				d.poke(key{e.Workspace, e.Agent})
			}
		}
	}
}

// seen notes that the agent's session started a turn carrying letter: if
// it is the outstanding one, the next may go.
func (d *Doorman) seen(k key, letter string) {
	d.mu.Lock()
	st := d.agents[k]
	mine := st != nil && st.letter != nil && st.letter.id == letter
	if mine {
		st.letter = nil
	}
	d.mu.Unlock()
	if mine {
		d.poke(k)
	}
}

// done ends the outstanding letter id of k (its session's word came, or
// the bound passed): the next may go.
func (d *Doorman) done(k key, id string) {
	d.mu.Lock()
	st := d.agents[k]
	mine := st != nil && st.letter != nil && st.letter.id == id
	if mine {
		st.letter = nil
	}
	d.mu.Unlock()
	if mine {
		d.poke(k)
	}
}

// poke asks for a look at the agent's inbox, unless one runs: then it runs
// again after.
func (d *Doorman) poke(k key) {
	d.mu.Lock()
	if len(d.doors[k]) == 0 && len(d.dormant[k]) == 0 {
		d.mu.Unlock()
		return
	}
	st := d.agents[k]
	if st == nil {
		st = &agentState{}
		d.agents[k] = st
	}
	if st.working {
		st.again = true
		d.mu.Unlock()
		return
	}
	st.working = true
	d.working++
	d.wg.Add(1)
	d.mu.Unlock()
	go d.work(k, st)
}

func (d *Doorman) work(k key, st *agentState) {
	defer d.wg.Done()
	for {
		if d.ctx.Err() != nil {
			d.mu.Lock()
			st.working = false
			d.working--
			d.mu.Unlock()
			return
		}
		d.look(k, st)
		d.mu.Lock()
		if !st.again {
			st.working = false
			d.working--
			d.mu.Unlock()
			return
		}
		st.again = false
		d.mu.Unlock()
	}
}

// maxLetterList bounds what one look reads of the inbox.
const maxLetterList = 100

// look writes a letter for the agent's mail that nothing reached yet, if
// the rules allow one now.
func (d *Doorman) look(k key, st *agentState) {
	ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	log := d.log.With("workspace", k.ws, "agent", k.agent)
	d.mu.Lock()
	if l := st.letter; l != nil && (l.held || time.Since(l.at) < d.o.SeenTimeout) {
		d.mu.Unlock()
		return // one letter per burst: the agent will read the rest; a held one waits for its person
	}
	st.letter = nil
	d.mu.Unlock()
	if d.o.TakesMail != nil && d.o.TakesMail(k.ws, k.agent) {
		return
	}
	if d.hub.Waiters(k.ws, k.agent) > 0 {
		return // a blocked wait takes what comes
	}
	ds, _, err := d.hub.Inbox(ctx, k.ws, k.agent, maxLetterList)
	if err != nil {
		log.Warn("doorman: read inbox", "err", err)
		return
	}
	var fresh []*hub.Delivery
	mode := hub.DeliverQueue
	for _, c := range ds {
		m := c.Message.Mode()
		if c.WokeVia != "" || m == hub.DeliverQueue {
			continue // something reached it already, or it wakes nobody
		}
		fresh = append(fresh, c)
		if urgency(m) > urgency(mode) {
			mode = m
		}
	}
	if len(fresh) == 0 {
		return
	}
	doors, err := d.doorsOf(ctx, k)
	if err != nil {
		log.Warn("doorman: list doors", "err", err)
		return
	}
	var unloaded *hub.SessionDoor // the first door whose thread is not loaded
	for _, dr := range doors {
		if unloaded != nil && !dr.Open() {
			break // the newest dormant thread is the agent's; older ones would say the same
		}
		done, retry, notLoaded := d.deliver(ctx, k, st, dr, fresh, mode)
		if done {
			return
		}
		if retry {
			d.retryLater(k, st)
			return
		}
		if notLoaded && unloaded == nil {
			unloaded = dr
		}
		// The door is gone, refused, or its thread is not loaded: the
		// next one, if any.
	}
	if unloaded != nil {
		// Nothing to write until the thread is back (its door opens
		// again), or the agent's next path (a hook at its next session or
		// turn) brings the mail.
		d.notLoaded(ctx, k, d.hub.NewID(), unloaded, fresh)
	}
}

// doorsOf lists the doors of k the doorman may write: the open ones,
// newest first, then the dormant ones, newest first.
func (d *Doorman) doorsOf(ctx context.Context, k key) ([]*hub.SessionDoor, error) {
	open, err := d.hub.Doors(ctx, k.ws, k.agent, false)
	if err != nil {
		return nil, err
	}
	var dormant []*hub.SessionDoor
	d.mu.Lock()
	some := len(d.dormant[k]) > 0
	d.mu.Unlock()
	if some {
		all, err := d.hub.Doors(ctx, k.ws, k.agent, true)
		if err != nil {
			return nil, err
		}
		dormant = slices.DeleteFunc(all, func(dr *hub.SessionDoor) bool { return !dr.Dormant() })
	}
	byNewest := func(a, b *hub.SessionDoor) int { return b.RefreshedAt.Compare(a.RefreshedAt) }
	slices.SortStableFunc(open, byNewest)
	slices.SortStableFunc(dormant, byNewest)
	return slices.DeleteFunc(append(open, dormant...), func(dr *hub.SessionDoor) bool { return !d.mine(dr) }), nil
}

// maxFailures closes a door that failed this many letters in a row.
const maxFailures = 3

// urgency orders delivery modes.
func urgency(m hub.DeliverMode) int {
	switch m {
	case hub.DeliverSteer, hub.DeliverInterrupt:
		return 2
	case hub.DeliverIdle:
		return 1
	}
	return 0
}

func (d *Doorman) retryLater(k key, st *agentState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st.retry != nil {
		st.retry.Stop()
	}
	st.retry = time.AfterFunc(d.o.Retry, func() { d.poke(k) })
}

// deliver writes the letter through one door. done: written, or nothing to
// do now (it waits for idle); retry: a failure worth trying again;
// notLoaded: the door's Codex thread is not loaded (the door is dormant
// now) and nothing was written; none: the door is gone or refused it, try
// another.
func (d *Doorman) deliver(ctx context.Context, k key, st *agentState, dr *hub.SessionDoor, fresh []*hub.Delivery, mode hub.DeliverMode) (done, retry, notLoaded bool) {
	log := d.log.With("workspace", k.ws, "agent", k.agent, "door", dr.Kind, "session", dr.Session)
	id := d.hub.NewID()
	text := Render(letterOf(k, id, fresh))
	via := dr.Kind.WakePath()
	var err error
	var watch func(context.Context) // follows what the client says of it
	switch dr.Kind {
	case hub.DoorClaude:
		if mode == hub.DeliverIdle && !d.idleNow(ctx, k, st, dr) {
			return true, false, false // written when the session is idle
		}
		c := &door.Claude{Socket: dr.Address, Token: dr.Token}
		var rc *door.Receipts
		rc, err = c.Write(ctx, d.claudeLetter(text, mode, dr))
		if rc != nil {
			watch = func(ctx context.Context) { d.watchClaude(ctx, k, id, dr, rc, expiries(fresh)) }
		}
	case hub.DoorCodex:
		c := &door.Codex{Home: dr.Address, Thread: dr.Session, ClientName: "parley", ClientVersion: d.o.Version, Resume: d.o.CodexResume}
		var steered bool
		if dr.Open() && (mode == hub.DeliverSteer || mode == hub.DeliverInterrupt) {
			steered, err = c.Steer(ctx, text)
		}
		if err == nil && !steered {
			var q *door.Queued
			q, err = c.Queue(ctx, text)
			if err == nil {
				if q.Resumed {
					log.Info("doorman: resumed a Codex thread that was not loaded", "thread", dr.Session)
				}
				watch = func(ctx context.Context) {
					defer q.Close()
					switch err := q.Started(ctx); {
					case err == nil:
						// A turn of the thread carries the letter.
						d.mark(k, id, hub.LetterChange{Mark: hub.MarkSeen})
					case door.IsDropped(err):
						d.mark(k, id, hub.LetterChange{Mark: hub.MarkBounced, Note: "the Codex queue dropped the letter: it left the queue of thread " + dr.Session + " and no turn carried it"})
					}
					d.done(k, id)
				}
			}
		}
	case hub.DoorQwen:
		watch, err = d.writeQwen(ctx, k, id, text, dr)
	case hub.DoorOpencode:
		watch, err = d.writeOpencode(ctx, k, id, text, dr)
	default:
		return false, false, false
	}
	switch {
	case door.IsNotLoaded(err):
		if dr.Open() {
			log.Info("doorman: the Codex thread is not loaded: its door is dormant", "err", err)
			d.hub.CloseDoor(context.WithoutCancel(ctx), k.ws, dr.ID, hub.DoorClosedNotLoaded)
		}
		return false, false, true
	case door.IsGone(err):
		log.Info("doorman: door gone", "err", err)
		d.hub.CloseDoor(context.WithoutCancel(ctx), k.ws, dr.ID, hub.DoorClosedGone)
		return false, false, false
	case door.IsRefused(err):
		log.Warn("doorman: the client refused the letter", "err", err)
		d.hub.CloseDoor(context.WithoutCancel(ctx), k.ws, dr.ID, hub.DoorClosedRefused)
		return false, false, false
	case err != nil:
		d.mu.Lock()
		st.failed++
		failed := st.failed
		d.mu.Unlock()
		if failed >= maxFailures {
			// A door that fails every time is as good as gone.
			log.Warn("doorman: closing a door that keeps failing", "failures", failed, "err", err)
			d.hub.CloseDoor(context.WithoutCancel(ctx), k.ws, dr.ID, hub.DoorClosedGone)
			d.mu.Lock()
			st.failed = 0
			d.mu.Unlock()
			return false, false, false
		}
		log.Warn("doorman: write a letter", "err", err)
		return false, true, false
	}
	ids := make([]string, len(fresh))
	for i, c := range fresh {
		ids[i] = c.MessageID
	}
	now := time.Now()
	d.mu.Lock()
	st.failed = 0
	st.letter = &letter{id: id, at: now, door: dr}
	st.waitingIdle = false
	d.mu.Unlock()
	if _, err := d.hub.Handed(context.WithoutCancel(ctx), k.ws, k.agent, ids, via, id); err != nil {
		log.Warn("doorman: record the letter", "err", err)
	}
	log.Info("doorman: letter written", "letter", id, "messages", len(fresh), "mode", mode)
	if watch != nil {
		d.wg.Add(1)
		d.following.Add(1)
		go func() {
			defer d.wg.Done()
			defer d.following.Add(-1)
			watch(d.ctx)
		}()
	} else {
		// Nothing will be said of it: the next letter waits the bound.
		time.AfterFunc(d.o.SeenTimeout, func() { d.done(k, id) })
	}
	return true, false, false
}

// notLoadedNote is why a letter did not go to a Codex thread.
const notLoadedNote = "queued: thread not loaded. The Codex thread %s is not loaded on its app-server (a `codex exec` run, or a session the app-server closed): a letter queued there would not run until a client resumes it, so none was written. The message waits in the inbox: `codex resume %s` brings the thread back and its letter; codex_resume = true in config.toml lets Parley resume it on the app-server."

// notLoaded marks the copies no letter could go for, because the Codex
// thread is not loaded (once each: a copy marked already is left).
func (d *Doorman) notLoaded(ctx context.Context, k key, id string, dr *hub.SessionDoor, fresh []*hub.Delivery) {
	var ids []string
	for _, c := range fresh {
		if c.Door != hub.DoorNotLoaded {
			ids = append(ids, c.MessageID)
		}
	}
	if len(ids) == 0 {
		return
	}
	d.log.Info("doorman: the Codex thread is not loaded; no letter", "workspace", k.ws, "agent", k.agent, "thread", dr.Session, "messages", len(ids))
	if _, err := d.hub.NotLoaded(context.WithoutCancel(ctx), k.ws, k.agent, ids, id, fmt.Sprintf(notLoadedNote, dr.Session, dr.Session)); err != nil {
		d.log.Warn("doorman: mark copies not loaded", "agent", k.agent, "err", err)
	}
}

// mark records what the client said of letter id.
func (d *Doorman) mark(k key, id string, ch hub.LetterChange) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(d.ctx), 10*time.Second)
	defer cancel()
	if _, err := d.hub.MarkLetter(ctx, k.ws, k.agent, id, ch); err != nil {
		d.log.Warn("doorman: record what the client said of a letter", "agent", k.agent, "letter", id, "mark", ch.Mark, "err", err)
	}
}

// watchClaude follows what a Claude Code session says of letter id until
// its fate is known: held (a person decides: the next letter waits, and the
// other wake paths take over), delivered (released: handed again), denied
// (declined), expired, refused or dropped (bounced); or the session goes
// idle, its turn over, and the letter is unconfirmed unless its hooks said
// the turn carried it (the mark then changes nothing). A letter not held
// that hears nothing within SeenTimeout lets the next one go.
func (d *Doorman) watchClaude(ctx context.Context, k key, id string, dr *hub.SessionDoor, rc *door.Receipts, expires map[string]time.Time) {
	defer rc.Close()
	bound := time.NewTimer(d.o.SeenTimeout)
	defer bound.Stop()
	var grace <-chan time.Time
	held := false
	// While held, the next time to live of the letter's messages to end.
	var expiry *time.Timer
	var expired <-chan time.Time
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	armExpiry := func() {
		if expiry != nil {
			expiry.Stop()
			expiry, expired = nil, nil
		}
		if !held || len(expires) == 0 {
			return
		}
		var next time.Time
		for _, t := range expires {
			if next.IsZero() || t.Before(next) {
				next = t
			}
		}
		expiry = time.NewTimer(time.Until(next))
		expired = expiry.C
	}
	setHeld := func(v bool) {
		held = v
		d.mu.Lock()
		if st := d.agents[k]; st != nil && st.letter != nil && st.letter.id == id {
			st.letter.held = v
		}
		d.mu.Unlock()
		armExpiry()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-expired:
			// A message's time to live ended while the session held
			// its letter: its copy bounces (the sender is told); the
			// rest stay held.
			var ids []string
			for m, t := range expires {
				if !time.Now().Before(t) {
					ids = append(ids, m)
					delete(expires, m)
				}
			}
			slices.Sort(ids)
			if _, err := d.hub.HoldExpired(context.WithoutCancel(ctx), k.ws, k.agent, id, ids, HoldExpiredNote); err != nil {
				d.log.Warn("doorman: bounce held copies whose time to live ended", "agent", k.agent, "letter", id, "err", err)
			}
			if len(expires) == 0 {
				d.done(k, id)
				return
			}
			armExpiry()
		case <-bound.C:
			if !held {
				d.done(k, id)
				return
			}
		case <-grace:
			d.mark(k, id, hub.LetterChange{Mark: hub.MarkUnconfirmed, Note: "the session went idle and said nothing of the letter"})
			d.done(k, id)
			return
		case r, ok := <-rc.C:
			if !ok {
				d.done(k, id)
				return
			}
			switch r.Status {
			case door.ReceiptHeld:
				setHeld(true)
				d.mark(k, id, hub.LetterChange{Mark: hub.MarkHeld, Note: heldNote(r)})
			case door.ReceiptDelivered:
				setHeld(false)
				d.mark(k, id, hub.LetterChange{Mark: hub.MarkReleased})
				bound.Reset(d.o.SeenTimeout)
			case door.ReceiptDenied:
				d.mark(k, id, hub.LetterChange{Mark: hub.MarkDeclined, Note: "declined in the Claude Code session: " + r.Reason})
				d.done(k, id)
				return
			case door.ReceiptExpired, door.ReceiptDropped:
				what := "the Claude Code session let the held letter expire: "
				if r.Status == door.ReceiptDropped {
					what = "the Claude Code session dropped the letter: "
				}
				d.mark(k, id, hub.LetterChange{Mark: hub.MarkBounced, Note: what + r.Reason})
				d.done(k, id)
				return
			case door.ReceiptRefused:
				d.mark(k, id, hub.LetterChange{Mark: hub.MarkBounced, Note: "the Claude Code session refuses letters: " + r.Reason})
				d.hub.CloseDoor(context.WithoutCancel(ctx), k.ws, dr.ID, hub.DoorClosedRefused)
				d.done(k, id)
				return
			case door.ReceiptIdle:
				if !held && grace == nil {
					grace = time.After(d.o.Unconfirmed)
				}
			}
		}
	}
}

// HoldExpiredNote is why a held copy bounced when its message's time to
// live ended.
const HoldExpiredNote = "hold expired: the message's time to live ended while the session held its letter for a person"

// expiries is when each of the copies' messages' time to live ends.
func expiries(cs []*hub.Delivery) map[string]time.Time {
	out := map[string]time.Time{}
	for _, c := range cs {
		if c.Message != nil && !c.Message.ExpiresAt.IsZero() {
			out[c.MessageID] = c.Message.ExpiresAt
		}
	}
	return out
}

// heldNote is why a session holds a letter, and how to let letters in.
func heldNote(r door.Receipt) string {
	return r.Reason + " Approve it in the session (Deliver), or start the session with --settings '{\"crossSessionInbound\":\"accept\"}', or choose deliver by default in /config → Messaging."
}

// claudeLetter is the letter for a Claude Code session: a critical message
// rides beside the running tool call's result, the rest in the next model
// request; its sender address, where this process can listen in the
// session's socket directory, gets the session's receipts.
func (d *Doorman) claudeLetter(text string, mode hub.DeliverMode, dr *hub.SessionDoor) door.ClaudeLetter {
	l := door.ClaudeLetter{Text: text, Priority: door.PriorityNext}
	if mode == hub.DeliverInterrupt {
		l.Priority = door.PriorityNow
	}
	l.Reply = d.replyListener(filepath.Dir(dr.Address))
	return l
}

// replyListener is this process's reply socket in dir, opened the first
// time; nil where it cannot be.
func (d *Doorman) replyListener(dir string) *door.Listener {
	if d.o.NoReplies || runtime.GOOS == "windows" {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if l, ok := d.replies[dir]; ok {
		return l
	}
	l, err := door.Listen(dir)
	if err != nil {
		d.log.Debug("doorman: no receipts", "dir", dir, "err", err)
		l = nil
	}
	d.replies[dir] = l
	return l
}

// idleNow reports whether a letter of mode idle may go to the Claude Code
// session now: its agent is not at work (its hooks say), or its client said
// since that it is idle. Else it asks the client to say when it is idle,
// and the letter waits for that (or for the agent's status to turn ready).
func (d *Doorman) idleNow(ctx context.Context, k key, st *agentState, dr *hub.SessionDoor) bool {
	a, err := d.hub.Agent(ctx, k.ws, k.agent)
	d.mu.Lock()
	idleAt := st.idleAt
	d.mu.Unlock()
	if err != nil || a.Status != hub.StatusWork || idleAt.After(a.LastSeen) {
		return true
	}
	d.mu.Lock()
	already := st.waitingIdle
	st.waitingIdle = true
	d.mu.Unlock()
	if already {
		return false
	}
	l := d.replyListener(filepath.Dir(dr.Address))
	if l == nil {
		// Without notices, the agent's Stop hook (status ready) or the
		// timeout brings the letter.
		time.AfterFunc(d.o.SeenTimeout, func() { d.idleSeen(k) })
		return false
	}
	c := &door.Claude{Socket: dr.Address, Token: dr.Token}
	rc, err := c.NotifyIdle(ctx, l)
	if err != nil {
		d.mu.Lock()
		st.waitingIdle = false
		d.mu.Unlock()
		return true // let the letter itself find out
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer rc.Close()
		select {
		case _, ok := <-rc.C:
			if ok {
				d.idleSeen(k)
			}
		case <-d.ctx.Done():
		}
	}()
	return false
}

// idleSeen notes that the agent's session is idle and looks again.
func (d *Doorman) idleSeen(k key) {
	d.mu.Lock()
	if st := d.agents[k]; st != nil {
		st.idleAt = time.Now()
		st.waitingIdle = false
	}
	d.mu.Unlock()
	d.poke(k)
}
