package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/parley-dev/parley/internal/api"
)

// CreateToken issues an agent token; the answer holds its secret, once.
func (c *Client) CreateToken(ctx context.Context, r api.TokenRequest) (*api.TokenInfo, error) {
	var out api.TokenInfo
	return &out, c.do(ctx, http.MethodPost, "/tokens", nil, r, &out)
}

// Tokens lists the agent tokens.
func (c *Client) Tokens(ctx context.Context) (*api.TokenList, error) {
	var out api.TokenList
	return &out, c.do(ctx, http.MethodGet, "/tokens", nil, nil, &out)
}

// RevokeToken revokes the agent token with the id.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/tokens/"+url.PathEscape(id), nil, nil, nil)
}
