package hub

import (
	"context"
	"slices"
	"sync"
	"time"
)

// What people watch of a workspace's work (the dashboard's Queues and
// Leases views): its tasks not done and who holds them, and the
// reservations that ran into others'.

// TaskView is a task not done: its copy (with its message) and, while it
// is claimed, the agent that holds it.
type TaskView struct {
	*Delivery
	Claimant string // "" while it waits, or when the holder is not an agent of the workspace
}

// maxTaskViews bounds the tasks one view lists.
const maxTaskViews = 1000

// OpenTasks lists ws's tasks that are not done, by queue then inbox order,
// with who holds the claimed ones.
func (h *Hub) OpenTasks(ctx context.Context, ws string) ([]TaskView, error) {
	const op = "open tasks"
	ds, err := h.store.OpenTasks(ctx, ws, maxTaskViews)
	if err != nil {
		return nil, withOp(op, err)
	}
	as, err := h.store.Agents(ctx, ws)
	if err != nil {
		return nil, withOp(op, err)
	}
	byHash := make(map[string]string, len(as))
	for _, a := range as {
		byHash[NameHash(ws, a.Name)] = a.Name
	}
	out := make([]TaskView, len(ds))
	for i, d := range ds {
		out[i] = TaskView{Delivery: d}
		if d.State == Delivered {
			out[i].Claimant = byHash[ReaderHash(d.Reader)]
		}
	}
	return out, nil
}

// Clash is a reservation, or an edit, that ran into other agents'
// reservations: who wanted what, and whose stood in the way.
type Clash struct {
	Workspace string
	Agent     string // who asked
	Op        string // "reserve" (refused), or "check" (an edit hook's check found it held)
	Conflicts []ReservationConflict
	At        time.Time
}

// conflictsKept bounds the conflicts remembered per workspace.
const conflictsKept = 50

// conflictLog is the recent conflicts of each workspace, in memory.
type conflictLog struct {
	mu sync.Mutex
	m  map[string][]Clash
}

// noteConflicts remembers a conflict and announces it (reservations.changed,
// Change "conflict", Reservations the ones that stood in the way).
func (h *Hub) noteConflicts(ws, agent, op string, cs []ReservationConflict) {
	if len(cs) == 0 {
		return
	}
	c := Clash{Workspace: ws, Agent: agent, Op: op, Conflicts: cs, At: h.now().UTC()}
	h.conflicts.mu.Lock()
	if h.conflicts.m == nil {
		h.conflicts.m = map[string][]Clash{}
	}
	l := append(h.conflicts.m[ws], c)
	if len(l) > conflictsKept {
		l = slices.Clone(l[len(l)-conflictsKept:])
	}
	h.conflicts.m[ws] = l
	h.conflicts.mu.Unlock()
	held := make([]*Reservation, 0, len(cs))
	for _, x := range cs {
		if !slices.Contains(held, x.Held) {
			held = append(held, x.Held)
		}
	}
	h.publish(Event{Kind: EventReservations, Workspace: ws, Agent: agent, Change: "conflict", Reservations: held})
}

// RecentConflicts returns the conflicts this daemon saw in ws, oldest first.
func (h *Hub) RecentConflicts(ws string) []Clash {
	h.conflicts.mu.Lock()
	defer h.conflicts.mu.Unlock()
	return slices.Clone(h.conflicts.m[ws])
}

// SharedPaths is two live reservations of different agents that cover a
// common path (shared ones may; an exclusive one never overlaps another's).
type SharedPaths struct {
	A, B *Reservation
	Path string // a path both cover
}

// Overlaps finds the overlaps among live.
func Overlaps(live []*Reservation) []SharedPaths {
	var out []SharedPaths
	for i, a := range live {
		pa, err := parseCached(a.Pattern)
		if err != nil {
			continue
		}
		for _, b := range live[i+1:] {
			if a.Agent == b.Agent {
				continue
			}
			pb, err := parseCached(b.Pattern)
			if err != nil {
				continue
			}
			if w, ok := Overlap(pa, pb); ok {
				out = append(out, SharedPaths{A: a, B: b, Path: w})
			}
		}
	}
	return out
}
