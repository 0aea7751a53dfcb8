// Package ops defines every operation of the daemon once: its input and
// output (wire types of package api), its validation, and its call into hub,
// runner or gateway. The MCP profiles (mcpserver) and the JSON API (httpapi)
// are thin adapters over these functions, so an operation behaves the same
// through either door. It is the one place that turns domain values into wire
// values. mcpserver and httpapi import it; it imports hub, runner, gateway and
// api.
package ops

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/gateway"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/runner"
	"github.com/parley-dev/parley/internal/supervise"
	"github.com/parley-dev/parley/internal/token"
)

// DefaultWorkspace is the workspace of a caller that names none.
const DefaultWorkspace = "default"

// Caller is who an operation runs for, and how it can talk back while it
// runs. The MCP server fills it from the session's identity; the JSON API
// from the request's headers.
type Caller struct {
	Workspace string
	Agent     string // may be empty: such a caller can read lists but not send
	Role      string
	Module    string
	// Local is true for a request over the daemon's Unix socket, whose OS
	// user is trusted with everything.
	Local bool
	// Token is the id of the agent token the caller came with (TCP), or ""
	// (the Unix socket, the admin token). Such a caller is its agent only,
	// and reads only what the read rule gives it (read.go).
	Token string
	// Door is the way the caller came in, attested on what it sends
	// (hub.Origin): set by the door, never from what the client says.
	Door hub.Door
	// Via is the wake path the caller's reads record: set by a door that
	// pushes what it reads (a channel); empty means check or wait, by
	// the operation.
	Via hub.WakePath
	// Profiles are the MCP profiles of the session (none over the JSON API).
	Profiles []string
	// Reader is the ledger of the caller's reads (hub.Reader): what an
	// operation hands out is leased to it and reported to it, and the door
	// settles it there. Nil: an operation that reads opens one with
	// ReadAs, or, without ReadAs, reads at once.
	Reader *hub.Reader
	// ReadAs opens Reader at the first read, for a door whose requests
	// mostly read nothing (the JSON API). Its Workspace and Agent are the
	// caller's.
	ReadAs *hub.ReaderOptions
	// Call names the request within Reader (its JSON-RPC id).
	Call string
	// DoorOwner names the MCP session that registers its client's door
	// (OpenDoor): the door closes with it. Set by the MCP server only.
	DoorOwner string
	// Progress, when not nil, is told that a blocking operation still runs;
	// the MCP adapter sends it as a progress notification (a keep-alive for
	// clients that time out idle calls).
	Progress Progress
	// NameFrom says how the session's agent name came about: "" when it
	// was given (a flag, PARLEY_AGENT, an identity file, a token), else
	// api.NameSession or api.NameProcess, a name Parley derived for the
	// client session, which it may replace (SetIdentity).
	NameFrom string
	// Session is the key of the client session the caller runs in
	// (Admission.Session), "" when it did not say; NameNote says why it does
	// not speak as the name it asked for (Admit), for whoami.
	Session, NameNote string
	// Rebind, set by a door that holds a session, moves the session to
	// the agent (its new name after SetIdentity): its calls from now on
	// speak as it, and its presence and door follow.
	Rebind func(ctx context.Context, agent, role, module string)
}

// Progress reports how long a blocking operation has waited, out of total
// (0: no bound), with a line for people.
type Progress func(waited, total time.Duration, message string)

// reader is the caller's reader, opened now if the door asked for one.
func (o *Ops) reader(c *Caller) (*hub.Reader, error) {
	if c.Reader != nil || c.ReadAs == nil {
		return c.Reader, nil
	}
	ro := *c.ReadAs
	ro.Workspace, ro.Agent = c.Workspace, c.Agent
	if ro.Key != "" {
		r, err := o.hub.ResumeReader(ro.Key, ro.Workspace, ro.Agent)
		if err != nil {
			return nil, err
		}
		c.Reader = r
	} else {
		c.Reader = o.hub.OpenReader(ro)
	}
	return c.Reader, nil
}

// needAgent refuses a caller without an agent identity for op.
func (c *Caller) needAgent(op string) error {
	if c.Agent == "" {
		return hub.Errorf(op, hub.Invalid, "no agent identity: pass --agent NAME (or set PARLEY_AGENT, or the Parley-Agent header)")
	}
	return nil
}

