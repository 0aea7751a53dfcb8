package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/workspace"
)

func joinCmd(g *globals) *cobra.Command {
	var name, role, module string
	var lookalike bool
	cmd := &cobra.Command{
		Use:   "join --name NAME [--role ROLE] [--module M]",
		Short: "Register an agent in this workspace and write its identity file",
		Long: `Register an agent and write .parley/identities/NAME.json at the top of this
directory's git worktree, so that later commands and ` + "`parley mcp serve`" + ` find it.
Joining again updates the role and module and keeps the inbox.

The file is for whoever joined: run at a terminal, it is a person's, which
commands outside any client session take; run inside a client session (a
Claude Code session's shell, $CLAUDE_CODE_SESSION_ID; a Codex thread's,
$CODEX_THREAD_ID; $PARLEY_SESSION), it records that session, and only that
session's MCP server, hooks and commands take it. A session never speaks as
an identity file made for someone else.

A new name that looks like an existing agent's (Bob beside bob) is refused,
and so is one built to look like another (bоb with a Cyrillic о, fullwidth
ｂｏｂ). If a look-alike took a name first, --allow-lookalike lets you, the
admin, claim it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				name = g.agent
			}
			if name == "" {
				return fmt.Errorf("join needs --name NAME")
			}
			g.agent = name
			c, id, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			a, err := c.Join(cmd.Context(), api.JoinRequest{Name: name, Role: role, Module: module, AllowLookalike: lookalike})
			if err != nil {
				return err
			}
			paths, err := home.Resolve("")
			if err != nil {
				return err
			}
			path, err := workspace.SaveIdentity(id.Root, paths.Home, workspace.Identity{
				Name: a.Name, Role: a.Role, Module: a.Module, Workspace: id.Workspace, AgentID: a.AgentID, JoinedAt: time.Now().UTC(),
				Session: id.Session.Key(),
			})
			if err != nil {
				return err
			}
			return g.out(a, func(w io.Writer) {
				fmt.Fprintf(w, "joined %s as %s (role %s) in workspace %s\nidentity: %s\n", a.Name, a.AgentID, a.Role, id.Workspace, path)
				if id.Session.ID != "" {
					fmt.Fprintf(w, "The identity is this client session's (%s, from %s): only it speaks as %s; other sessions here keep names of their own.\n", id.Session.Client, id.Session.Env, a.Name)
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "agent name (letters, digits, . _ -)")
	f.StringVar(&role, "role", "", "role, addressable as @role (default agent)")
	f.StringVar(&module, "module", "", "module or area the agent works on")
	f.BoolVar(&lookalike, "allow-lookalike", false, "register the name even though it looks like an existing agent's (to claim one a look-alike squatted)")
	addJSON(cmd, g)
	return cmd
}

func whoamiCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the identity commands here act as",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			a, err := c.GetAgent(cmd.Context(), id.Agent)
			if err != nil {
				return err
			}
			return g.out(struct {
				*api.AgentInfo
				Source string `json:"source"`
			}{a, id.Source}, func(w io.Writer) {
				fmt.Fprintf(w, "%s (%s, role %s) in workspace %s\npresence: %s, status: %s (from %s)\n", a.Name, a.AgentID, a.Role, a.Workspace, a.Status, a.WorkStatus, id.Source)
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}

func agentsCmd(g *globals) *cobra.Command {
	var active bool
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List the agents of this workspace",
		Long: `List the agents of this workspace: their presence (active or offline), their
health as the daemon sees it (working; waiting, blocked in a wait or on a
person; idle; stalled, a turn with no progress for stall_after; offline),
their self-reported status, when they were last seen and where.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.Agents(cmd.Context(), !active)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				if res.Count == 0 {
					fmt.Fprintln(w, "no agents in this workspace: register one with `parley join --name NAME --role ROLE`")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tROLE\tPRESENCE\tHEALTH\tSTATUS\tLAST SEEN\tHOST\tID")
				for _, a := range res.Agents {
					health := a.Health
					if a.HealthSince != "" && a.Health != "idle" && a.Health != "offline" {
						health += " (" + strings.TrimSuffix(ago(a.HealthSince), " ago") + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, a.Role, a.Status, health, a.WorkStatus, ago(a.LastSeenAt), a.Host, a.AgentID)
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&active, "active", false, "only agents active in the last 2 minutes")
	addJSON(cmd, g)
	cmd.AddCommand(agentsForgetCmd(g))
	return cmd
}

func agentsForgetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "forget NAME",
		Short: "Remove an agent from this workspace",
		Long: `Remove an agent that is gone (a client session that ended, a name nobody
uses any more): its record, group memberships, file reservations and old
names go, its doors close, and each message it had not read bounces back to
its sender, who is told. What it sent stays in the history, and the name is
free to join again. An agent with a live session cannot be forgotten.

Agents named after a client session that never made a call are forgotten by
themselves, unused_agent_grace (config.toml, default 10m) after their session
ends.`,
		Example: `  parley agents forget claude-myrepo-3f9a1c`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.ForgetAgent(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "forgot %s", res.Agent)
				if res.Bounced > 0 {
					fmt.Fprintf(w, ": %s it had not read went back to their senders", plural(res.Bounced, "message"))
				}
				fmt.Fprintln(w)
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}

func statusCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [ready|work|offline]",
		Short: "Show this agent's status and unread count, or set its status",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				if err := c.SetStatus(cmd.Context(), args[0]); err != nil {
					return err
				}
			}
			a, err := c.GetAgent(cmd.Context(), id.Agent)
			if err != nil {
				return err
			}
			unread, err := c.Peek(cmd.Context(), 1)
			if err != nil {
				return err
			}
			n := unread.Remaining + len(unread.Messages)
			return g.out(struct {
				*api.AgentInfo
				Unread int `json:"unread"`
			}{a, n}, func(w io.Writer) {
				fmt.Fprintf(w, "%s: status %s, %s, %d unread\n", a.Name, a.WorkStatus, a.Status, n)
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}

// ago renders an RFC 3339 time as a short age.
func ago(ts string) string {
	t, err := time.Parse(api.TimeFormat, ts)
	if err != nil {
		return "never"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}
