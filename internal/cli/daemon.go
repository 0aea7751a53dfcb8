package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/daemon"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/proc"
	"github.com/parley-dev/parley/internal/safefile"
)

func daemonCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Start, stop and inspect the Parley daemon",
		Long: `The daemon keeps every workspace's agents, messages and groups in
$PARLEY_HOME/parley.db (default ~/.parley) and serves MCP and the JSON API on
$PARLEY_HOME/parley.sock. Most commands start it when it is not running.`,
	}
	cmd.AddCommand(daemonStartCmd(g), daemonStopCmd(g), daemonStatusCmd(g), daemonRunCmd(g), daemonReloadCmd(g))
	return cmd
}

func daemonStartCmd(g *globals) *cobra.Command {
	var listen string
	var allowRemote bool
	cmd := &cobra.Command{
		Use:   "start [--listen 127.0.0.1:PORT [--allow-remote]]",
		Short: "Start the daemon in the background; returns once it serves",
		Long: `Start the daemon in the background; it returns once the daemon serves.

With --listen, the daemon also serves MCP (/mcp) and the JSON API on that TCP
address, for MCP clients that speak only HTTP (Claude Code "type": "http",
Cursor). Every TCP request needs 'Authorization: Bearer TOKEN', the token in
$PARLEY_HOME/token (made on first start). To keep TCP across restarts, set
listen = "127.0.0.1:PORT" in $PARLEY_HOME/config.toml instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := home.Resolve("")
			if err != nil {
				return err
			}
			c := client.New(paths)
			if h, err := c.Health(cmd.Context()); err == nil {
				return fmt.Errorf("the parley daemon is already running (pid %d, socket %s): stop it with `parley daemon stop`", h.PID, paths.Socket)
			}
			h, err := c.StartDaemon(cmd.Context(), listenArgs(listen, allowRemote)...)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "parley daemon started (pid %d, socket %s)\n", h.PID, paths.Socket)
			if st, err := c.Status(cmd.Context()); err == nil && st.Listen != "" {
				fmt.Fprintf(g.stdout, "listening on %s://%s (bearer token in %s)\n", listenScheme(st), st.Listen, paths.Token)
			}
			return nil
		},
	}
	addListenFlags(cmd, &listen, &allowRemote)
	return cmd
}

func addListenFlags(cmd *cobra.Command, listen *string, allowRemote *bool) {
	f := cmd.Flags()
	f.StringVar(listen, "listen", "", "also serve on this TCP address (host:port, e.g. 127.0.0.1:7474), token required")
	f.BoolVar(allowRemote, "allow-remote", false, "allow a --listen address that is not loopback (the token is still required)")
}

func listenArgs(listen string, allowRemote bool) []string {
	var args []string
	if listen != "" {
		args = append(args, "--listen", listen)
	}
	if allowRemote {
		args = append(args, "--allow-remote")
	}
	return args
}

func daemonStopCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop the daemon gracefully, or kill it after --timeout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := home.Resolve("")
			if err != nil {
				return err
			}
			li, alive := daemon.ReadLock(paths.PID)
			if !alive {
				fmt.Fprintln(g.stdout, "parley daemon is not running")
				return nil
			}
			if err := proc.Terminate(li.PID); err != nil {
				return fmt.Errorf("stop daemon (pid %d): %w", li.PID, err)
			}
			deadline := time.Now().Add(timeout)
			for time.Now().Before(deadline) {
				if _, alive := daemon.ReadLock(paths.PID); !alive {
					fmt.Fprintf(g.stdout, "parley daemon stopped (pid %d)\n", li.PID)
					return nil
				}
				time.Sleep(10 * time.Millisecond)
			}
			proc.Kill(li.PID)
			fmt.Fprintf(g.stdout, "parley daemon killed after %s (pid %d)\n", timeout, li.PID)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for a graceful stop")
	return cmd
}

// exitNotRunning is daemon status's exit code for a daemon that is down:
// unavailable, as in exitCode's table.
const exitNotRunning = 7

func daemonStatusCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether the daemon runs, and its pid, socket, database and workspaces",
		Long: `Show whether the daemon runs, and its pid, socket, database and workspaces.
Exits 0 when it runs and 7 (unavailable, as for any command that cannot reach
it) when it does not, so that scripts can test it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := home.Resolve("")
			if err != nil {
				return err
			}
			st, err := client.New(paths).Status(cmd.Context())
			if err != nil {
				if client.IsNotRunning(err) {
					if g.json {
						if err := g.printJSON(map[string]any{"running": false, "socket": paths.Socket}); err != nil {
							return err
						}
					} else {
						fmt.Fprintf(g.stdout, "parley daemon is not running (socket %s)\n", paths.Socket)
					}
					return &exitError{code: exitNotRunning}
				}
				return err
			}
			return g.out(struct {
				Running bool `json:"running"`
				*api.Status
			}{true, st}, func(w io.Writer) {
				fmt.Fprintf(w, "parley daemon running\n  pid:        %d\n  version:    %s\n  uptime:     %s\n  socket:     %s\n",
					st.PID, st.Version, st.Uptime, st.Socket)
				if st.Listen != "" {
					fmt.Fprintf(w, "  tcp:        %s://%s (bearer token in %s)\n", listenScheme(st), st.Listen, paths.Token)
				}
				fmt.Fprintf(w, "  store:      %s\n  database:   %s\n  sessions:   %d\n  workspaces: %s\n", st.Store, st.Database, st.Sessions, strings.Join(st.Workspaces, ", "))
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}

func daemonRunCmd(g *globals) *cobra.Command {
	var listen string
	var allowRemote bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the daemon in the foreground (logs to daemon.log and stderr)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if os.Getenv(client.LaunchEnv) == "1" {
				return client.Launch() // StartDaemon's first hop
			}
			paths, err := home.Resolve("")
			if err != nil {
				return err
			}
			if err := paths.Check(); err != nil {
				return err
			}
			if err := safefile.SecureDir(paths.Home); err != nil {
				return err
			}
			// Started by `daemon start`, stderr is daemon.log already (so that
			// a panic lands there too); in the foreground, log to both.
			var w io.Writer = g.stderr
			if os.Getenv("PARLEY_DAEMON_CHILD") == "" {
				f, err := safefile.OpenAppend(paths.Log, 0o600)
				if err != nil {
					return fmt.Errorf("open log: %w", err)
				}
				defer f.Close()
				w = io.MultiWriter(f, g.stderr)
			}
			level := slog.LevelInfo
			if os.Getenv("PARLEY_LOG") == "debug" {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
			ctx, stop := proc.TerminateContext(cmd.Context())
			defer stop()
			cfg := daemon.Config{Home: paths.Home, Version: daemonVersion(), Logger: log, Listen: listen, AllowRemote: allowRemote}
			// A knob for tests and for clients with very short request timeouts.
			if v := os.Getenv("PARLEY_PROGRESS_EVERY"); v != "" {
				if cfg.ProgressEvery, err = time.ParseDuration(v); err != nil || cfg.ProgressEvery <= 0 {
					return fmt.Errorf("invalid PARLEY_PROGRESS_EVERY %q: want a duration such as 5s", v)
				}
			}
			// A knob for tests: how soon an MCP session over HTTP with no
			// connection stops counting toward presence.
			if v := os.Getenv("PARLEY_SESSION_IDLE"); v != "" {
				if cfg.SessionIdle, err = time.ParseDuration(v); err != nil || cfg.SessionIdle <= 0 {
					return fmt.Errorf("invalid PARLEY_SESSION_IDLE %q: want a duration such as 45s", v)
				}
			}
			d, err := daemon.Open(ctx, cfg)
			if err != nil {
				log.Error("daemon failed to start", "err", err)
				return err
			}
			defer d.Close()
			err = d.Run(ctx)
			log.Info("daemon stopped")
			return err
		},
	}
	addListenFlags(cmd, &listen, &allowRemote)
	return cmd
}

// listenScheme is how a client reaches the daemon's TCP listener.
func listenScheme(st *api.Status) string {
	if st.TLS {
		return "https"
	}
	return "http"
}
