package daemon

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/hub"
)

// codexSessions closes the door of a Codex thread whose session ended: a
// thread that Codex's app-server unloaded (after /quit, once no window
// shows it: door.CodexWatch), or whose app-server is gone. A door whose
// thread the app-server knows and has not loaded when the door opens or
// the watch starts (a `codex exec` thread) is made dormant instead
// (hub.DoorClosedNotLoaded): the doorman may resume it (codex_resume), and
// says why no letter went otherwise. It watches each
// CODEX_HOME that this daemon's user has open Codex doors in, on this
// machine, with one connection to its app-server, and stops when the last
// door there closes. So no letter starts a turn that nobody sees.
type codexSessions struct {
	hub     *hub.Hub
	log     *slog.Logger
	host    string
	uid     int
	version string

	mu    sync.Mutex
	ctx   context.Context
	homes map[string]*codexHome // by CODEX_HOME
}

// codexHome is one CODEX_HOME's open doors and its watch.
type codexHome struct {
	doors map[string]*hub.SessionDoor // by door id
	stop  context.CancelFunc
}

// startCodexSessions watches until ctx ends.
func (d *Daemon) startCodexSessions(ctx context.Context) {
	s := &codexSessions{hub: d.hub, log: d.log.With("subsystem", "codex-sessions"), host: d.host, uid: os.Getuid(),
		version: d.cfg.Version, ctx: ctx, homes: map[string]*codexHome{}}
	unsub := d.hub.Subscribe(s.event)
	go func() {
		<-ctx.Done()
		unsub()
	}()
	go s.load(ctx)
}

// mine reports whether the door is a Codex door this daemon writes.
func (s *codexSessions) mine(dr *hub.SessionDoor) bool {
	return dr != nil && dr.Kind == hub.DoorCodex && dr.Open() && (s.host == "" || dr.Host == s.host) && dr.UID == s.uid
}

// load learns the open Codex doors of every workspace: their threads may
// have closed while no daemon watched.
func (s *codexSessions) load(ctx context.Context) {
	wss, err := s.hub.Workspaces(ctx)
	if err != nil {
		s.log.Warn("list workspaces", "err", err)
		return
	}
	for _, ws := range wss {
		ds, err := s.hub.Doors(ctx, ws, "", false)
		if err != nil {
			continue
		}
		for _, dr := range ds {
			if s.mine(dr) {
				s.opened(dr, false)
			}
		}
	}
}

func (s *codexSessions) event(e hub.Event) {
	switch e.Kind {
	case hub.EventDoorOpened:
		if s.mine(e.SessionDoor) {
			s.opened(e.SessionDoor, true)
		}
	case hub.EventDoorClosed:
		if dr := e.SessionDoor; dr != nil && dr.Kind == hub.DoorCodex {
			s.closedDoor(dr)
		}
	}
}

// opened adds the door to its CODEX_HOME's watch, starting the watch if
// none runs. A door that opens while the watch runs is looked at once: its
// thread may never have been loaded (a `codex exec` thread, not the
// app-server's), and then no notice of it will come.
func (s *codexSessions) opened(dr *hub.SessionDoor, fresh bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	h := s.homes[dr.Address]
	if h == nil {
		h = &codexHome{doors: map[string]*hub.SessionDoor{}}
		s.homes[dr.Address] = h
	}
	_, known := h.doors[dr.ID]
	h.doors[dr.ID] = dr
	if h.stop == nil {
		ctx, cancel := context.WithCancel(s.ctx)
		h.stop = cancel
		go s.watch(ctx, dr.Address)
	} else if fresh && !known {
		go s.look(dr)
	}
}

// closedDoor forgets a door that closed; the last of its CODEX_HOME's
// ends the watch.
func (s *codexSessions) closedDoor(dr *hub.SessionDoor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.homes[dr.Address]
	if h == nil {
		return
	}
	delete(h.doors, dr.ID)
	if len(h.doors) == 0 {
		if h.stop != nil {
			h.stop()
		}
		delete(s.homes, dr.Address)
	}
}

// doorsOf lists the open doors of a CODEX_HOME, of thread if not "".
func (s *codexSessions) doorsOf(home, thread string) []*hub.SessionDoor {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.homes[home]
	if h == nil {
		return nil
	}
	var out []*hub.SessionDoor
	for _, dr := range h.doors {
		if thread == "" || dr.Session == thread {
			out = append(out, dr)
		}
	}
	return out
}

// end closes the doors, saying why.
func (s *codexSessions) end(ds []*hub.SessionDoor, reason string) {
	for _, dr := range ds {
		if _, err := s.hub.CloseDoor(context.WithoutCancel(s.ctx), dr.Workspace, dr.ID, reason); err != nil {
			s.log.Warn("close the door of an ended Codex session", "agent", dr.Agent, "thread", dr.Session, "err", err)
			continue
		}
		s.log.Info("a Codex session ended: its door closed", "agent", dr.Agent, "thread", dr.Session, "why", reason)
		s.closedDoor(dr)
	}
}

// Watch retries after a lost connection, from retryMin doubling to
// retryMax.
const (
	codexWatchRetryMin = time.Second
	codexWatchRetryMax = 30 * time.Second
)

// watch keeps a CODEX_HOME's watch until ctx ends (its last door closed,
// or the daemon stops), closing the doors of the threads that close.
func (s *codexSessions) watch(ctx context.Context, home string) {
	w := &door.CodexWatch{Home: home, ClientName: "parley", ClientVersion: s.version}
	wait := codexWatchRetryMin
	for ctx.Err() == nil {
		var threads []string
		for _, dr := range s.doorsOf(home, "") {
			threads = append(threads, dr.Session)
		}
		start := time.Now()
		w.NotLoaded = func(thread string) { s.end(s.doorsOf(home, thread), hub.DoorClosedNotLoaded) }
		err := w.Watch(ctx, threads, func(thread string) {
			s.end(s.doorsOf(home, thread), hub.DoorClosedSessionEnded)
		})
		switch {
		case ctx.Err() != nil:
			return
		case door.IsGone(err):
			// No app-server: every session there is over (and a letter
			// queued would wait unseen until some codex resumed it).
			s.end(s.doorsOf(home, ""), hub.DoorClosedGone)
			return
		}
		s.log.Warn("watch Codex's app-server", "codex_home", home, "err", err)
		if time.Since(start) > codexWatchRetryMax {
			wait = codexWatchRetryMin
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, codexWatchRetryMax)
	}
}

// look makes dormant a door whose thread is not loaded on its app-server
// now (a `codex exec` thread: its hooks register the door while the run
// goes on): the doorman queues no letter there unless codex_resume lets it
// resume the thread, and prefers the agent's live doors.
func (s *codexSessions) look(dr *hub.SessionDoor) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	st, err := (&door.Codex{Home: dr.Address, Thread: dr.Session, ClientName: "parley", ClientVersion: s.version}).Status(ctx)
	switch {
	case door.IsGone(err):
		s.end([]*hub.SessionDoor{dr}, hub.DoorClosedGone)
	case door.IsRefused(err):
		s.end([]*hub.SessionDoor{dr}, hub.DoorClosedSessionEnded)
	case err == nil && st == "notLoaded":
		s.end([]*hub.SessionDoor{dr}, hub.DoorClosedNotLoaded)
	}
}
