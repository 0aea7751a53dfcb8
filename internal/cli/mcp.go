package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/bridge"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/runner"
	"github.com/parley-dev/parley/internal/tmux"
	"github.com/parley-dev/parley/internal/workspace"
)

func mcpCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "Serve Parley's MCP tools to an MCP client"}
	cmd.AddCommand(mcpServeCmd(g))
	return cmd
}

func mcpServeCmd(g *globals) *cobra.Command {
	var role, module, profile, nudge string
	var withChannel bool
	var rs remoteServe
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP over stdio for one agent (what an MCP client runs)",
		Long: `Serve MCP over stdio, for an MCP client such as Claude Code, Codex or Cursor.

It starts the daemon when it is not running, registers the agent (given --agent
and --role, or found in .parley/identities), and forwards MCP traffic to the
daemon's /mcp endpoint with the agent's identity. stdout carries only the
protocol; logs go to stderr.

Identity, most explicit first: --agent, else $PARLEY_AGENT, else an
identity file that ` + "`parley join`" + ` made inside this client session, else a
name of the client session's own, such as claude-myrepo-3f9a1c: from
$PARLEY_SESSION, or Claude Code's $CLAUDE_CODE_SESSION_ID (its hooks take
the same name), or the client process that started this server; last,
inside tmux, the window's name (first, for the agentmail profile, whose
agents are their windows). An identity file a person joined at a terminal,
or one made for another session, is not this session's: it says so on
stderr and keeps its own name. Codex names its thread to this server only
in its tool calls: at the first, such a session takes the thread's name,
codex-myrepo-3f9a1c, which Codex's hooks (from their input's session_id)
and shell commands ($CODEX_THREAD_ID) derive too; the SessionStart hook
that parley init codex writes registers that agent and its door at the
thread's start, before any call. So a client package that
bakes in no name (the Claude Code plugin, the Gemini CLI extension) gives
each session an agent of its own, and two sessions in one checkout are two
agents. A name given to this session that a live session of another client
session holds is not shared: this session speaks as its own name, says so,
and keeps it while it lives. A session named after itself may choose a
readable name and role with the set_identity tool; its old name stays an
alias (mail to it, and hooks that still derive it, reach the new one).
Role: --role, else $PARLEY_ROLE, else the identity file.
Workspace: --workspace, else $PARLEY_WORKSPACE, else this git repository.

Profiles (comma-separated): native (default), lean (at most six tools),
sidechat, agentmail, identity (set_identity, which a session named after
itself gets beside native or lean), manager (managed agents), self (a
managed agent's own tools), and gateway (the upstream servers' tools); two
that define a tool of the same name do not go in one session.

Inside tmux, the server exits when its tmux session goes away.

Doors: started by Claude Code, it registers the session's inbox socket
($CLAUDE_CODE_MESSAGING_SOCKET) for the agent; started by Codex, the thread
that calls its tools (with $CODEX_HOME, default ~/.codex; parley init codex
passes it on). When mail comes for the agent and it is not waiting for it,
the daemon writes a short letter through the door, which starts a turn in
an idle session (see send_message's deliver). The door closes with this
server.

With --server URL it speaks to a team server's daemon instead (another
machine's, over TLS), as the agent its token binds: the token comes from
$PARLEY_TOKEN, or --token-file. No local daemon is started; when the server
restarts, the session reconnects and picks up where it was, as with a local
daemon, and a request waits up to 45 s for the server to come back. A server
whose certificate a private CA signed needs --ca-file.`,
		Example: `  parley mcp serve --agent alice --role planner
  PARLEY_TOKEN=ptk_... parley mcp serve --server https://parley.example.com:7474
  parley mcp serve --server https://10.0.0.5:7474 --token-file ~/.parley-token --ca-file team-ca.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if rs.server != "" {
				if nudge != "" || os.Getenv("PARLEY_NUDGE") != "" {
					return fmt.Errorf("--nudge types into tmux panes on the daemon's machine: it does not go with --server")
				}
				rs.role, rs.module, rs.profile, rs.withChannel = role, module, profile, withChannel
				return rs.run(cmd, g)
			}
			if rs.tokenFile != "" || rs.caFile != "" {
				return fmt.Errorf("--token-file and --ca-file are for --server URL")
			}
			tenv, inTmux := tmux.FromEnv()
			if _, ok := workspace.FindSession(os.Getenv); !ok && !withChannel {
				// A client that names no session (Gemini CLI, Codex): the
				// client process that started this server is the session.
				// (A channel is Claude Code's, which names its sessions.)
				g.fallback = &workspace.Session{Client: "session", ID: fmt.Sprintf("client-pid-%d", os.Getppid()), Env: "the client's process"}
			}
			if profile == "" {
				profile = os.Getenv("PARLEY_PROFILE")
			}
			// AgentMail's agents are their tmux windows (seed 002).
			g.tmuxFirst = slices.Contains(strings.Split(strings.ReplaceAll(profile, " ", ""), ","), "agentmail")
			id, err := g.identity(cmd.Context(), false)
			if err != nil {
				return err
			}
			if role != "" {
				id.Role = role
			}
			if module != "" {
				id.Module = module
			}
			if nudge == "" {
				nudge = os.Getenv("PARLEY_NUDGE")
			}
			if withChannel && id.Agent == "" {
				return fmt.Errorf("--channel pushes an agent's messages: give it one with --agent NAME, PARLEY_AGENT, or `parley join` here")
			}
			paths, err := home.Resolve("")
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			c := client.New(paths)
			// SIGHUP too: a terminal or tmux pane that closes sends it, and the
			// session must end (putting back what it held) as on SIGTERM.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			if err := c.EnsureDaemon(ctx); err != nil {
				return err
			}
			// A given name that another live client session holds is not
			// this session's: it speaks as its own (and keeps that one, over
			// reconnects, in its headers).
			g.settleName(ctx, c, &id)
			if note := skippedNote(id); note != "" {
				fmt.Fprintf(g.stderr, "parley mcp serve: %s\n", note)
			}
			if strings.HasPrefix(id.Source, "session") {
				fmt.Fprintf(g.stderr, "parley mcp serve: speaking as %s, a name of this client session's own (from %s); --agent NAME or PARLEY_AGENT sets a fixed one\n", id.Agent, strings.TrimSuffix(strings.TrimPrefix(id.Source, "session ("), ")"))
			}
			if id.Agent == "" && needsIdentity(profile) {
				// The client shows the server connected either way; say why
				// every send will fail where its user can see it.
				fmt.Fprintln(g.stderr, "parley mcp serve: no agent identity: this session cannot send or receive messages (\"no sender\"); pass --agent NAME, set PARLEY_AGENT, or run `parley join --name NAME --role ROLE` here")
			}
			// A bad flag is said now, on stderr: once the client connects,
			// all it shows is "Failed to connect".
			if err := checkServeFlags(ctx, c, profile, nudge); err != nil {
				return err
			}
			if inTmux {
				go watchTmux(ctx, cancel, tenv, log)
			}

			// What the session says of itself, in one header (api.Hello).
			hello := api.Hello{Workspace: id.Workspace, Agent: id.Agent, Role: id.Role, Module: id.Module,
				Profiles: splitList(profile), Nudge: nudge, Asked: id.Asked, Push: withChannel}
			if strings.HasPrefix(id.Source, "session") {
				// A name of the session's own, not given: it may choose
				// another (set_identity).
				hello.NameFrom = api.NameSession
				if g.fallback != nil && id.Session == *g.fallback {
					hello.NameFrom, hello.Root = api.NameProcess, id.Root
				}
			}
			if key := id.Session.Key(); key != "" && (g.fallback == nil || id.Session != *g.fallback) {
				// Which client session this is, and its own name: the
				// daemon keeps two live sessions from sharing a name. The
				// client's process is no such key: Codex names its thread
				// to its hooks but not to this server, so the two would
				// count as two sessions (the thread's name is held from
				// its first tool call on, threadName).
				hello.ClientSession, hello.SessionName = key, id.Session.Name(id.Root)
			}
			if m := os.Getenv(runner.EnvManagedAgent); m != "" && m == id.Agent {
				hello.Fixed = true
			}
			if inTmux {
				hello.Tmux = &api.TmuxPane{Socket: tenv.Socket, Pane: tenv.Pane}
			}
			// The client session's own door, from the environment it started
			// us with: the daemon writes a short letter through it when mail
			// comes and the agent is not waiting for it.
			if sock := os.Getenv(door.EnvClaudeSocket); sock != "" {
				hello.ClaudeInbox = &api.DoorRequest{Address: sock, Token: os.Getenv(door.EnvClaudeToken), Session: os.Getenv(door.EnvClaudeSession)}
			}
			if id.Agent != "" {
				hello.CodexHome = door.Home(os.Getenv)
				hello.Doors = clientDoors(ctx, g.stderr)
			}
			h := http.Header{api.HeaderHello: {hello.Header()}}
			opts := &bridge.Options{
				SocketPath: paths.Socket,
				Header:     h,
				Logger:     log,
				Reconnect:  c.EnsureDaemon,
				Stream:     true,
			}
			if withChannel {
				opts.Extension = &channel{c: c.As(id.Workspace, id.Agent).Via("channel"), log: log}
			}
			err = runBridge(ctx, cmd.InOrStdin(), g.raw, opts)
			if cause := context.Cause(ctx); errors.Is(cause, errTmuxGone) {
				return cause
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&role, "role", "", "the agent's role, e.g. planner, implementer, reviewer")
	f.StringVar(&module, "module", "", "the agent's module (area of the code it works on)")
	f.StringVar(&profile, "profile", "", "tool profiles, comma-separated (default native)")
	f.BoolVar(&withChannel, "channel", false, "be a Claude Code channel: push each message for the agent into the session as it arrives (notifications/claude/channel), and relay Claude Code's permission prompts to Parley's permission inbox; launch claude with --channels server:NAME (see `parley init claude --channel`)")
	f.StringVar(&nudge, "nudge", "", `"tmux": the daemon types a notice into this agent's tmux pane when mail arrives while it is idle (default $PARLEY_NUDGE, or nudge in config.toml)`)
	f.StringVar(&rs.server, "server", "", "a team server's URL (https://HOST:PORT): speak to its daemon as the agent of $PARLEY_TOKEN instead of to a local one")
	f.StringVar(&rs.tokenFile, "token-file", "", "with --server: a file holding the agent token, when $PARLEY_TOKEN is not set")
	f.StringVar(&rs.caFile, "ca-file", "", "with --server: PEM certificate of the CA (or the self-signed certificate) that signed the server's")
	return cmd
}

