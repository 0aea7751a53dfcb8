// Package daemon is the Parley daemon's lifecycle: the state directory, the PID
// lock, the store, the Unix socket and TCP listener, and an orderly shutdown.
// It wires hub, store, mcpserver and the route table of package httpapi (every
// endpoint) together; only the CLI imports it.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/httpapi"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/mcpserver"
	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/profile"
	"github.com/parley-dev/parley/internal/runner"
	"github.com/parley-dev/parley/internal/safefile"
	"github.com/parley-dev/parley/internal/supervise"
	"github.com/parley-dev/parley/internal/token"
	"github.com/parley-dev/parley/internal/web"
	"github.com/parley-dev/parley/internal/workaround"
)

// Config configures a daemon; zero values mean defaults.
type Config struct {
	Home    string // state directory; "" means $PARLEY_HOME or ~/.parley
	Version string
	Logger  *slog.Logger // nil: discard
	// MaxContent is the message size limit in bytes (default 256 KiB).
	MaxContent int
	// ShutdownTimeout bounds a graceful shutdown (default 5s).
	ShutdownTimeout time.Duration
	// ProgressEvery is the keep-alive interval of blocking tools (default 5s).
	ProgressEvery time.Duration
	// Listen is a TCP address (host:port) served besides the socket, with a
	// bearer token; "" means config.toml's listen, if any.
	Listen string
	// AllowRemote permits a non-loopback Listen address (or config.toml's allow_remote).
	AllowRemote bool
	// EventBuffer is each /api/v1/events subscriber's queue (default 1024
	// events); a subscriber that falls further behind is dropped.
	EventBuffer int
	// SessionIdle is how long an MCP session over HTTP may go without a
	// connection before it stops counting toward its agent's presence
	// (default mcpserver.DefaultIdle).
	SessionIdle time.Duration
}

// Daemon is a running Parley daemon.
type Daemon struct {
	cfg   Config
	paths home.Paths
	log   *slog.Logger
	lock  *pidLock
	db    store
	// storeKind is "sqlite" or "postgres"; storeDesc names the database
	// without secrets. node names this daemon among those sharing a store.
	storeKind, storeDesc, node, host string
	// mux routes the socket's and TCP's requests; the TCP guard asks it
	// which endpoint a request reaches.
	mux *http.ServeMux
	// access says which of mux's endpoints an agent token may reach.
	access *httpapi.Access
	// notify wakes waiters across daemons sharing a store (store.go).
	notify       hub.Notifications
	notifyCancel context.CancelFunc
	notifyDone   chan struct{}
	hub          *hub.Hub
	ops          *ops.Ops
	mcp          *mcpserver.Server
	gw           *gatewayState
	ln           net.Listener
	srv          *http.Server
	spare        *spare // a file descriptor to answer with when out of them (spare.go)
	started      time.Time
	// stopRequests cancels the context of every request in flight.
	stopRequests context.CancelFunc
	conf         *config.Config
	// origins are the browser origins the daemon itself issued (its dashboard).
	origins map[string]bool
	// The optional TCP listener (tcp.go) and the live event stream.
	tcp     *tcpEndpoint
	tcpLn   net.Listener
	tcpSrv  *http.Server
	events  *httpapi.Events
	runner  *runner.Runner    // managed agents (runner.go)
	perms   *permission.Inbox // every agent's permission requests
	web     *web.Server       // the dashboard (dashboard.go)
	notices *notices          // push notifications (notify.go), nil without [[notify]]
	ladder  *supervise.Ladder // escalations of stalls and unanswered permission requests
	// revocations ends what is open under an agent token when it is
	// revoked (tokens.go).
	revocations token.Watcher
	adminToken  string // $PARLEY_HOME/token (tcp.go)
}

