package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
)

func upstreamCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "upstream",
		Short: "Manage the MCP servers the gateway fronts (config.toml [[upstream]])",
		Long: `The daemon keeps a live session with each enabled upstream MCP server and
re-exposes its tools as {name}__{tool} to MCP sessions of the gateway profile
(parley mcp serve --profile gateway), and to parley tools list / call.

Upstreams live in $PARLEY_HOME/config.toml as [[upstream]] tables. These
commands ask the daemon (starting it if need be) to edit that file, which it
does in place: only the upstream's table changes, and comments stay. The
daemon also notices edits made by hand within a second. Other MCP sessions
stay open across reloads.`,
	}
	cmd.AddCommand(upstreamAddCmd(g), upstreamRemoveCmd(g), upstreamListCmd(g),
		upstreamEnableCmd(g, true), upstreamEnableCmd(g, false))
	return cmd
}

func upstreamAddCmd(g *globals) *cobra.Command {
	var (
		u       config.Upstream
		env     []string
		headers []string
		timeout time.Duration
		retries int
		allow   []string
		deny    []string
		off     bool
		replace bool
		wait    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "add NAME [flags] (-- COMMAND [ARG...] | --url URL)",
		Short: "Add an upstream MCP server (stdio command or Streamable HTTP URL)",
		Example: `  parley upstream add everything -- npx -y @modelcontextprotocol/server-everything stdio
  parley upstream add fs --allow 'read_*' --deny 'write_*' -- mcp-server-filesystem /srv/docs
  parley upstream add search --url https://mcp.example.com/mcp --header 'Authorization: Bearer TOKEN'`,
		Long: `Adds an [[upstream]] to config.toml and, when the daemon runs, starts it and
waits (--wait) to report whether it came up. NAME prefixes the server's tools
({NAME}__{tool}): letters, digits, '-' and single '_'.

A stdio server is the command after "--" (so that its own flags are not read as
parley's); --env and --cwd apply to it. A Streamable HTTP server is --url, with
--header for each header to send. --allow and --deny take glob patterns (* ? [..])
on the server's own tool names; a tool is exposed when it matches an allow
pattern (or there are none) and no deny pattern.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u.Name = args[0]
			if err := config.ValidUpstreamName(u.Name); err != nil {
				return hub.Errorf("", hub.Invalid, "%v", err)
			}
			if rest := args[1:]; len(rest) > 0 {
				u.Command, u.Args = rest[0], rest[1:]
			}
			var err error
			if u.Env, err = pairs(env, "=", "--env", "KEY=VALUE"); err != nil {
				return err
			}
			if u.Headers, err = pairs(headers, ":", "--header", "'Name: value'"); err != nil {
				return err
			}
			if u.Cwd != "" {
				if u.Cwd, err = filepath.Abs(u.Cwd); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("timeout") {
				u.Timeout = config.Duration(timeout)
			}
			if cmd.Flags().Changed("retries") {
				u.Retries = &retries
			}
			if len(allow)+len(deny) > 0 {
				u.Tools = &config.ToolFilter{Allow: allow, Deny: deny}
			}
			if off {
				u.Enabled = &off
				*u.Enabled = false
			}
			if err := u.Validate(); err != nil {
				return hub.Errorf("", hub.Invalid, "%v", err)
			}
			in := api.UpstreamConfig{Name: u.Name, Command: u.Command, Args: u.Args, Env: u.Env, Cwd: u.Cwd,
				URL: u.URL, Headers: u.Headers, Enabled: u.Enabled, Retries: u.Retries, Replace: replace}
			if u.Timeout != 0 {
				in.Timeout = time.Duration(u.Timeout).String()
			}
			if u.Tools != nil {
				in.Allow, in.Deny = u.Tools.Allow, u.Tools.Deny
			}
			c, path, err := upstreamClient(cmd.Context(), g)
			if err != nil {
				return err
			}
			res, err := c.AddUpstream(cmd.Context(), in)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "added upstream %s to %s\n", u.Name, path)
			return report(cmd.Context(), g, c, res, u.Name, wait)
		},
	}
	f := cmd.Flags()
	f.StringVar(&u.URL, "url", "", "Streamable HTTP endpoint of the server")
	f.StringArrayVar(&headers, "header", nil, "HTTP header for --url, as 'Name: value' (repeatable)")
	f.StringArrayVar(&env, "env", nil, "environment variable for the command, as KEY=VALUE (repeatable)")
	f.StringVar(&u.Cwd, "cwd", "", "working directory of the command")
	f.DurationVar(&timeout, "timeout", config.DefaultUpstreamTimeout, "how long one tool call may take")
	f.IntVar(&retries, "retries", config.DefaultUpstreamRetries, "retries of a call that never reached the server (a call that may have run is never retried)")
	f.StringArrayVar(&allow, "allow", nil, "expose only tools matching this glob (repeatable)")
	f.StringArrayVar(&deny, "deny", nil, "hide tools matching this glob (repeatable)")
	f.BoolVar(&off, "disabled", false, "add it disabled (enable it later with: parley upstream enable NAME)")
	f.BoolVar(&replace, "replace", false, "replace an upstream of the same name")
	f.DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the server to come up (0: do not wait)")
	return cmd
}

// pairs parses repeated KEY<sep>VALUE flags.
func pairs(list []string, sep, flag, form string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, s := range list {
		k, v, ok := strings.Cut(s, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, hub.Errorf("", hub.Invalid, "%s %q: want %s", flag, s, form)
		}
		if sep == ":" {
			v = strings.TrimSpace(v)
		}
		m[k] = v
	}
	return m, nil
}

func upstreamRemoveCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "remove NAME",
		Aliases: []string{"rm"},
		Short:   "Remove an upstream; the daemon stops it and withdraws its tools",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			c, path, err := upstreamClient(cmd.Context(), g)
			if err != nil {
				return err
			}
			if _, err := c.RemoveUpstream(cmd.Context(), name); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "removed upstream %s from %s\n", name, path)
			return nil
		},
	}
}

func upstreamEnableCmd(g *globals, enable bool) *cobra.Command {
	verb, short := "enable", "Enable an upstream; the daemon starts it"
	if !enable {
		verb, short = "disable", "Disable an upstream without removing it; the daemon stops it"
	}
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			c, _, err := upstreamClient(cmd.Context(), g)
			if err != nil {
				return err
			}
			res, err := c.EnableUpstream(cmd.Context(), name, enable)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%sd upstream %s\n", verb, name)
			if !enable {
				wait = 0
			}
			return report(cmd.Context(), g, c, res, name, wait)
		},
	}
	if enable {
		cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the server to come up (0: do not wait)")
	}
	return cmd
}

// upstreamClient is a client of the daemon, started if need be: it alone
// writes config.toml, whose path it returns for messages.
func upstreamClient(ctx context.Context, g *globals) (*client.Client, string, error) {
	paths, err := home.Resolve("")
	if err != nil {
		return nil, "", err
	}
	c := client.New(paths)
	if err := c.EnsureDaemon(ctx); err != nil {
		return nil, "", err
	}
	return c, paths.Config, nil
}

// report waits up to wait for upstream name to leave the connecting state
// and says how it went.
func report(ctx context.Context, g *globals, c *client.Client, res *api.UpstreamsResult, name string, wait time.Duration) error {
	st, ok := find(res.Upstreams, name)
	deadline := time.Now().Add(wait)
	for ok && st.State == api.UpstreamConnecting && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		r, err := c.Upstreams(ctx)
		if err != nil {
			return err
		}
		st, ok = find(r.Upstreams, name)
	}
	if !ok {
		return nil
	}
	switch st.State {
	case api.UpstreamReady:
		fmt.Fprintf(g.stdout, "upstream %s is ready: %d tools (%s)\n", name, st.Tools, st.Server)
	case api.UpstreamFailed:
		fmt.Fprintf(g.stdout, "upstream %s failed: %s\nthe daemon keeps retrying; see `parley upstream list`\n", name, st.Error)
	default:
		fmt.Fprintf(g.stdout, "upstream %s is %s\n", name, st.State)
	}
	return nil
}

func find(list []api.UpstreamStatus, name string) (api.UpstreamStatus, bool) {
	for _, st := range list {
		if st.Name == name {
			return st, true
		}
	}
	return api.UpstreamStatus{}, false
}

func upstreamListCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the upstreams and their state (connecting, ready, failed, disabled)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.Upstreams(cmd.Context())
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				if len(res.Upstreams) == 0 {
					fmt.Fprintln(w, "no upstreams: add one with `parley upstream add NAME -- COMMAND [ARG...]`")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSTATE\tTOOLS\tRESTARTS\tTARGET")
				for _, st := range res.Upstreams {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", st.Name, st.State, st.Tools, st.Restarts, st.Target)
				}
				tw.Flush()
				for _, st := range res.Upstreams {
					if st.Error == "" {
						continue
					}
					fmt.Fprintf(w, "\n%s: %s", st.Name, st.Error)
					if st.NextRetry != nil {
						fmt.Fprintf(w, " (next attempt in %s)", time.Until(*st.NextRetry).Round(100*time.Millisecond).Abs())
					}
					fmt.Fprintln(w)
				}
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}

func daemonReloadCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "reload",
		Short: "Make the daemon read config.toml again (upstreams apply at once)",
		Long: `Reads $PARLEY_HOME/config.toml again and applies its [[upstream]] tables:
new ones start, removed and disabled ones stop, changed ones restart. Open MCP
sessions stay. The daemon also reloads by itself within a second of a change.
A file that does not parse is refused and changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := home.Resolve("")
			if err != nil {
				return err
			}
			res, err := client.New(paths).Reload(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "config reloaded: %d upstreams\n", len(res.Upstreams))
			return nil
		},
	}
}
