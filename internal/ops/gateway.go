package ops

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/gateway"
	"github.com/parley-dev/parley/internal/hub"
)

// Operations on the gateway's upstream MCP servers and on config.toml, where
// they are declared.

// Config is config.toml as the daemon keeps it. The daemon alone writes the
// file, so that an edit keeps the user's comments and is applied at once.
type Config interface {
	// Reload reads the file again and applies it; a bad file changes nothing.
	Reload() error
	// EditUpstreams edits the file's [[upstream]] tables, keeping the rest
	// of its text, and applies the result.
	EditUpstreams(edit func(*config.Config) error) error
}

func (o *Ops) gatewayOn(op string) error {
	if o.gateway == nil {
		return hub.Errorf(op, hub.Unavailable, "this daemon runs no gateway")
	}
	return nil
}

func (o *Ops) configOn(op string) error {
	if o.config == nil || o.gateway == nil {
		return hub.Errorf(op, hub.Unavailable, "this daemon keeps no config.toml")
	}
	return nil
}

// Upstreams renders the gateway's upstreams for the wire.
func Upstreams(sts []gateway.Status) []api.UpstreamStatus {
	out := make([]api.UpstreamStatus, len(sts))
	for i, s := range sts {
		out[i] = api.UpstreamStatus{Name: s.Name, Transport: s.Transport, Target: s.Target, Enabled: s.Enabled,
			State: s.State, Error: s.Error, Restarts: s.Restarts, Tools: s.Tools, Since: s.Since, NextRetry: s.NextRetry,
			Server: s.Server, Protocol: s.Protocol, Timeout: s.Timeout, Retries: s.Retries}
	}
	return out
}

// ListUpstreams reports the upstreams and their state.
func (o *Ops) ListUpstreams(ctx context.Context, _ *Caller, _ api.Empty) (api.UpstreamsResult, error) {
	if err := o.gatewayOn("upstreams"); err != nil {
		return api.UpstreamsResult{}, err
	}
	return api.UpstreamsResult{Upstreams: Upstreams(o.gateway.Status())}, nil
}

// Reload reads config.toml again and applies its upstreams.
func (o *Ops) Reload(ctx context.Context, _ *Caller, _ api.Empty) (api.ReloadResult, error) {
	if err := o.configOn("reload"); err != nil {
		return api.ReloadResult{}, err
	}
	if err := o.config.Reload(); err != nil {
		return api.ReloadResult{}, err
	}
	return api.ReloadResult{Upstreams: Upstreams(o.gateway.Status())}, nil
}

// AddUpstream adds an [[upstream]] table to config.toml (or replaces one of
// the same name, when asked) and starts it.
func (o *Ops) AddUpstream(ctx context.Context, _ *Caller, in api.UpstreamConfig) (api.UpstreamsResult, error) {
	const op = "add upstream"
	if err := o.configOn(op); err != nil {
		return api.UpstreamsResult{}, err
	}
	u, err := upstreamOf(op, in)
	if err != nil {
		return api.UpstreamsResult{}, err
	}
	return o.editUpstreams(op, func(c *config.Config) error {
		if old := c.Upstream(u.Name); old != nil {
			if !in.Replace {
				return hub.Errorf(op, hub.Conflict, "upstream %q exists already: remove it first, or replace it", u.Name)
			}
			*old = u
			return nil
		}
		c.Upstreams = append(c.Upstreams, u)
		return nil
	})
}

// RemoveUpstream removes an upstream's table from config.toml and stops it.
func (o *Ops) RemoveUpstream(ctx context.Context, _ *Caller, in api.UpstreamName) (api.UpstreamsResult, error) {
	const op = "remove upstream"
	if err := o.configOn(op); err != nil {
		return api.UpstreamsResult{}, err
	}
	return o.editUpstreams(op, func(c *config.Config) error {
		for i := range c.Upstreams {
			if c.Upstreams[i].Name == in.Name {
				c.Upstreams = append(c.Upstreams[:i], c.Upstreams[i+1:]...)
				return nil
			}
		}
		return noUpstream(op, in.Name)
	})
}

// EnableUpstream enables or disables an upstream in config.toml; the gateway
// starts or stops it.
func (o *Ops) EnableUpstream(ctx context.Context, _ *Caller, in api.UpstreamName) (api.UpstreamsResult, error) {
	const op = "enable upstream"
	if err := o.configOn(op); err != nil {
		return api.UpstreamsResult{}, err
	}
	return o.editUpstreams(op, func(c *config.Config) error {
		u := c.Upstream(in.Name)
		if u == nil {
			return noUpstream(op, in.Name)
		}
		u.Enabled = nil // the default
		if !in.Enabled {
			u.Enabled = new(bool)
		}
		return nil
	})
}

func noUpstream(op, name string) error {
	return hub.Errorf(op, hub.NotFound, "no upstream named %q in config.toml: see `parley upstream list`", name)
}

func (o *Ops) editUpstreams(op string, edit func(*config.Config) error) (api.UpstreamsResult, error) {
	if err := o.config.EditUpstreams(edit); err != nil {
		return api.UpstreamsResult{}, err
	}
	return api.UpstreamsResult{Upstreams: Upstreams(o.gateway.Status())}, nil
}

// upstreamOf reads a wire upstream; config.Check validates the rest.
func upstreamOf(op string, in api.UpstreamConfig) (config.Upstream, error) {
	if err := config.ValidUpstreamName(in.Name); err != nil {
		return config.Upstream{}, hub.Errorf(op, hub.Invalid, "%v", err)
	}
	u := config.Upstream{Name: in.Name, Command: in.Command, Args: in.Args, Env: in.Env, Cwd: in.Cwd,
		URL: in.URL, Headers: in.Headers, Enabled: in.Enabled, Retries: in.Retries}
	if in.Timeout != "" {
		d, err := time.ParseDuration(in.Timeout)
		if err != nil || d <= 0 {
			return config.Upstream{}, hub.Errorf(op, hub.Invalid, "invalid timeout %q: want a duration such as 60s", in.Timeout)
		}
		u.Timeout = config.Duration(d)
	}
	if len(in.Allow)+len(in.Deny) > 0 {
		u.Tools = &config.ToolFilter{Allow: in.Allow, Deny: in.Deny}
	}
	return u, nil
}

// Tools lists the gateway's tools, each an MCP Tool as tools/list gives it.
func (o *Ops) Tools(ctx context.Context, _ *Caller, in api.ToolsRequest) (api.ToolsResult, error) {
	const op = "tools"
	if err := o.gatewayOn(op); err != nil {
		return api.ToolsResult{}, err
	}
	if in.Server != "" {
		if err := config.ValidUpstreamName(in.Server); err != nil {
			return api.ToolsResult{}, hub.Errorf(op, hub.Invalid, "%v", err)
		}
	}
	out := api.ToolsResult{Tools: []json.RawMessage{}}
	for _, t := range o.gateway.Tools(in.Server) {
		b, err := json.Marshal(t)
		if err != nil {
			return api.ToolsResult{}, err
		}
		out.Tools = append(out.Tools, b)
	}
	return out, nil
}

// CallTool calls an upstream's tool; the result is the upstream's, unchanged.
func (o *Ops) CallTool(ctx context.Context, _ *Caller, in api.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := o.gatewayOn("call tool"); err != nil {
		return nil, err
	}
	res, err := o.gateway.Call(ctx, in.Name, in.Arguments)
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			// The upstream refused the request: its message is for the user.
			err = hub.Errorf("", hub.Invalid, "the upstream answered with error %d: %s", je.Code, je.Message)
		}
		return nil, err
	}
	return res, nil
}
