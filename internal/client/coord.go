package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/parley-dev/parley/internal/api"
)

// Reserve asks for reservations of paths for the client's agent.
func (c *Client) Reserve(ctx context.Context, r api.ReserveRequest) (*api.ReserveResult, error) {
	var out api.ReserveResult
	return &out, c.do(ctx, http.MethodPost, "/reservations", nil, r, &out)
}

// RenewReservations extends the agent's reservations.
func (c *Client) RenewReservations(ctx context.Context, r api.RenewRequest) (*api.ReservationsResult, error) {
	var out api.ReservationsResult
	return &out, c.do(ctx, http.MethodPost, "/reservations/renew", nil, r, &out)
}

// ReleaseReservations ends the agent's reservations.
func (c *Client) ReleaseReservations(ctx context.Context, r api.ReleaseRequest) (*api.ReservationsResult, error) {
	var out api.ReservationsResult
	return &out, c.do(ctx, http.MethodPost, "/reservations/release", nil, r, &out)
}

// ForceRelease ends a reservation of an offline holder.
func (c *Client) ForceRelease(ctx context.Context, id string) (*api.ReservationsResult, error) {
	var out api.ReservationsResult
	return &out, c.do(ctx, http.MethodPost, "/reservations/force-release", nil, api.ForceReleaseRequest{ID: id}, &out)
}

// Reservations lists the workspace's live reservations (of one agent if set).
func (c *Client) Reservations(ctx context.Context, agent string) (*api.ReservationsResult, error) {
	var q url.Values
	if agent != "" {
		q = url.Values{"agent": {agent}}
	}
	var out api.ReservationsResult
	return &out, c.do(ctx, http.MethodGet, "/reservations", q, nil, &out)
}

// WhoHas lists the reservations that cover path.
func (c *Client) WhoHas(ctx context.Context, path string) (*api.ReservationsResult, error) {
	var out api.ReservationsResult
	return &out, c.do(ctx, http.MethodGet, "/reservations/who", url.Values{"path": {path}}, nil, &out)
}

// CheckPaths returns the exclusive reservations of other agents that paths
// run into.
func (c *Client) CheckPaths(ctx context.Context, paths []string) (*api.CheckPathsResult, error) {
	var out api.CheckPathsResult
	return &out, c.do(ctx, http.MethodPost, "/reservations/check", nil, api.CheckPathsRequest{Paths: paths}, &out)
}

// Search finds messages by their words.
func (c *Client) Search(ctx context.Context, r api.SearchRequest) (*api.SearchResult, error) {
	q := url.Values{"query": {r.Query}}
	for k, v := range map[string]string{"from": r.From, "thread": r.Thread, "since": r.Since} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if r.Limit != 0 {
		q.Set("limit", strconv.Itoa(r.Limit))
	}
	var out api.SearchResult
	return &out, c.do(ctx, http.MethodGet, "/search", q, nil, &out)
}
