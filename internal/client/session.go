package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/parley-dev/parley/internal/api"
)

// Identify asks which agent a process of the client session r.Session
// speaks as (ops.Identify): the name it was given, or its session's own
// when another live client session holds that one.
func (c *Client) Identify(ctx context.Context, r api.IdentifyRequest) (*api.IdentifyResult, error) {
	var out api.IdentifyResult
	return &out, c.do(ctx, http.MethodPost, "/identify", nil, r, &out)
}

// ForgetAgent removes an agent of the client's workspace; its unread mail
// bounces back to its senders.
func (c *Client) ForgetAgent(ctx context.Context, name string) (*api.ForgetResult, error) {
	var out api.ForgetResult
	return &out, c.do(ctx, http.MethodDelete, "/agents/"+url.PathEscape(name), nil, nil, &out)
}

// StartSession registers the client's agent and its session's door at the
// session's start (ops.StartSession).
func (c *Client) StartSession(ctx context.Context, r api.SessionStartRequest) (*api.SessionStartResult, error) {
	var out api.SessionStartResult
	return &out, c.do(ctx, http.MethodPost, "/sessions/start", nil, r, &out)
}
