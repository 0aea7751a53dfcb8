// Package config reads $PARLEY_HOME/config.toml, the daemon's settings. Each
// subsystem owns its section; a missing file means defaults. The daemon and the
// CLI import it.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Config is the whole of config.toml.
type Config struct {
	// Store selects the database: a postgres:// URL for a PostgreSQL database
	// that daemons on several machines share; empty for SQLite in $PARLEY_HOME.
	// PARLEY_STORE overrides it.
	Store string `toml:"store,omitempty"`
	// Listen is an optional loopback TCP address (host:port) served besides the socket.
	Listen string `toml:"listen,omitempty"`
	// AllowRemote permits a non-loopback Listen address (a token is still required).
	AllowRemote bool `toml:"allow_remote,omitempty"`
	// TLSCert and TLSKey, both or neither, make the Listen address a team
	// server that speaks TLS (PEM files: the certificate with its chain, and
	// its private key, mode 0600). A TLS listener may be non-loopback
	// without AllowRemote.
	TLSCert string `toml:"tls_cert,omitempty"`
	TLSKey  string `toml:"tls_key,omitempty"`
	// PublicURL is how teammates reach this daemon (https://HOST:PORT, or a
	// reverse proxy's URL): `parley token create` prints it in the line it
	// gives them. Default: the Listen address.
	PublicURL string `toml:"public_url,omitempty"`
	// MaxMessageBytes is the message size limit (default 256 KiB).
	MaxMessageBytes int `toml:"max_message_bytes,omitempty"`
	// DashboardAddr is where the dashboard listens (a loopback host:port
	// such as "127.0.0.1:7475"); empty: the port of its last run, kept in
	// $PARLEY_HOME/dashboard.json, else a free one.
	DashboardAddr string `toml:"dashboard_addr,omitempty"`
	// Nudge, if "tmux", types a notice into an idle agent's tmux pane on new mail.
	Nudge string `toml:"nudge,omitempty"`
	// CodexResume lets the daemon resume, on its app-server, a Codex thread
	// that is not loaded there when a letter comes for it: the app-server
	// then runs the turn headless, where no window may show it. Off (the
	// default), such a letter is not written and its copies read
	// "queued: thread not loaded" until the thread is back.
	CodexResume bool `toml:"codex_resume,omitempty"`
	// Upstreams are the MCP servers the gateway fronts ([[upstream]] tables).
	Upstreams []Upstream `toml:"upstream,omitempty"`
	// Providers configure the managed agents' providers ([providers.NAME]).
	Providers map[string]Provider `toml:"providers,omitempty"`
	// PermissionTimeout denies a managed agent's unanswered permission request
	// after this long (a duration such as "10m"; default 10m).
	PermissionTimeout string `toml:"permission_timeout,omitempty"`
	// CancelGrace is how long a cancelled run has after SIGINT before SIGKILL
	// (default "5s").
	CancelGrace string `toml:"cancel_grace,omitempty"`
	// Notify are the endpoints that push notices to people ([[notify]] tables).
	Notify []Notify `toml:"notify,omitempty"`
	// StallAfter is how long an agent's turn may show no progress (no hook,
	// tool call or output) while it is not blocked in a wait and has no tool
	// call in flight, before its health is stalled (a duration; default
	// "10m").
	StallAfter string `toml:"stall_after,omitempty"`
	// Budgets bound managed agents beyond each one's own budget
	// ([budgets]: a workspace's spend cap, launches per managed agent).
	Budgets Budgets `toml:"budgets,omitempty"`
	// Escalation is what the daemon does about stalled agents and
	// permission requests nobody answers ([escalation]).
	Escalation Escalation `toml:"escalation,omitempty"`
	// Retention prunes messages that every recipient has read once they are
	// older than this (an age such as "30d"; empty keeps everything).
	Retention string `toml:"retention,omitempty"`
	// MaxAutoHops stops auto-wake once a chain of automatic replies between
	// managed agents is this long (default 10).
	MaxAutoHops int `toml:"max_auto_hops,omitempty"`
	// AutoTurnsPerMinute bounds a managed agent's automatic turns (default 10).
	AutoTurnsPerMinute int `toml:"auto_turns_per_minute,omitempty"`
	// MessageTTL is the time to live of a message that names none: a copy
	// that nothing reaches in that time, while its recipient has no reader
	// and no door, bounces back to its sender (an age such as "24h" or
	// "7d"; "0" keeps messages until read; default "24h").
	MessageTTL string `toml:"message_ttl,omitempty"`
	// UnjoinedTTL is the time to live of a message that names none, sent
	// to a name that never joined: the sender of a misspelt name learns
	// soon (an age such as "10m"; "0": message_ttl, as for any other
	// message; default "10m").
	UnjoinedTTL string `toml:"unjoined_ttl,omitempty"`
	// UnusedAgentGrace is how long after its client session ended an agent
	// that the session's start registered and that never made a call is
	// kept, for the session to come back, before it is forgotten and its
	// mail bounces (an age from 1s up to 30d; default "10m").
	UnusedAgentGrace string `toml:"unused_agent_grace,omitempty"`
	// DaemonTimeout is how long a daemon on a shared store (PostgreSQL) may
	// miss its heartbeat before the others take it for dead and give back
	// what it held: leased messages, claimed tasks, reservations; its agents
	// go offline (a duration, "1s" to "1h"; default "30s").
	DaemonTimeout string `toml:"daemon_timeout,omitempty"`
	// ClaimLease is how long a claimed task stays with a claimant whose
	// liveness does not renew it (no live session, managed run or parley
	// queue renew) before it goes back to its queue (a duration, "5s" to
	// "24h"; default "2m").
	ClaimLease string `toml:"claim_lease,omitempty"`
}

