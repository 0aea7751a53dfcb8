package hub

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Fencing. Daemons on a shared store hold claims and reservations for their
// clients, and a daemon that misses its heartbeat for its bound is taken for
// dead by the others, who give back what it held (liveness.go). A daemon
// that merely lost its store (a network cut, a long outage) lives on, and
// its clients work on: so it keeps count of its own beats.
//   - When it has not beaten for nearly its bound, it may be reclaimed any
//     moment: it tells its clients at once (on its event stream) that each
//     claim it holds may be lost (task.at_risk) and its reservations are to
//     be taken as ended (reservations.changed, "ended").
//   - When it beats again, the store says whether the others reclaimed it:
//     if so, it says so (daemon.store "reclaimed"), and a complete or renew
//     of a task it held is refused with that reason; if not, that all is
//     as it was (daemon.store "restored").
//   - A daemon reclaims the others only once it has beaten without a break
//     for a whole bound: after an outage of the store that cut every daemon
//     off, each beats again before anyone judges the others, so nobody is
//     taken for dead for the store's own silence, and no task runs twice.

// EventDaemonStore tells this daemon's clients of its standing on a shared
// store: Status "cut" (it has not reached the store for nearly its bound),
// "reclaimed" (the others took it for dead meanwhile and gave back what it
// held), "restored" (it reached the store again in time: nothing was lost).
// Text says what it means for them. It never leaves the daemon.
const EventDaemonStore EventKind = "daemon.store"

// EventTaskAtRisk tells the claimant (Agent) of task MessageID of queue
// Recipients[0] that its claim may be lost: the daemon it came through has
// not reached the store for nearly its bound.
const EventTaskAtRisk EventKind = "task.at_risk"

// fence is this daemon's standing: its beats, and what it holds for its
// clients as its own events told (claims, reservations).
type fence struct {
	mu        sync.Mutex
	ok        time.Time // its last beat that reached the store
	streak    time.Time // the first beat of the unbroken run up to ok
	cut       bool      // it told its clients it was cut off
	reclaimed time.Time // when it learned the others had reclaimed it

	claims map[string]heldClaim    // by workspace and task id
	resv   map[string]*Reservation // by id
}

type heldClaim struct{ ws, agent, task, queue string }

// missed records a beat that did not reach the store at now, and reports
// whether the daemon is now cut off, for the first time since it last beat:
// another missed beat (they come a third of the bound apart) and the others
// may take it for dead.
func (f *fence) missed(now time.Time, bound time.Duration) (newly bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streak = time.Time{}
	if f.cut || f.ok.IsZero() || now.Sub(f.ok)+bound/3 < bound {
		return false
	}
	f.cut = true
	return true
}

// beaten records a beat that reached the store at now (reclaimed: the
// others had taken the daemon for dead), and reports whether it had told
// its clients it was cut off.
func (f *fence) beaten(now time.Time, reclaimed bool) (wasCut bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.streak.IsZero() || now.Sub(f.ok) > time.Hour {
		f.streak = now
	}
	f.ok = now
	wasCut, f.cut = f.cut, false
	if reclaimed {
		f.reclaimed = now
		// What it held is given back: it holds nothing.
		clear(f.claims)
		clear(f.resv)
	}
	return wasCut
}

// mayReclaim reports whether the daemon has beaten without a break for a
// whole bound, and lately.
func (f *fence) mayReclaim(now time.Time, bound time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.streak.IsZero() && now.Sub(f.streak) >= bound && now.Sub(f.ok) < bound
}

// lostWhy says why the daemon's claims ended, if it was reclaimed lately.
func (f *fence) lostWhy() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reclaimed.IsZero() || time.Since(f.reclaimed) > time.Hour {
		return ""
	}
	return fmt.Sprintf("the daemon it was claimed through lost its store for longer than its daemon_timeout and the other daemons took it for dead (it learned so at %s), so its claims went back",
		f.reclaimed.UTC().Format(time.RFC3339))
}

