package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

func tokenCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage agent tokens: TCP credentials bound to one agent",
		Long: `An agent token lets a client reach the daemon over TCP as one agent in one
workspace, and as no other: it cannot claim another name or workspace, nor
manage tokens. The admin token ($PARLEY_HOME/token) keeps full access; the
Unix socket trusts its OS user. Only a hash of each token is stored.`,
	}
	var role, server string
	create := &cobra.Command{
		Use:   "create --agent NAME [--workspace W] [--role R] [--server URL]",
		Short: "Issue a token bound to an agent and its role (printed once; only its hash is kept)",
		Long: `Issue a token that acts as one agent, in one workspace, with one role: a
session with it cannot claim another name, workspace or role. Without --role
the token binds the role the agent has now (or "agent" for a new one).

It prints the one line a teammate needs to connect their agent to this
daemon from another machine (parley mcp serve --server URL, with the token
in PARLEY_TOKEN): URL is --server, else public_url in config.toml, else this
daemon's TCP listener (https with tls_cert; see docs/team-server.md).`,
		Example: `  parley token create --agent bob --role reviewer
  parley token create --agent bob --server https://parley.example.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.agent == "" {
				return hub.Errorf("token create", hub.Invalid, "--agent NAME is required: the agent the token acts as")
			}
			c, id, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			t, err := c.CreateToken(cmd.Context(), api.TokenRequest{Agent: g.agent, Workspace: id.Workspace, Role: role, Server: server})
			if err != nil {
				return err
			}
			return g.out(t, func(w io.Writer) {
				if t.Line == "" {
					fmt.Fprintf(w, "token %s for agent %s (role %s) in workspace %s:\n\n  %s\n\n", t.ID, t.Agent, t.Role, t.Workspace, t.Token)
					fmt.Fprintln(w, "It is shown only now. Send it as 'Authorization: Bearer TOKEN' to the daemon's TCP address.")
					fmt.Fprintln(w, "This daemon serves no TCP listener: for teammates on other machines, set listen, tls_cert and")
					fmt.Fprintln(w, "tls_key in config.toml (docs/team-server.md), or pass --server URL.")
				} else {
					fmt.Fprintf(w, "token %s for agent %s (role %s) in workspace %s. The line for %s (shown only now):\n\n  %s\n\n", t.ID, t.Agent, t.Role, t.Workspace, t.Agent, t.Line)
					fmt.Fprintf(w, "It runs the MCP server an MCP client starts; in Claude Code:\n  claude mcp add parley -e %s=%s -- parley mcp serve --server %s\n", api.EnvToken, t.Token, t.Server)
				}
				fmt.Fprintf(w, "Revoke it with `parley token revoke %s`.\n", t.ID)
			})
		},
	}
	create.Flags().StringVar(&role, "role", "", "the role the agent has under the token (default: its role now)")
	create.Flags().StringVar(&server, "server", "", "the URL teammates reach this daemon at, for the printed line (default: public_url in config.toml, else the TCP listener)")
	addJSON(create, g)
	list := &cobra.Command{
		Use:   "list",
		Short: "List the agent tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			l, err := c.Tokens(cmd.Context())
			if err != nil {
				return err
			}
			return g.out(l, func(w io.Writer) {
				if len(l.Tokens) == 0 {
					fmt.Fprintln(w, "no agent tokens")
					return
				}
				for _, t := range l.Tokens {
					role := t.Role
					if role == "" {
						role = "-"
					}
					fmt.Fprintf(w, "%s  %-16s %-12s %s  (created %s)\n", t.ID, t.Agent, role, t.Workspace, t.CreatedAt.Local().Format(time.DateTime))
				}
			})
		},
	}
	addJSON(list, g)
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an agent token at once, on every daemon sharing the store",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			if err := c.RevokeToken(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "revoked token %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}