// Open prepares a daemon: it makes the state directory, takes the PID lock,
// opens the store and listens on the socket. Run serves; Close undoes Open.
func Open(ctx context.Context, cfg Config) (_ *Daemon, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 5 * time.Second
	}
	paths, err := home.Resolve(cfg.Home)
	if err != nil {
		return nil, err
	}
	d := &Daemon{cfg: cfg, paths: paths, log: cfg.Logger, started: time.Now(), origins: map[string]bool{}}
	d.spare = newSpare(d.log.With("subsystem", "listen"))
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	// Checked before the first write: a directory a repository shipped
	// (home.Paths.Check), or one someone else owns or can write to, may hold a
	// config.toml or links planted to turn the daemon against us.
	if err := paths.Check(); err != nil {
		return nil, err
	}
	if err := safefile.SecureDir(paths.Home); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	d.lock, err = acquireLock(paths.PID, LockInfo{
		PID: os.Getpid(), StartedAt: d.started.UTC(), Hostname: host, UID: os.Getuid(),
		SockPath: paths.Socket, Argv: os.Args,
	})
	if err != nil {
		return nil, err
	}
	d.conf, err = config.Load(paths.Config)
	if err != nil {
		return nil, err
	}
	if cfg.MaxContent == 0 {
		cfg.MaxContent = d.conf.MaxMessageBytes
	}
	d.host, d.node = host, host+":"+paths.Home
	d.db, d.storeKind, d.storeDesc, err = d.openStore(ctx, d.conf, d.log.With("subsystem", "store"))
	if err != nil {
		return nil, err
	}
	d.hub = hub.New(d.db, &hub.Options{Logger: d.log.With("subsystem", "hub"), MaxContent: cfg.MaxContent, Notifier: d.notifier(), Host: d.host,
		DeadAfter: d.conf.DeadAfter(), ClaimLease: d.conf.ClaimLeaseDuration(), TTL: d.conf.TTL(), StallAfter: d.conf.StallDuration(), UnjoinedTTL: d.conf.UnjoinedAge(),
		ProvisionalGrace: d.conf.UnusedAgentAge()})
	d.hub.Subscribe(d.daemonEvents)
	// Alive before anything is held: on a shared store the others must not
	// take a daemon that starts for one that died (hub.LivenessStore).
	if err := d.hub.Beat(ctx); err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	// What this daemon leased before it stopped or crashed was handed to
	// readers that are gone: it goes back to its inbox. (The PID lock makes
	// it a SQLite store's only user; on PostgreSQL its node names its own
	// leases, and the other daemons keep theirs.)
	if _, err := d.hub.Recover(ctx); err != nil {
		return nil, fmt.Errorf("recover deliveries: %w", err)
	}
	// The runner's observer publishes on the event stream from the start.
	d.events = httpapi.NewEvents(d.hub, &httpapi.EventsOptions{Buffer: cfg.EventBuffer, Logger: d.log.With("subsystem", "events"), Origins: d.originList})
	if err := d.openRunner(ctx, d.conf); err != nil {
		return nil, fmt.Errorf("start runner: %w", err)
	}
	d.openGateway(d.conf)
	d.openNotices(d.conf)
	d.openLadder(d.conf)
	d.ops = ops.New(d.hub, &ops.Options{Logger: d.log.With("subsystem", "ops"), ProgressEvery: cfg.ProgressEvery, Runner: d.runner,
		Permissions: d.perms, Tokens: d.db, Revoked: d.revocations.Revoked, Gateway: d.gw.mgr, Config: d.gw, Dashboard: dashboard{d}, Ladder: d.ladder,
		Version: cfg.Version, Process: d.process})
	d.mcp = mcpserver.New(d.ops, &mcpserver.Options{Logger: d.log.With("subsystem", "mcp"), Version: cfg.Version,
		Revocations: &d.revocations, Idle: cfg.SessionIdle})
	d.hub.Subscribe(d.fenceNotices)
	d.mcp.Register("manager", profile.Manager)
	d.mcp.Register("self", profile.Self)
	d.mcp.Register("gateway", func(*profile.Host) profile.Profile { return profile.Profile{Attach: d.gw.mgr.Profile} })
	d.startNotifier()

	h := d.handler()
	// Every request's context ends when shutdown begins, so blocked waits
	// return at once instead of holding the shutdown for its grace period.
	base, stop := context.WithCancelCause(context.Background())
	d.stopRequests = func() { stop(errShuttingDown) }
	d.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	// TCP and its certificate first: a configuration the daemon refuses
	// stops it before its socket exists, so no client meets a socket that
	// resets.
	if err := d.openTCP(h); err != nil {
		return nil, err
	}
	// We hold the lock, so a socket file left behind is stale.
	if err := os.Remove(paths.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	d.ln, err = listenUnix(paths.Socket)
	if err != nil {
		if d.tcpLn != nil {
			d.tcpLn.Close()
		}
		return nil, fmt.Errorf("listen on %s: %w", paths.Socket, err)
	}
	if err := os.Chmod(paths.Socket, 0o600); err != nil {
		return nil, fmt.Errorf("secure socket: %w", err)
	}
	d.openDashboard(h)
	return d, nil
}