// TTL is MessageTTL as a duration: 0 for the default, a negative one for
// none. Load checked it.
func (c *Config) TTL() time.Duration {
	switch strings.TrimSpace(c.MessageTTL) {
	case "":
		return 0
	case "0":
		return -1
	}
	d, _ := ParseAge(c.MessageTTL)
	return d
}

// UnjoinedAge is UnjoinedTTL as a duration: 0 for the default, a negative
// one for message_ttl's. Load checked it.
func (c *Config) UnjoinedAge() time.Duration {
	switch strings.TrimSpace(c.UnjoinedTTL) {
	case "":
		return 0
	case "0":
		return -1
	}
	d, _ := ParseAge(c.UnjoinedTTL)
	return d
}

// UnusedAgentAge is UnusedAgentGrace as a duration: 0 for the default.
// Load checked it.
func (c *Config) UnusedAgentAge() time.Duration {
	d, _ := ParseAge(strings.TrimSpace(c.UnusedAgentGrace))
	return d
}

// ClaimLeaseDuration is ClaimLease as a duration; 0 means the default.
func (c *Config) ClaimLeaseDuration() time.Duration {
	d, _ := time.ParseDuration(c.ClaimLease)
	return d
}

// DeadAfter is DaemonTimeout as a duration; 0 means the default.
func (c *Config) DeadAfter() time.Duration {
	d, _ := time.ParseDuration(c.DaemonTimeout)
	return d
}

// Escalation configures the escalation ladder (package supervise): a
// stalled agent is nudged through its best wake path, then its lead is
// told, then the person gets a notice ([[notify]]), then a managed agent's
// run is cancelled or restarted (OnStall); a step every Every while the
// stall lasts. A permission request nobody answers for PermissionAfter
// climbs the same ladder from the lead.
type Escalation struct {
	// Lead is told at the second step: "@role" or an agent's name; empty
	// tells a managed agent's owner, if an agent created it.
	Lead string `toml:"lead,omitempty"`
	// Every is the time from one step to the next (default "5m").
	Every string `toml:"every,omitempty"`
	// PermissionAfter is how long a permission request waits before its
	// ladder starts (default "5m").
	PermissionAfter string `toml:"permission_after,omitempty"`
	// OnStall is a managed agent's last step: "cancel" its run, "restart"
	// it (cancel, then a prompt to carry on), or empty for neither.
	OnStall string `toml:"on_stall,omitempty"`
}

// EscalationDurations are Every and PermissionAfter, with their defaults.
func (e Escalation) EscalationDurations() (every, permissionAfter time.Duration) {
	every, _ = parseDuration(e.Every, 5*time.Minute)
	permissionAfter, _ = parseDuration(e.PermissionAfter, 5*time.Minute)
	return every, permissionAfter
}

func validateEscalation(e Escalation) error {
	if _, err := parseDuration(e.Every, time.Minute); err != nil {
		return fmt.Errorf("escalation: invalid every %q: %v", e.Every, err)
	}
	if _, err := parseDuration(e.PermissionAfter, time.Minute); err != nil {
		return fmt.Errorf("escalation: invalid permission_after %q: %v", e.PermissionAfter, err)
	}
	switch e.OnStall {
	case "", "cancel", "restart":
	default:
		return fmt.Errorf("escalation: invalid on_stall %q: want \"cancel\", \"restart\" or nothing", e.OnStall)
	}
	if lead := strings.TrimPrefix(e.Lead, "@"); e.Lead != "" && (lead == "" || strings.ContainsAny(lead, " \t\n")) {
		return fmt.Errorf("escalation: invalid lead %q: want @role or an agent's name", e.Lead)
	}
	return nil
}

// StallDuration is stall_after, or its default.
func (c *Config) StallDuration() time.Duration {
	d, _ := parseDuration(c.StallAfter, 10*time.Minute)
	return d
}

