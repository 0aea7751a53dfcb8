package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/parley-dev/parley/internal/api"
)

// OpenDoor registers (or refreshes) the door of the client's own session
// for its agent.
func (c *Client) OpenDoor(ctx context.Context, r api.DoorRequest) (*api.DoorInfo, error) {
	var out api.DoorInfo
	return &out, c.do(ctx, http.MethodPost, "/doors", nil, r, &out)
}

// Doors lists the doors of the client's agent, or with all of the
// workspace; with closed the closed ones too.
func (c *Client) Doors(ctx context.Context, all, closed bool) (*api.DoorsResult, error) {
	q := url.Values{}
	if all {
		q.Set("all", "true")
	}
	if closed {
		q.Set("closed", "true")
	}
	var out api.DoorsResult
	return &out, c.do(ctx, http.MethodGet, "/doors", q, nil, &out)
}

// CloseDoor closes a door of the workspace; ended says its session ended
// (else a person closed it).
func (c *Client) CloseDoor(ctx context.Context, id string, ended bool) (*api.DoorInfo, error) {
	var out api.DoorInfo
	return &out, c.do(ctx, http.MethodPost, "/doors/"+url.PathEscape(id)+"/close", nil, api.DoorCloseRequest{Ended: ended}, &out)
}

// Seen says the client's session started a turn with the letter.
func (c *Client) Seen(ctx context.Context, letter string) (*api.SeenResult, error) {
	var out api.SeenResult
	return &out, c.do(ctx, http.MethodPost, "/inbox/seen", nil, api.SeenRequest{Letter: letter}, &out)
}

// Bounced lists the dead letters: the client's agent's (or with all,
// every sender's) bounced copies, newest first.
func (c *Client) Bounced(ctx context.Context, all bool, limit int) (*api.BouncedResult, error) {
	q := url.Values{}
	if all {
		q.Set("all", "true")
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.BouncedResult
	return &out, c.do(ctx, http.MethodGet, "/bounced", q, nil, &out)
}
