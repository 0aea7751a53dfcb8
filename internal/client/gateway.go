package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/parley-dev/parley/internal/api"
)

// Reload asks the daemon to read config.toml again and apply its upstreams.
func (c *Client) Reload(ctx context.Context) (*api.ReloadResult, error) {
	var out api.ReloadResult
	return &out, c.do(ctx, http.MethodPost, "/reload", nil, struct{}{}, &out)
}

// Upstreams reports the gateway's upstream MCP servers and their state.
func (c *Client) Upstreams(ctx context.Context) (*api.UpstreamsResult, error) {
	var out api.UpstreamsResult
	return &out, c.do(ctx, http.MethodGet, "/upstreams", nil, nil, &out)
}

// Tools lists the gateway's tools; server, if not empty, keeps one upstream's.
func (c *Client) Tools(ctx context.Context, server string) (*api.ToolsResult, error) {
	var out api.ToolsResult
	q := url.Values{}
	if server != "" {
		q.Set("server", server)
	}
	return &out, c.do(ctx, http.MethodGet, "/tools", q, nil, &out)
}

// CallTool calls a gateway tool ({server}__{tool}) and returns the upstream's
// MCP CallToolResult as JSON.
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.do(ctx, http.MethodPost, "/tools/call", nil, api.CallToolRequest{Name: name, Arguments: args}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// AddUpstream asks the daemon to add (or, with u.Replace, replace) an
// upstream in config.toml and start it.
func (c *Client) AddUpstream(ctx context.Context, u api.UpstreamConfig) (*api.UpstreamsResult, error) {
	var out api.UpstreamsResult
	return &out, c.do(ctx, http.MethodPost, "/upstreams", nil, u, &out)
}

// RemoveUpstream asks the daemon to remove an upstream from config.toml.
func (c *Client) RemoveUpstream(ctx context.Context, name string) (*api.UpstreamsResult, error) {
	var out api.UpstreamsResult
	return &out, c.do(ctx, http.MethodDelete, "/upstreams/"+url.PathEscape(name), nil, nil, &out)
}

// EnableUpstream asks the daemon to enable or disable an upstream in config.toml.
func (c *Client) EnableUpstream(ctx context.Context, name string, on bool) (*api.UpstreamsResult, error) {
	var out api.UpstreamsResult
	return &out, c.do(ctx, http.MethodPut, "/upstreams/"+url.PathEscape(name)+"/enabled", nil, api.UpstreamName{Name: name, Enabled: on}, &out)
}
