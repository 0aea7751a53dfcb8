// Package cli is the parley command line: one file per command. Commands talk
// to the daemon only through internal/client, except `daemon run`, which hosts
// it, and `mcp serve` / `bridge`, which forward MCP traffic with internal/bridge.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/tmux"
	"github.com/parley-dev/parley/internal/workspace"
)

// globals are the flags every command shares.
type globals struct {
	agent     string
	workspace string
	json      bool
	// stdout neutralizes terminal control sequences (term.go); raw is the
	// process's stdout, for commands whose stdout is a protocol (mcp serve,
	// bridge, hooks).
	stdout io.Writer
	raw    io.Writer
	stderr io.Writer
	// getenv, if set, reads the client session's id for a name of its own
	// (workspace.SessionName) in place of the environment: a Codex hook
	// gets its thread in its input, not its environment.
	getenv func(string) string
	// tmuxFirst puts the tmux window's name before the client session's
	// own (mcp serve of the AgentMail profile).
	tmuxFirst bool
	// fallback is the session of a client that names none (mcp serve:
	// the client process), named last (workspace.Lookup.Fallback).
	fallback *workspace.Session
}

// Main runs the command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	tw := &termWriter{w: stdout}
	defer tw.Flush()
	g := &globals{stdout: tw, raw: stdout, stderr: stderr}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		tw.Flush()
		fmt.Fprintf(stderr, "parley: %s\n", neutralize([]byte(err.Error())))
		return exitCode(err)
	}
	return 0
}

// newRoot builds the command tree.
func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "parley",
		Short: "A message bus and control room for AI coding agents",
		Long: `Parley gives coding agents (Claude Code, Codex, Cursor, Gemini CLI, any MCP
client) a durable message bus over MCP: they send, receive and block waiting for
messages, addressed by name, @role, @group or @everyone.

Quick start:
  parley join --name alice --role planner     # register an agent here
  parley send bob "please review PR 12"        # send as alice
  parley inbox --agent bob                     # read bob's messages
  parley mcp serve --agent alice               # MCP over stdio, for an MCP client`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.agent, "agent", "", "agent name to act as (default $PARLEY_AGENT, else the identity in .parley/identities made for you, else your client session's own name)")
	pf.StringVar(&g.workspace, "workspace", "", "workspace (default $PARLEY_WORKSPACE, or this git repository)")

	root.AddCommand(
		daemonCmd(g), mcpCmd(g), bridgeCmd(g), watchCmd(g),
		joinCmd(g), whoamiCmd(g), sendCmd(g), inboxCmd(g), waitCmd(g),
		agentsCmd(g), statusCmd(g), workCmd(g), groupCmd(g), broadcastCmd(g), historyCmd(g), demoCmd(g),
		hookCmd(g), initCmd(g), guardCmd(g), reserveCmd(g), searchCmd(g), queueCmd(g),
		upstreamCmd(g), toolsCmd(g),
		agentCmd(g), permissionsCmd(g), allowCmd(g), denyCmd(g),
		backupCmd(g), restoreCmd(g), doctorCmd(g), purgeCmd(g),
		dashboardCmd(g), tokenCmd(g),
		deliveryCmd(g), ackCmd(g), overdueCmd(g), bouncedCmd(g), redeliverCmd(g), doorsCmd(g),
	)
	refuseUnknownSubcommands(root)
	// --version is ours, not cobra's: cobra prints a version of its own
	// format unless given a template, and a template links text/template,
	// whose reflection keeps every exported method of the program in the
	// binary (3.2 MB of 36.4, and 1.3 MB more of an idle daemon's resident
	// pages). e2e TestNoDynamicMethodLookup keeps it out.
	version := root.Flags().BoolP("version", "v", false, "print the version and exit")
	help := root.RunE
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if *version {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return nil
		}
		return help(cmd, args)
	}
	return root
}

// refuseUnknownSubcommands makes every command that only groups others
// (parley agent, group, token...) refuse an unknown subcommand with exit 2
// and a suggestion; cobra would print the help and exit 0. Bare, it prints
// its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return errors.New(msg + " (see `" + cmd.CommandPath() + " --help`)")
	}
}