// track keeps what this daemon holds for its clients, from the events it
// publishes (and the others' that end its holdings: a reclaim).
func (f *fence) track(e Event) {
	switch e.Kind {
	case EventTaskClaimed, EventTaskCompleted, EventTaskReleased, EventReservations:
	default:
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claims == nil {
		f.claims, f.resv = map[string]heldClaim{}, map[string]*Reservation{}
	}
	key := e.Workspace + "\x00" + e.MessageID
	switch e.Kind {
	case EventTaskClaimed:
		if !e.Remote && len(e.Recipients) == 1 {
			f.claims[key] = heldClaim{e.Workspace, e.Agent, e.MessageID, e.Recipients[0]}
		}
	case EventTaskCompleted, EventTaskReleased:
		delete(f.claims, key)
	case EventReservations:
		for _, r := range e.Reservations {
			switch {
			case e.Remote:
				if e.Change != "granted" && e.Change != "renewed" {
					delete(f.resv, r.ID)
				}
			case e.Change == "granted" || e.Change == "renewed":
				f.resv[r.ID] = r
			default:
				delete(f.resv, r.ID)
			}
		}
	}
}

// held lists what the daemon holds: its claims, and its reservations live
// at now, by workspace.
func (f *fence) held(now time.Time) ([]heldClaim, map[string][]*Reservation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	claims := make([]heldClaim, 0, len(f.claims))
	for _, c := range f.claims {
		claims = append(claims, c)
	}
	sort.Slice(claims, func(i, j int) bool { return claims[i].task < claims[j].task })
	resv := map[string][]*Reservation{}
	for id, r := range f.resv {
		if !r.ExpiresAt.After(now) {
			delete(f.resv, id)
			continue
		}
		resv[r.Workspace] = append(resv[r.Workspace], r)
	}
	for _, rs := range resv {
		sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	}
	return claims, resv
}

// workspaces are the workspaces this daemon serves clients of: with a
// session here, a claim or a reservation held through it.
func (h *Hub) fenceWorkspaces(claims []heldClaim, resv map[string][]*Reservation) []string {
	set := map[string]bool{}
	h.mu.Lock()
	for k, n := range h.sessions {
		if n > 0 {
			set[k.ws] = true
		}
	}
	h.mu.Unlock()
	for _, c := range claims {
		set[c.ws] = true
	}
	for ws := range resv {
		set[ws] = true
	}
	out := make([]string, 0, len(set))
	for ws := range set {
		out = append(out, ws)
	}
	sort.Strings(out)
	return out
}

// tellCut tells this daemon's clients, at once, that it has not reached the
// store for nearly its bound: each claim it holds may be lost, and its
// reservations are to be taken as ended.
func (h *Hub) tellCut(now time.Time) {
	claims, resv := h.fence.held(now)
	h.log.Warn("this daemon has not reached the store for nearly its daemon_timeout: the other daemons may take it for dead and give back its claims and reservations; told its clients",
		"dead_after", h.deadAfter, "claims", len(claims), "reservations", len(resv))
	for _, ws := range h.fenceWorkspaces(claims, resv) {
		h.publishLocal(Event{Kind: EventDaemonStore, Workspace: ws, Time: now.UTC(), Status: "cut",
			Text: "This daemon has not reached its store for nearly its daemon_timeout (" + h.deadAfter.String() + "): the other daemons may take it for dead. A task claimed through it may be lost (another claimant may get it), and its file reservations are to be taken as ended."})
	}
	for _, c := range claims {
		h.publishLocal(Event{Kind: EventTaskAtRisk, Workspace: c.ws, Time: now.UTC(), Agent: c.agent, MessageID: c.task, Recipients: []string{c.queue},
			Text: "Your claim on task " + c.task + " may be lost: this daemon has not reached its store for nearly its daemon_timeout. Do not finish it twice: complete it once the daemon is back, and if that is refused, the task went to another claimant."})
	}
	for ws, rs := range resv {
		h.publishLocal(Event{Kind: EventReservations, Workspace: ws, Time: now.UTC(), Change: "ended", Reservations: rs,
			Text: "Reservations held through a daemon cut off from its store: take them as ended, and reserve again when it is back."})
	}
}

// tellReclaimed says that the others took this daemon for dead meanwhile.
func (h *Hub) tellReclaimed(now time.Time) {
	h.log.Warn("this daemon was taken for dead (it missed its heartbeat for longer than its bound): the other daemons gave back its claims and reservations; a complete of a task claimed before is refused; its sessions carry on", "dead_after", h.deadAfter)
	for _, ws := range h.fenceWorkspaces(nil, nil) {
		h.publishLocal(Event{Kind: EventDaemonStore, Workspace: ws, Time: now.UTC(), Status: "reclaimed",
			Text: "This daemon was cut off from its store for longer than its daemon_timeout and the other daemons took it for dead: the tasks claimed through it went back to their queues and its file reservations ended. Claim and reserve again."})
	}
}

// tellRestored says that the daemon reached its store again in time.
func (h *Hub) tellRestored(now time.Time) {
	claims, resv := h.fence.held(now)
	h.log.Info("this daemon reached its store again before the others took it for dead: its claims and reservations stand")
	for _, ws := range h.fenceWorkspaces(claims, resv) {
		h.publishLocal(Event{Kind: EventDaemonStore, Workspace: ws, Time: now.UTC(), Status: "restored",
			Text: "This daemon reached its store again in time: its claims and file reservations stand."})
	}
	for ws, rs := range resv {
		h.publishLocal(Event{Kind: EventReservations, Workspace: ws, Time: now.UTC(), Change: "restored", Reservations: rs})
	}
}
