package client

import (
	"context"
	"net/http"

	"github.com/parley-dev/parley/internal/api"
)

// Identify asks which agent a process of the client session r.Session
// speaks as (ops.Identify): the name it was given, or its session's own
// when another live client session holds that one.
func (c *Client) Identify(ctx context.Context, r api.IdentifyRequest) (*api.IdentifyResult, error) {
	var out api.IdentifyResult
	return &out, c.do(ctx, http.MethodPost, "/identify", nil, r, &out)
}