// Hub returns the daemon's hub.
func (d *Daemon) Hub() *hub.Hub { return d.hub }

// MCP returns the daemon's /mcp endpoint, to register more profiles before Run.
func (d *Daemon) MCP() *mcpserver.Server { return d.mcp }

// Run serves until ctx is cancelled, then shuts down gracefully.
func (d *Daemon) Run(ctx context.Context) error {
	d.log.Info("daemon started", "pid", os.Getpid(), "socket", d.paths.Socket, "version", d.cfg.Version)
	if !workaround.Off("gctuner") {
		tuneGC()
	}
	errc := make(chan error, 2)
	go func() { errc <- d.srv.Serve(d.spare.wrap(d.ln)) }()
	if d.tcpSrv != nil {
		d.log.Info("listening on tcp", "addr", d.tcp.addr)
		go func() { errc <- d.tcpSrv.Serve(d.spare.wrap(d.tcpLn)) }()
	}
	go d.watchConfig(ctx)
	if d.notices != nil {
		go d.notices.run(ctx)
	}
	// Lease expiry and overdue acks; stopped before the store closes.
	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { d.hub.Run(sweepCtx); close(swept) }()
	defer func() { stopSweep(); <-swept }()
	doorCtx, stopDoorman := context.WithCancel(ctx)
	doorman, doormanDone := d.startDoorman(doorCtx)
	defer func() { stopDoorman(); <-doormanDone }() // its letters in flight, before the store closes
	d.startCodexSessions(doorCtx)                   // a Codex session that ended closes its door
	d.startNudger(ctx, doorman)
	d.resumeDashboard()
	// Escalations; stopped before the store closes. Its nudges go through
	// the doorman's letters.
	d.ladder.UseDoors(doorman)
	climbed := make(chan struct{})
	go func() { d.ladder.Run(sweepCtx); close(climbed) }()
	defer func() { stopSweep(); <-climbed }()
	d.startRetention(ctx)
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	d.log.Info("daemon stopping")
	// Managed agents go first, while their MCP bridges can still reach us:
	// a bridge that lost the daemon would try to start a new one.
	if d.runner != nil {
		d.runner.Close()
	}
	sctx, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownTimeout)
	defer cancel()
	d.stopRequests()
	// Open SSE streams would hold Shutdown up: cut them off once the grace
	// period ends.
	if d.tcpSrv != nil {
		go func() {
			if err := d.tcpSrv.Shutdown(sctx); err != nil {
				d.tcpSrv.Close()
			}
		}()
	}
	if d.web != nil {
		go d.web.Shutdown(sctx)
	}
	if err := d.srv.Shutdown(sctx); err != nil {
		d.srv.Close()
	}
	return nil
}

// errShuttingDown is why requests in flight end when the daemon stops.
var errShuttingDown = hub.Errorf("", hub.Unavailable, "the parley daemon is shutting down: retry once it is back (clients restart it on demand)")

// Close releases everything Open took, in reverse order.
func (d *Daemon) Close() error {
	var errs []error
	if d.srv != nil {
		d.srv.Close()
	}
	if d.tcpSrv != nil {
		d.tcpSrv.Close()
	}
	if d.tcpLn != nil {
		d.tcpLn.Close()
	}
	if d.web != nil {
		d.web.Close()
	}
	if d.notices != nil {
		d.notices.close()
	}
	if d.events != nil {
		d.events.Close()
	}
	if d.ln != nil {
		d.ln.Close()
		os.Remove(d.paths.Socket)
	}
	if d.gw != nil {
		d.gw.mgr.Close()
	}
	if d.runner != nil {
		d.runner.Close()
	}
	d.stopNotifier()
	if d.db != nil {
		errs = append(errs, d.db.Close())
	}
	d.lock.release()
	d.spare.close()
	return errors.Join(errs...)
}