func bridgeCmd(g *globals) *cobra.Command {
	var socket, url string
	var headers []string
	cmd := &cobra.Command{
		Use:   "bridge (--socket PATH | --url URL) [--header 'K: V']...",
		Short: "Bridge stdio to any MCP Streamable HTTP server",
		Long: `Bridge an MCP client that speaks stdio to an MCP server that speaks
Streamable HTTP, on a Unix socket (--socket, path /mcp) or at a URL (--url),
through the go-sdk's Streamable HTTP client: it keeps the session, reads SSE
and JSON answers, and re-initializes when the server forgets the session.
It opens no standalone GET stream (the spec makes it optional): the server
reaches the client on the streams of its requests, so a notification sent
between requests (tools/list_changed) does not arrive.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (socket == "") == (url == "") {
				return fmt.Errorf("give exactly one of --socket PATH and --url URL")
			}
			h := http.Header{}
			for _, kv := range headers {
				k, v, ok := strings.Cut(kv, ":")
				if !ok || strings.TrimSpace(k) == "" {
					return fmt.Errorf("invalid --header %q: want 'Name: value'", kv)
				}
				h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
			log := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			// SIGHUP too: a terminal or tmux pane that closes sends it, and the
			// session must end (putting back what it held) as on SIGTERM.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			return runBridge(ctx, cmd.InOrStdin(), g.raw, &bridge.Options{SocketPath: socket, URL: url, Header: h, Logger: log})
		},
	}
	f := cmd.Flags()
	f.StringVar(&socket, "socket", "", "Unix socket of the server")
	f.StringVar(&url, "url", "", "URL of the server's MCP endpoint")
	f.StringArrayVar(&headers, "header", nil, "HTTP header for every request, 'Name: value' (repeatable)")
	return cmd
}

// needsIdentity reports whether a session of these profiles sends as its
// agent: native and lean do; sidechat and agentmail name the sender per call.
func needsIdentity(profiles string) bool {
	if strings.TrimSpace(profiles) == "" {
		return true
	}
	for _, p := range strings.Split(profiles, ",") {
		if p = strings.TrimSpace(p); p == "native" || p == "lean" {
			return true
		}
	}
	return false
}

// checkServeFlags checks the profiles and the nudge of `mcp serve` against
// what the daemon serves.
func checkServeFlags(ctx context.Context, c *client.Client, profiles, nudge string) error {
	if nudge != "" && nudge != "tmux" {
		return fmt.Errorf("invalid --nudge %q: want tmux (or nothing)", nudge)
	}
	if err := tmux.Unavailable(); nudge == "tmux" && err != nil {
		return fmt.Errorf("--nudge tmux: %w", err)
	}
	if strings.TrimSpace(profiles) == "" {
		return nil
	}
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	for _, p := range strings.Split(profiles, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(st.Profiles, p) {
			return fmt.Errorf("unknown profile %q: want one of %s", p, strings.Join(st.Profiles, ", "))
		}
	}
	return nil
}

// splitList splits a comma-separated list, leaving out blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
