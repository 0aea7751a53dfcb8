package api

// Wire types of coordination: file reservations and search (issue 15).

import "github.com/parley-dev/parley/internal/hub"

// ReservationOf renders a reservation for the wire (for ops and events alike).
func ReservationOf(r *hub.Reservation) ReservationInfo {
	return ReservationInfo{ID: r.ID, Agent: r.Agent, Path: r.Pattern, Exclusive: r.Exclusive, Reason: r.Reason,
		CreatedAt: FormatTime(r.CreatedAt), ExpiresAt: FormatTime(r.ExpiresAt)}
}

// ReserveRequest is reserve_paths and POST /api/v1/reservations.
type ReserveRequest struct {
	Paths      []string `json:"paths" jsonschema:"files or glob patterns relative to the repository top: * ? [a-z] within a segment, ** for any depth, dir/ for everything under dir"`
	TTLSeconds int      `json:"ttl_seconds,omitempty" jsonschema:"how long to hold them, 10 to 86400 seconds (default 3600)"`
	Exclusive  *bool    `json:"exclusive,omitempty" jsonschema:"default true; false: shared with other non-exclusive holders"`
	Reason     string   `json:"reason,omitempty" jsonschema:"what you are doing, shown to agents who run into it"`
}

// ReservationInfo is one reservation.
type ReservationInfo struct {
	ID        string `json:"id"`
	Agent     string `json:"agent"`
	Path      string `json:"path"`
	Exclusive bool   `json:"exclusive"`
	Reason    string `json:"reason,omitempty"`
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at"`
}

// ReservationConflict is a path that another agent's reservation covers.
type ReservationConflict struct {
	Path        string          `json:"path" jsonschema:"the path or pattern asked for"`
	Example     string          `json:"example" jsonschema:"a file both cover"`
	Reservation ReservationInfo `json:"held_by"`
	Message     string          `json:"message"`
}

// ReserveResult is the reserve_paths result: all paths granted, or none and
// the conflicts.
type ReserveResult struct {
	Status    string                `json:"status" jsonschema:"granted or conflict"`
	Granted   []ReservationInfo     `json:"granted"`
	Conflicts []ReservationConflict `json:"conflicts,omitempty"`
}

// RenewRequest is renew_reservations and POST /api/v1/reservations/renew.
type RenewRequest struct {
	IDs        []string `json:"ids,omitempty" jsonschema:"reservation ids to renew (default: all of yours)"`
	TTLSeconds int      `json:"ttl_seconds,omitempty" jsonschema:"new time to live from now, 10 to 86400 seconds (default 3600)"`
}

// ReleaseRequest is release_reservations and POST /api/v1/reservations/release.
type ReleaseRequest struct {
	IDs   []string `json:"ids,omitempty" jsonschema:"reservation ids to release"`
	Paths []string `json:"paths,omitempty" jsonschema:"reserved paths or patterns to release, as reserved (default with no ids: all of yours)"`
}

// ForceReleaseRequest is POST /api/v1/reservations/force-release.
type ForceReleaseRequest struct {
	ID string `json:"id" jsonschema:"the reservation to end; its holder must be offline"`
}

// ListReservationsRequest is list_reservations and GET /api/v1/reservations.
type ListReservationsRequest struct {
	Agent string `json:"agent,omitempty" jsonschema:"only this agent's reservations"`
}

// ReservationsResult lists reservations.
type ReservationsResult struct {
	Reservations []ReservationInfo `json:"reservations"`
}

// WhoHasRequest is who_has and GET /api/v1/reservations/who.
type WhoHasRequest struct {
	Path string `json:"path" jsonschema:"a file (or pattern) relative to the repository top"`
}

// CheckPathsRequest is POST /api/v1/reservations/check: what the commit guard
// and the edit hook ask before they let a change through.
type CheckPathsRequest struct {
	Paths []string `json:"paths"`
}

// CheckPathsResult lists the exclusive reservations of other agents that the
// paths run into.
type CheckPathsResult struct {
	Conflicts []ReservationConflict `json:"conflicts"`
}

// SearchRequest is search_messages and GET /api/v1/search.
type SearchRequest struct {
	Query  string `json:"query" jsonschema:"words that must all occur (any form); \"a phrase\" in quotes; word* for a prefix"`
	From   string `json:"from,omitempty" jsonschema:"only messages from this agent"`
	Thread string `json:"thread,omitempty" jsonschema:"only this thread (a thread id)"`
	Since  string `json:"since,omitempty" jsonschema:"only messages since this time (RFC 3339) or this long ago (e.g. 2h, 3d)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"most results (default 20, at most 100)"`
}

// SearchHit is one found message with the passage that matched.
type SearchHit struct {
	MessageInfo
	Snippet string  `json:"snippet"`
	Score   float64 `json:"score"`
}

// SearchResult is the search_messages result, best match first.
type SearchResult struct {
	Results []SearchHit `json:"results"`
}

// ReplyRequest is the lean profile's reply.
type ReplyRequest struct {
	MessageID string `json:"message_id" jsonschema:"the message you answer"`
	Content   string `json:"content" jsonschema:"your answer (markdown)"`
	Priority  string `json:"priority,omitempty" jsonschema:"critical, high, normal (default) or low"`
}
