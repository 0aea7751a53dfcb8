package hub

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// A Reservation is an agent's lease on the files a path pattern names, so that
// parallel agents do not overwrite each other's work. An exclusive reservation
// conflicts with any other agent's reservation that overlaps it; shared ones
// conflict only with exclusive ones. It lapses at ExpiresAt unless renewed.
type Reservation struct {
	ID        string
	Workspace string
	Agent     string // the holder
	Pattern   string // a PathPattern, as parsed
	Exclusive bool
	Reason    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// A ReservationConflict is a requested pattern that overlaps a live reservation
// of another agent.
type ReservationConflict struct {
	Pattern string       // what was asked for (or the path checked)
	Path    string       // a path both cover
	Held    *Reservation // the holder's reservation: agent, reason, expiry
}

func (c ReservationConflict) String() string {
	var s string
	p, err := ParsePathPattern(c.Pattern)
	_, literal := p.Literal()
	switch {
	case c.Held.Pattern == c.Pattern:
		s = fmt.Sprintf("%s is reserved by %s", c.Pattern, c.Held.Agent)
	case err == nil && literal:
		s = fmt.Sprintf("%s is reserved by %s (%s)", c.Pattern, c.Held.Agent, c.Held.Pattern)
	default:
		s = fmt.Sprintf("%s overlaps %s, reserved by %s", c.Pattern, c.Held.Pattern, c.Held.Agent)
	}
	if c.Held.Reason != "" {
		s += ": " + c.Held.Reason
	}
	return s + ", until " + c.Held.ExpiresAt.UTC().Format(time.RFC3339)
}

// ReservationChange is what a ChangeReservations callback asks the store to do.
type ReservationChange struct {
	Put    []*Reservation // inserted, or replacing the reservation of the same ID
	Delete []string       // ids to forget
}

// Reservation limits and defaults.
const (
	DefaultReservationTTL = time.Hour
	MinReservationTTL     = 10 * time.Second
	MaxReservationTTL     = 24 * time.Hour
	MaxReservePaths       = 100
	MaxReasonLen          = 1024
)

// EventReservations announces granted, renewed and released reservations.
const EventReservations EventKind = "reservations.changed"

// ValidReservationTTL checks a reservation's time to live; 0 means the default.
func ValidReservationTTL(d time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return DefaultReservationTTL, nil
	case d < MinReservationTTL || d > MaxReservationTTL:
		return 0, Errorf("", Invalid, "ttl %s is out of range: want %s to %s", d, MinReservationTTL, MaxReservationTTL)
	}
	return d, nil
}

// ReserveRequest asks for reservations of paths for an agent.
type ReserveRequest struct {
	Workspace string
	Agent     string
	Paths     []string // PathPatterns
	TTL       time.Duration
	Exclusive bool
	Reason    string
}

// ReserveResult is either the granted reservations or the conflicts that
// stopped them: a reservation is all or nothing, so an agent never holds half
// of what it needs.
type ReserveResult struct {
	Granted   []*Reservation
	Conflicts []ReservationConflict
}

// Reserve grants the agent reservations of the paths unless one overlaps a
// conflicting live reservation of another agent. Asking again for a pattern
// the agent holds renews it (and sets its mode and reason).
func (h *Hub) Reserve(ctx context.Context, r ReserveRequest) (*ReserveResult, error) {
	const op = "reserve paths"
	if err := h.checkHolder(r.Workspace, r.Agent); err != nil {
		return nil, withOp(op, err)
	}
	ttl, err := ValidReservationTTL(r.TTL)
	if err != nil {
		return nil, withOp(op, err)
	}
	if len(r.Reason) > MaxReasonLen {
		return nil, Errorf(op, Invalid, "reason is too long: at most %d bytes", MaxReasonLen)
	}
	pats, err := parsePatterns(r.Paths)
	if err != nil {
		return nil, withOp(op, err)
	}
	now := h.now().UTC()
	var res ReserveResult
	err = h.store.ChangeReservations(ctx, r.Workspace, now, func(live []*Reservation) (ReservationChange, error) {
		res = ReserveResult{}
		var ch ReservationChange
		for _, p := range pats {
			res.Conflicts = append(res.Conflicts, conflicts(live, r.Agent, p, r.Exclusive, false)...)
		}
		if len(res.Conflicts) > 0 {
			return ch, nil
		}
		for _, p := range pats {
			nr := &Reservation{ID: h.newID(now), Workspace: r.Workspace, Agent: r.Agent, Pattern: p.String(),
				Exclusive: r.Exclusive, Reason: r.Reason, CreatedAt: now, ExpiresAt: now.Add(ttl)}
			if i := slices.IndexFunc(live, func(l *Reservation) bool { return l.Agent == r.Agent && l.Pattern == p.String() }); i >= 0 {
				nr.ID, nr.CreatedAt = live[i].ID, live[i].CreatedAt
			}
			ch.Put = append(ch.Put, nr)
		}
		res.Granted = ch.Put
		return ch, nil
	})
	if err != nil {
		return nil, withOp(op, err)
	}
	if len(res.Granted) > 0 {
		h.publish(Event{Kind: EventReservations, Workspace: r.Workspace, Agent: r.Agent, Change: "granted", Reservations: res.Granted})
	}
	h.noteConflicts(r.Workspace, r.Agent, "reserve", res.Conflicts)
	return &res, nil
}

// conflicts lists the live reservations of agents other than agent that clash
// with p: any overlapping one when exclusive, else the exclusive ones.
// exclusiveOnly counts only others' exclusive reservations (an edit or a
// commit, which need no reservation of their own).
func conflicts(live []*Reservation, agent string, p PathPattern, exclusive, exclusiveOnly bool) []ReservationConflict {
	var out []ReservationConflict
	for _, l := range live {
		if l.Agent == agent || (!l.Exclusive && (!exclusive || exclusiveOnly)) {
			continue
		}
		lp, err := parseCached(l.Pattern)
		if err != nil {
			continue // stored patterns were parsed once; a bad one reserves nothing
		}
		if w, ok := Overlap(p, lp); ok {
			out = append(out, ReservationConflict{Pattern: p.String(), Path: w, Held: l})
		}
	}
	return out
}

// patternCache keeps the compiled patterns of live reservations: every
// conflict check compares against all of them, and compiling is most of the
// cost of a comparison. It is dropped whole when it grows past its bound.
var patternCache struct {
	sync.Mutex
	m map[string]PathPattern
}

const patternCacheMax = 10_000

func parseCached(s string) (PathPattern, error) {
	patternCache.Lock()
	p, ok := patternCache.m[s]
	patternCache.Unlock()
	if ok {
		return p, nil
	}
	p, err := ParsePathPattern(s)
	if err != nil {
		return p, err
	}
	patternCache.Lock()
	if patternCache.m == nil || len(patternCache.m) >= patternCacheMax {
		patternCache.m = make(map[string]PathPattern)
	}
	patternCache.m[s] = p
	patternCache.Unlock()
	return p, nil
}

func parsePatterns(paths []string) ([]PathPattern, error) {
	if len(paths) == 0 {
		return nil, Errorf("", Invalid, "paths must not be empty")
	}
	if len(paths) > MaxReservePaths {
		return nil, Errorf("", Invalid, "%d paths: at most %d in one call", len(paths), MaxReservePaths)
	}
	pats := make([]PathPattern, 0, len(paths))
	for _, s := range paths {
		p, err := ParsePathPattern(s)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(pats, func(q PathPattern) bool { return q.String() == p.String() }) {
			pats = append(pats, p)
		}
	}
	return pats, nil
}

func (h *Hub) checkHolder(ws, agent string) error {
	if err := ValidWorkspace(ws); err != nil {
		return err
	}
	if agent == "" {
		return Errorf("", Invalid, "no agent identity: reservations are held by an agent (pass --agent, or the Parley-Agent header)")
	}
	return ValidName("agent name", agent)
}

// selectOwn picks the agent's live reservations named by ids or, failing that,
// by patterns; neither means all of them. Ids that are not the agent's are an
// error, so a typo is not a silent no-op.
func selectOwn(live []*Reservation, agent string, ids, patterns []string) ([]*Reservation, error) {
	var out []*Reservation
	for _, l := range live {
		if l.Agent != agent {
			continue
		}
		if (len(ids) == 0 && len(patterns) == 0) || slices.Contains(ids, l.ID) || slices.Contains(patterns, l.Pattern) {
			out = append(out, l)
		}
	}
	for _, id := range ids {
		if !slices.ContainsFunc(out, func(l *Reservation) bool { return l.ID == id }) {
			return nil, Errorf("", NotFound, "no live reservation %s held by %s", id, agent)
		}
	}
	return out, nil
}

// RenewReservations extends the agent's reservations (those with the ids, or
// all) to ttl from now, and returns them.
func (h *Hub) RenewReservations(ctx context.Context, ws, agent string, ids []string, ttl time.Duration) ([]*Reservation, error) {
	const op = "renew reservations"
	if err := h.checkHolder(ws, agent); err != nil {
		return nil, withOp(op, err)
	}
	ttl, err := ValidReservationTTL(ttl)
	if err != nil {
		return nil, withOp(op, err)
	}
	now := h.now().UTC()
	var renewed []*Reservation
	err = h.store.ChangeReservations(ctx, ws, now, func(live []*Reservation) (ReservationChange, error) {
		own, err := selectOwn(live, agent, ids, nil)
		if err != nil {
			return ReservationChange{}, err
		}
		renewed = make([]*Reservation, len(own))
		for i, l := range own {
			c := *l
			c.ExpiresAt = now.Add(ttl)
			renewed[i] = &c
		}
		return ReservationChange{Put: renewed}, nil
	})
	if err != nil {
		return nil, withOp(op, err)
	}
	if len(renewed) > 0 {
		h.publish(Event{Kind: EventReservations, Workspace: ws, Agent: agent, Change: "renewed", Reservations: renewed})
	}
	return renewed, nil
}

// ReleaseReservations ends the agent's reservations named by ids, or those of
// the given patterns, or all when both are empty, and returns them. Patterns
// that the agent does not hold are skipped: the post-commit hook releases
// whatever the commit's paths had.
func (h *Hub) ReleaseReservations(ctx context.Context, ws, agent string, ids, patterns []string) ([]*Reservation, error) {
	const op = "release reservations"
	if err := h.checkHolder(ws, agent); err != nil {
		return nil, withOp(op, err)
	}
	var released []*Reservation
	err := h.store.ChangeReservations(ctx, ws, h.now().UTC(), func(live []*Reservation) (ReservationChange, error) {
		own, err := selectOwn(live, agent, ids, patterns)
		if err != nil {
			return ReservationChange{}, err
		}
		released = own
		var ch ReservationChange
		for _, l := range own {
			ch.Delete = append(ch.Delete, l.ID)
		}
		return ch, nil
	})
	if err != nil {
		return nil, withOp(op, err)
	}
	if len(released) > 0 {
		h.publish(Event{Kind: EventReservations, Workspace: ws, Agent: agent, Change: "released", Reservations: released})
	}
	return released, nil
}

// ForceRelease ends another agent's reservation when its holder is offline:
// no open session and not seen for ActiveWindow, the presence TTL. A holder
// that is still around must release it, or let it expire. by is who asks
// (an agent, or "" for a person at the CLI); a holder may always release its
// own.
func (h *Hub) ForceRelease(ctx context.Context, ws, by, id string) (*Reservation, error) {
	const op = "force release"
	if err := ValidWorkspace(ws); err != nil {
		return nil, withOp(op, err)
	}
	now := h.now().UTC()
	live, err := h.store.LiveReservations(ctx, ws, now)
	if err != nil {
		return nil, withOp(op, err)
	}
	i := slices.IndexFunc(live, func(l *Reservation) bool { return l.ID == id })
	if i < 0 {
		return nil, Errorf(op, NotFound, "no live reservation %s in this workspace", id)
	}
	holder := live[i].Agent
	if holder != by {
		a, err := h.store.Agent(ctx, ws, holder)
		switch {
		case err == nil:
			h.overlaySeen(a)
			if h.active(a) {
				return nil, Errorf(op, Conflict, "%s is still active (last seen %s): ask it to release %s, or wait until %s",
					holder, a.LastSeen.Format(time.RFC3339), live[i].Pattern, live[i].ExpiresAt.Format(time.RFC3339))
			}
		case !IsNotFound(err):
			return nil, withOp(op, err)
		}
	}
	var released *Reservation
	err = h.store.ChangeReservations(ctx, ws, now, func(live []*Reservation) (ReservationChange, error) {
		released = nil
		for _, l := range live {
			if l.ID == id {
				released = l
				return ReservationChange{Delete: []string{id}}, nil
			}
		}
		return ReservationChange{}, Errorf("", NotFound, "no live reservation %s in this workspace", id)
	})
	if err != nil {
		return nil, withOp(op, err)
	}
	change := "released"
	if holder != by {
		change = "force_released"
	}
	h.publish(Event{Kind: EventReservations, Workspace: ws, Agent: by, Change: change, Reservations: []*Reservation{released}})
	return released, nil
}

// Reservations lists the live reservations of ws, oldest first; agent, if set,
// keeps only its own.
func (h *Hub) Reservations(ctx context.Context, ws, agent string) ([]*Reservation, error) {
	const op = "list reservations"
	live, err := h.store.LiveReservations(ctx, ws, h.now().UTC())
	if err != nil {
		return nil, withOp(op, err)
	}
	if agent != "" {
		live = slices.DeleteFunc(live, func(l *Reservation) bool { return l.Agent != agent })
	}
	return live, nil
}

// WhoHas lists the live reservations that cover path (a path or a pattern:
// patterns count when they overlap it).
func (h *Hub) WhoHas(ctx context.Context, ws, path string) ([]*Reservation, error) {
	const op = "who has"
	p, err := ParsePathPattern(path)
	if err != nil {
		return nil, withOp(op, err)
	}
	live, err := h.Reservations(ctx, ws, "")
	if err != nil {
		return nil, withOp(op, err)
	}
	var out []*Reservation
	for _, c := range conflicts(live, "", p, true, false) {
		out = append(out, c.Held)
	}
	return out, nil
}

// CheckPaths returns the live exclusive reservations of agents other than
// agent that cover any of paths: what an edit or a commit by agent would walk
// over. An empty agent (identity unknown) clashes with every holder.
func (h *Hub) CheckPaths(ctx context.Context, ws, agent string, paths []string) ([]ReservationConflict, error) {
	const op = "check paths"
	var pats []PathPattern
	for _, s := range paths {
		p, err := ParsePathPattern(s)
		if err != nil {
			return nil, withOp(op, err)
		}
		pats = append(pats, p)
	}
	live, err := h.Reservations(ctx, ws, "")
	if err != nil {
		return nil, withOp(op, err)
	}
	var out []ReservationConflict
	for _, p := range pats {
		out = append(out, conflicts(live, agent, p, false, true)...)
	}
	if agent != "" {
		// An agent's check before its edit (the edit hooks): it ran into
		// another's files.
		h.noteConflicts(ws, agent, "check", out)
	}
	return out, nil
}
