package ops

import (
	"context"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// Coordination: file reservations and search (issue 15).

func reservationInfo(r *hub.Reservation) api.ReservationInfo { return api.ReservationOf(r) }

func reservationInfos(rs []*hub.Reservation) []api.ReservationInfo {
	out := make([]api.ReservationInfo, len(rs))
	for i, r := range rs {
		out[i] = reservationInfo(r)
	}
	return out
}

func reservationConflicts(cs []hub.ReservationConflict) []api.ReservationConflict {
	out := make([]api.ReservationConflict, len(cs))
	for i, c := range cs {
		out[i] = api.ReservationConflict{Path: c.Pattern, Example: c.Path, Reservation: reservationInfo(c.Held), Message: c.String()}
	}
	return out
}

// ttlArg reads an optional time to live in seconds; 0 is the default.
func ttlArg(op string, secs int) (time.Duration, error) {
	d, err := hub.ValidReservationTTL(time.Duration(secs) * time.Second)
	if err != nil {
		return 0, hub.Errorf(op, hub.Invalid, "ttl_seconds %d is out of range: want %d to %d, or none for %d",
			secs, int(hub.MinReservationTTL/time.Second), int(hub.MaxReservationTTL/time.Second), int(hub.DefaultReservationTTL/time.Second))
	}
	return d, nil
}

// ReservePaths reserves files for the caller: all of them, or none and the
// conflicts that stopped it (a result, not an error: the model should read
// who holds what and decide).
func (o *Ops) ReservePaths(ctx context.Context, c *Caller, in api.ReserveRequest) (api.ReserveResult, error) {
	const op = "reserve_paths"
	if err := c.needAgent(op); err != nil {
		return api.ReserveResult{}, err
	}
	ttl, err := ttlArg(op, in.TTLSeconds)
	if err != nil {
		return api.ReserveResult{}, err
	}
	excl := in.Exclusive == nil || *in.Exclusive
	res, err := o.hub.Reserve(ctx, hub.ReserveRequest{Workspace: c.Workspace, Agent: c.Agent, Paths: in.Paths,
		TTL: ttl, Exclusive: excl, Reason: in.Reason})
	if err != nil {
		return api.ReserveResult{}, err
	}
	out := api.ReserveResult{Status: "granted", Granted: reservationInfos(res.Granted)}
	if len(res.Conflicts) > 0 {
		out.Status = "conflict"
		out.Conflicts = reservationConflicts(res.Conflicts)
	}
	return out, nil
}

// RenewReservations extends the caller's reservations.
func (o *Ops) RenewReservations(ctx context.Context, c *Caller, in api.RenewRequest) (api.ReservationsResult, error) {
	const op = "renew_reservations"
	if err := c.needAgent(op); err != nil {
		return api.ReservationsResult{}, err
	}
	ttl, err := ttlArg(op, in.TTLSeconds)
	if err != nil {
		return api.ReservationsResult{}, err
	}
	rs, err := o.hub.RenewReservations(ctx, c.Workspace, c.Agent, in.IDs, ttl)
	if err != nil {
		return api.ReservationsResult{}, err
	}
	return api.ReservationsResult{Reservations: reservationInfos(rs)}, nil
}

// ReleaseReservations ends the caller's reservations.
func (o *Ops) ReleaseReservations(ctx context.Context, c *Caller, in api.ReleaseRequest) (api.ReservationsResult, error) {
	const op = "release_reservations"
	if err := c.needAgent(op); err != nil {
		return api.ReservationsResult{}, err
	}
	rs, err := o.hub.ReleaseReservations(ctx, c.Workspace, c.Agent, in.IDs, in.Paths)
	if err != nil {
		return api.ReservationsResult{}, err
	}
	return api.ReservationsResult{Reservations: reservationInfos(rs)}, nil
}

// ForceRelease ends a reservation whose holder is offline.
func (o *Ops) ForceRelease(ctx context.Context, c *Caller, in api.ForceReleaseRequest) (api.ReservationsResult, error) {
	r, err := o.hub.ForceRelease(ctx, c.Workspace, c.Agent, strings.TrimSpace(in.ID))
	if err != nil {
		return api.ReservationsResult{}, err
	}
	return api.ReservationsResult{Reservations: []api.ReservationInfo{reservationInfo(r)}}, nil
}

// ListReservations lists the workspace's live reservations.
func (o *Ops) ListReservations(ctx context.Context, c *Caller, in api.ListReservationsRequest) (api.ReservationsResult, error) {
	rs, err := o.hub.Reservations(ctx, c.Workspace, in.Agent)
	if err != nil {
		return api.ReservationsResult{}, err
	}
	return api.ReservationsResult{Reservations: reservationInfos(rs)}, nil
}

// WhoHas lists the reservations that cover a path.
func (o *Ops) WhoHas(ctx context.Context, c *Caller, in api.WhoHasRequest) (api.ReservationsResult, error) {
	rs, err := o.hub.WhoHas(ctx, c.Workspace, in.Path)
	if err != nil {
		return api.ReservationsResult{}, err
	}
	return api.ReservationsResult{Reservations: reservationInfos(rs)}, nil
}

// CheckPaths returns the exclusive reservations of other agents that the
// caller's change of paths would run into (the commit guard and edit hook).
func (o *Ops) CheckPaths(ctx context.Context, c *Caller, in api.CheckPathsRequest) (api.CheckPathsResult, error) {
	cs, err := o.hub.CheckPaths(ctx, c.Workspace, c.Agent, in.Paths)
	if err != nil {
		return api.CheckPathsResult{}, err
	}
	return api.CheckPathsResult{Conflicts: reservationConflicts(cs)}, nil
}

// SearchMessages finds messages by their words. An agent sees what the read
// rule gives it (read.go): its messages and the rest of their threads; a
// caller without an agent (a person at the CLI or the dashboard) sees the
// workspace.
func (o *Ops) SearchMessages(ctx context.Context, c *Caller, in api.SearchRequest) (api.SearchResult, error) {
	const op = "search_messages"
	if err := limitArg(op, "limit", in.Limit); err != nil {
		return api.SearchResult{}, err
	}
	since, err := sinceArg(op, in.Since, time.Now())
	if err != nil {
		return api.SearchResult{}, err
	}
	// An agent token reads what the read rule gives it; an agent of a
	// trusted door searches the same view of its own, unless it is nobody
	// (a person), who searches the workspace.
	viewer := ReadViewer(c)
	if viewer == "" {
		viewer = c.Agent
	}
	hits, err := o.hub.Search(ctx, hub.SearchRequest{Workspace: c.Workspace, Viewer: viewer, Query: in.Query,
		From: in.From, Thread: in.Thread, Since: since, Limit: in.Limit})
	if err != nil {
		return api.SearchResult{}, err
	}
	out := api.SearchResult{Results: make([]api.SearchHit, len(hits))}
	for i, h := range hits {
		out.Results[i] = api.SearchHit{MessageInfo: Message(h.Message), Snippet: h.Snippet, Score: h.Score}
	}
	return out, nil
}

// sinceArg reads a time (RFC 3339) or an age (90s, 2h, 3d) before now.
func sinceArg(op, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := time.ParseDuration(days + "h"); err == nil && d >= 0 {
			return now.Add(-24 * d), nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, hub.Errorf(op, hub.Invalid, "since %q: want a time (2026-01-02T15:04:05Z) or an age (90m, 2h, 3d)", s)
}
