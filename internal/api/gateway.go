package api

import (
	"encoding/json"
	"time"
)

// Upstream states, as UpstreamStatus.State reports them.
const (
	UpstreamDisabled   = "disabled"   // enabled = false in config.toml
	UpstreamConnecting = "connecting" // starting the server, initializing, listing tools
	UpstreamReady      = "ready"      // a live session; calls go through
	UpstreamFailed     = "failed"     // the last attempt failed; retried after a backoff
	UpstreamStopped    = "stopped"    // the daemon is shutting down
)

// UpstreamStatus is one upstream MCP server in GET /api/v1/upstreams.
type UpstreamStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"` // stdio | http
	Target    string `json:"target"`    // the command line or the URL
	Enabled   bool   `json:"enabled"`
	State     string `json:"state"`
	// Error is the last failure, kept while the upstream is not ready.
	Error string `json:"error,omitempty"`
	// Restarts counts the sessions started after the first one.
	Restarts int       `json:"restarts"`
	Tools    int       `json:"tools"` // tools exposed, after allow/deny
	Since    time.Time `json:"since"` // when State was entered
	// NextRetry is when a failed upstream is tried again.
	NextRetry *time.Time `json:"next_retry,omitempty"`
	// Server is the upstream's serverInfo name and version, once initialized.
	Server   string `json:"server,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Timeout  string `json:"timeout"`
	Retries  int    `json:"retries"`
}

// UpstreamsResult is GET /api/v1/upstreams.
type UpstreamsResult struct {
	Upstreams []UpstreamStatus `json:"upstreams"`
}

// ReloadResult is POST /api/v1/reload: config.toml was read again and applied.
type ReloadResult struct {
	Upstreams []UpstreamStatus `json:"upstreams"`
}

// ToolsResult is GET /api/v1/tools[?server=S]: the gateway's tools, each an MCP
// Tool object as tools/list gives it, named {server}__{tool}.
type ToolsResult struct {
	Tools []json.RawMessage `json:"tools"`
}

// CallToolRequest is POST /api/v1/tools/call; the response is the MCP
// CallToolResult of the upstream, unchanged.
type CallToolRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// UpstreamConfig is one [[upstream]] table of config.toml, as POST
// /api/v1/upstreams adds it; the daemon writes the file and applies it.
type UpstreamConfig struct {
	Name    string            `json:"name"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Enabled *bool             `json:"enabled,omitempty"` // unset: true
	Timeout string            `json:"timeout,omitempty"` // a duration, such as "60s"
	Retries *int              `json:"retries,omitempty"`
	Allow   []string          `json:"allow,omitempty"` // tool name globs
	Deny    []string          `json:"deny,omitempty"`
	// Replace replaces an upstream of the same name; else that is a conflict.
	Replace bool `json:"replace,omitempty"`
}

// UpstreamName names an upstream: DELETE /api/v1/upstreams/{name}, and
// PUT /api/v1/upstreams/{name}/enabled with Enabled.
type UpstreamName struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled,omitempty"`
}

// ToolsRequest is GET /api/v1/tools: Server, if set, keeps one upstream's tools.
type ToolsRequest struct {
	Server string `json:"server,omitempty"`
}