// addJSON adds --json to a read command.
func addJSON(cmd *cobra.Command, g *globals) {
	cmd.Flags().BoolVar(&g.json, "json", false, "print JSON instead of text")
}

// identity resolves who the command acts as. needAgent makes a missing agent an error.
func (g *globals) identity(ctx context.Context, needAgent bool) (workspace.Resolved, error) {
	dir, err := os.Getwd()
	if err != nil {
		return workspace.Resolved{}, err
	}
	return g.identityIn(ctx, dir, needAgent)
}

// identityIn resolves the identity in dir as every command does: flag,
// environment, the single identity file, and last, inside tmux, the tmux
// window's name, so that `parley send` in a window speaks as the agent whose
// MCP server and hooks run there.
func (g *globals) identityIn(ctx context.Context, dir string, needAgent bool) (workspace.Resolved, error) {
	l := workspace.Lookup{
		Dir: dir, FlagAgent: g.agent, FlagWS: g.workspace, RequireName: needAgent, TmuxFirst: g.tmuxFirst, Fallback: g.fallback,
	}.FromEnv()
	if g.getenv != nil {
		l.Getenv = g.getenv
	}
	if te, ok := tmux.FromEnv(); ok && l.FlagAgent == "" && l.EnvAgent == "" {
		w, err := tmux.Client{Socket: te.Socket}.WindowName(ctx, te.Pane)
		if err != nil {
			fmt.Fprintf(g.stderr, "parley: warning: cannot read the tmux window name (%v); pass --agent NAME\n", err)
		}
		l.AllowTmux, l.TmuxWindow = true, tmux.AgentName(w)
	}
	return workspace.Resolve(l)
}

// client returns a client for the resolved identity, starting the daemon if
// it is not running.
func (g *globals) client(ctx context.Context, needAgent bool) (*client.Client, workspace.Resolved, error) {
	id, err := g.identity(ctx, needAgent)
	if err != nil {
		return nil, id, err
	}
	paths, err := home.Resolve("")
	if err != nil {
		return nil, id, err
	}
	c := client.New(paths).As(id.Workspace, id.Agent)
	if err := c.EnsureDaemon(ctx); err != nil {
		return nil, id, err
	}
	if g.settleName(ctx, c, &id) {
		c = c.As(id.Workspace, id.Agent)
	}
	return c, id, nil
}

// printJSON writes v indented.
func (g *globals) printJSON(v any) error {
	enc := json.NewEncoder(g.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// out prints text or JSON, as --json asks, and reports whether all of it
// reached stdout.
func (g *globals) out(v any, text func(w io.Writer)) error {
	if g.json {
		return g.printJSON(v)
	}
	ew := &errWriter{w: g.stdout}
	text(ew)
	if f, ok := g.stdout.(interface{ Flush() error }); ok && ew.err == nil {
		ew.err = f.Flush()
	}
	return ew.err
}

// errWriter keeps the first error writing to w.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// errTimeout makes `parley wait` exit with status 3 when nothing came.
var errTimeout = &exitError{code: 3}

// exitCode is the one table from errors to exit statuses: the error's kind
// survives the wire (api.ErrorBody), so a script can tell why a command
// failed. README lists them.
func exitCode(err error) int {
	if client.IsNotRunning(err) {
		return 7
	}
	switch hub.KindOf(err) {
	case hub.Invalid:
		return 2
	case hub.Timeout:
		return 3
	case hub.NotFound:
		return 4
	case hub.Conflict:
		return 5
	case hub.Forbidden:
		return 6
	case hub.Unavailable:
		return 7
	case hub.TooLarge:
		return 8
	}
	// cobra's own usage errors carry no kind.
	if msg := err.Error(); strings.HasPrefix(msg, "unknown ") || strings.Contains(msg, "flag") || strings.Contains(msg, "arg(s)") {
		return 2
	}
	return 1
}

type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }
