package gateway

import "time"

// Upstream states, as Status.State reports them.
const (
	StateDisabled   = "disabled"   // enabled = false in config.toml
	StateConnecting = "connecting" // starting the server, initializing, listing tools
	StateReady      = "ready"      // a live session; calls go through
	StateFailed     = "failed"     // the last attempt failed; retried after a backoff
	StateStopped    = "stopped"    // the daemon is shutting down
)

// Status is the state of one upstream MCP server.
type Status struct {
	Name      string
	Transport string // stdio | http
	Target    string // the command line or the URL
	Enabled   bool
	State     string
	// Error is the last failure, kept while the upstream is not ready.
	Error string
	// Restarts counts the sessions started after the first one.
	Restarts int
	Tools    int       // tools exposed, after allow/deny
	Since    time.Time // when State was entered
	// NextRetry is when a failed upstream is tried again.
	NextRetry *time.Time
	// Server is the upstream's serverInfo name and version, once initialized.
	Server   string
	Protocol string
	Timeout  string
	Retries  int
}