// Options configure Ops; nil means defaults.
type Options struct {
	Logger *slog.Logger // nil: discard
	// ProgressEvery is the keep-alive interval of blocking operations
	// (default 5s).
	ProgressEvery time.Duration
	// Runner serves the managed-agent operations; nil: they are unavailable.
	Runner *runner.Runner
	// Permissions is every agent's permission inbox; nil: asking is unavailable.
	Permissions *permission.Inbox
	// Tokens keeps the agent tokens; nil: the token operations are unavailable.
	Tokens token.Store
	// Revoked, if set, is told of each token revoked here, to end what is
	// open under it (token.Watcher).
	Revoked func(id string)
	// Gateway fronts the upstream MCP servers; nil: its operations are unavailable.
	Gateway *gateway.Manager
	// Config is config.toml; nil: it cannot be edited or reloaded.
	Config Config
	// Dashboard issues the web dashboard's sign-in links; nil: none.
	Dashboard Dashboard
	// Ladder is the escalation ladder, whose steps the dashboard shows;
	// nil: none.
	Ladder *supervise.Ladder
	// Version is the daemon's, for health and status.
	Version string
	// Process, if set, gives the daemon's own facts for status: start
	// time, paths, store, sessions, profiles, listen address.
	Process func() api.Status
}

// Dashboard is the web dashboard, as the operations see it.
type Dashboard interface {
	// Login returns a one-time sign-in link for the person user, and when
	// it expires.
	Login(user string) (url string, expires time.Time, err error)
	// Addr is the dashboard's listen address.
	Addr() string
	// SignOutAll ends every sign-in and says how many there were.
	SignOutAll() int
}

// Ops holds what the operations need.
type Ops struct {
	hub           *hub.Hub
	runner        *runner.Runner
	perms         *permission.Inbox
	tokens        token.Store
	revoked       func(id string)
	gateway       *gateway.Manager
	config        Config
	version       string
	process       func() api.Status
	dash          Dashboard
	ladder        *supervise.Ladder
	log           *slog.Logger
	progressEvery time.Duration
	sessions      sessions // the open MCP sessions (session.go)
	opTable
}

// New returns the operations over h.
func New(h *hub.Hub, opts *Options) *Ops {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 5 * time.Second
	}
	return &Ops{hub: h, runner: o.Runner, perms: o.Permissions, tokens: o.Tokens, revoked: o.Revoked, gateway: o.Gateway, config: o.Config, dash: o.Dashboard, ladder: o.Ladder,
		version: o.Version, process: o.Process, log: o.Logger, progressEvery: o.ProgressEvery}
}

// Hub returns the hub the operations run on.
func (o *Ops) Hub() *hub.Hub { return o.hub }

// keepAlive adapts the caller's progress reporter to the domain's
// "still waiting" callback, or returns nil when the caller has none.
func (o *Ops) keepAlive(c *Caller, total time.Duration, message func(waited time.Duration) string) func(time.Duration) {
	if c.Progress == nil {
		return nil
	}
	return func(waited time.Duration) { c.Progress(waited, total, message(waited)) }
}

// secondsArg reads an optional timeout in seconds: nil is the default, else
// 1 to max. The one message serves every door and every blocking operation.
func secondsArg(op string, secs *int, def, most time.Duration) (time.Duration, error) {
	if secs == nil {
		return def, nil
	}
	if *secs < 1 || *secs > int(most/time.Second) {
		return 0, hub.Errorf(op, hub.Invalid, "timeout %d is out of range: want between 1 and %d seconds, or none for the default %d",
			*secs, int(most/time.Second), int(def/time.Second))
	}
	return time.Duration(*secs) * time.Second, nil
}

// limitArg checks an optional count: 0 means the default, negative is refused.
func limitArg(op, what string, n int) error {
	if n < 0 {
		return hub.Errorf(op, hub.Invalid, "%s must not be negative", what)
	}
	return nil
}

// Invalid is an error of kind invalid for op: what a door refuses of what a
// client sent (its profiles, its hello), in the words the client reads.
func Invalid(op, format string, args ...any) error {
	return hub.Errorf(op, hub.Invalid, format, args...)
}