// maxFile bounds config.toml: it is a settings file, not data.
const maxFile = 1 << 20

// Load reads the file at path; a missing file gives the zero Config.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(b, path)
}

// Parse decodes config.toml content; name is used in errors. Unknown keys are
// errors, so a typo does not silently fall back to a default.
func Parse(b []byte, name string) (*Config, error) {
	if len(b) > maxFile {
		return nil, fmt.Errorf("%s: over %d bytes", name, maxFile)
	}
	var c Config
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		// Unknown keys first: their DecodeError does not name the key.
		var se *toml.StrictMissingError
		if errors.As(err, &se) && len(se.Errors) > 0 {
			e := se.Errors[0]
			row, col := e.Position()
			return nil, fmt.Errorf("%s:%d:%d: unknown key %q", name, row, col, strings.Join(e.Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%s:%d:%d: %s", name, row, col, de.Error())
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if c.MaxMessageBytes < 0 {
		return nil, fmt.Errorf("%s: max_message_bytes must not be negative", name)
	}
	if c.MaxAutoHops < 0 || c.AutoTurnsPerMinute < 0 || c.AutoTurnsPerMinute > 6000 {
		return nil, fmt.Errorf("%s: max_auto_hops and auto_turns_per_minute must not be negative (auto_turns_per_minute at most 6000)", name)
	}
	if c.Retention != "" {
		if _, err := ParseAge(c.Retention); err != nil {
			return nil, fmt.Errorf("%s: retention: %w", name, err)
		}
	}
	if c.Store != "" && c.Store != "sqlite" && !strings.HasPrefix(c.Store, "postgres://") && !strings.HasPrefix(c.Store, "postgresql://") {
		return nil, fmt.Errorf("%s: invalid store: want a postgres:// URL, or nothing for SQLite", name)
	}
	if c.DashboardAddr != "" {
		host, _, err := net.SplitHostPort(c.DashboardAddr)
		if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			return nil, fmt.Errorf("%s: invalid dashboard_addr %q: want a loopback host:port such as 127.0.0.1:7475", name, c.DashboardAddr)
		}
	}
	if c.Nudge != "" && c.Nudge != "tmux" {
		return nil, fmt.Errorf("%s: invalid nudge %q: want \"tmux\" or nothing", name, c.Nudge)
	}
	if err := validateUpstreams(c.Upstreams); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := validateRunner(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if t := strings.TrimSpace(c.MessageTTL); t != "" && t != "0" {
		if d, err := ParseAge(t); err != nil || d > 30*24*time.Hour {
			return nil, fmt.Errorf("%s: invalid message_ttl %q: want an age up to 30d such as \"24h\" or \"7d\", or \"0\" for none", name, c.MessageTTL)
		}
	}
	if t := strings.TrimSpace(c.UnjoinedTTL); t != "" && t != "0" {
		if d, err := ParseAge(t); err != nil || d < time.Second || d > 30*24*time.Hour {
			return nil, fmt.Errorf("%s: invalid unjoined_ttl %q: want an age from 1s up to 30d such as \"10m\", or \"0\" for message_ttl", name, c.UnjoinedTTL)
		}
	}
	if t := strings.TrimSpace(c.UnusedAgentGrace); t != "" {
		if d, err := ParseAge(t); err != nil || d < time.Second || d > 30*24*time.Hour {
			return nil, fmt.Errorf("%s: invalid unused_agent_grace %q: want an age from 1s up to 30d such as \"10m\"", name, c.UnusedAgentGrace)
		}
	}
	if d, err := time.ParseDuration(c.StallAfter); c.StallAfter != "" && (err != nil || d <= 0) {
		return nil, fmt.Errorf("%s: invalid stall_after %q: want a duration such as \"10m\"", name, c.StallAfter)
	}
	if err := validateEscalation(c.Escalation); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, fmt.Errorf("%s: tls_cert and tls_key go together: give both (the certificate and its key) or neither", name)
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("%s: invalid public_url %q: want https://HOST[:PORT]", name, c.PublicURL)
		}
	}
	if d, err := time.ParseDuration(c.DaemonTimeout); c.DaemonTimeout != "" && (err != nil || d < time.Second || d > time.Hour) {
		return nil, fmt.Errorf("%s: invalid daemon_timeout %q: want a duration from \"1s\" to \"1h\", such as \"30s\"", name, c.DaemonTimeout)
	}
	if d, err := time.ParseDuration(c.ClaimLease); c.ClaimLease != "" && (err != nil || d < 5*time.Second || d > 24*time.Hour) {
		return nil, fmt.Errorf("%s: invalid claim_lease %q: want a duration from \"5s\" to \"24h\", such as \"2m\"", name, c.ClaimLease)
	}
	if err := validateNotify(c.Notify); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &c, nil
}
