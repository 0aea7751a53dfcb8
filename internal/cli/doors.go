package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/quote"
)

// doorsCmd is `parley doors`: the client sessions' doors of this agent or
// workspace.
func doorsCmd(g *globals) *cobra.Command {
	var all, closed bool
	cmd := &cobra.Command{
		Use:   "doors",
		Short: "List the doors of agents' client sessions (Claude Code inbox sockets, Codex threads)",
		Long: `List the doors that agents' client sessions registered: a Claude Code
session's inbox socket, a Codex thread. When mail comes for an agent that is
not waiting for it, the daemon writes a short letter through its newest open
door, which starts a turn in an idle session. parley mcp serve registers its
session's door and closes it when it ends; a door that turns out gone
(the session exited) closes then. Doors of this agent, or of every agent with
--all; closed ones too with --closed, with why they closed.

  parley doors close ID   closes a door (no more letters through it)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), !all)
			if err != nil {
				return err
			}
			res, err := c.Doors(cmd.Context(), all, closed)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				if len(res.Doors) == 0 {
					fmt.Fprintln(w, "no doors")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tAGENT\tKIND\tSESSION\tADDRESS\tOPENED\tSTATE")
				for _, d := range res.Doors {
					state := "open"
					if d.ClosedAt != "" {
						state = "closed " + d.ClosedAt + ": " + d.CloseReason
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Agent, d.Kind, d.Session, d.Address, d.OpenedAt, state)
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every agent's doors in this workspace")
	cmd.Flags().BoolVar(&closed, "closed", false, "closed doors too")
	addJSON(cmd, g)
	cmd.AddCommand(&cobra.Command{
		Use:   "close ID",
		Short: "Close a door: no more letters through it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			d, err := c.CloseDoor(cmd.Context(), args[0], false)
			if err != nil {
				return err
			}
			return g.out(d, func(w io.Writer) {
				fmt.Fprintf(w, "closed %s (%s door of %s): %s\n", d.ID, d.Kind, d.Agent, d.CloseReason)
			})
		},
	})
	return cmd
}

// bouncedCmd is `parley bounced`: the dead letters.
func bouncedCmd(g *globals) *cobra.Command {
	var all bool
	var limit int
	cmd := &cobra.Command{
		Use:   "bounced",
		Short: "List messages that bounced or were declined, with why; parley redeliver sends one again",
		Long: `List the dead letters, newest first, with why: copies of this agent's
messages (every sender's with --all) that left their recipient's inbox
unread. STATE is bounced (no reader took it and no door told of it within
the message's time to live while the recipient had no session and no door;
or the client dropped the letter that told of it, let its hold expire, or
refuses letters) or declined (a person refused the letter in the session).
Each was also told to its sender once, as a message from parley.
'parley redeliver MESSAGE_ID' sends one again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), !all)
			if err != nil {
				return err
			}
			res, err := c.Bounced(cmd.Context(), all, limit)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				if len(res.Bounced) == 0 {
					fmt.Fprintln(w, "no bounced messages")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "MESSAGE\tFROM\tTO\tRECIPIENT\tSTATE\tSENT\tBOUNCED\tREASON\tTEXT")
				for _, b := range res.Bounced {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.MessageID, b.From, b.To, b.Recipient, b.State, b.SentAt, b.BouncedAt, b.Reason, quote.FirstLine(b.Preview, 60))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every sender's, not only this agent's")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many (default 50)")
	addJSON(cmd, g)
	return cmd
}

// redeliverCmd is `parley redeliver MESSAGE_ID`: a bounced or declined copy
// goes back to its recipient's inbox.
func redeliverCmd(g *globals) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "redeliver MESSAGE_ID",
		Short: "Send a bounced or declined message again",
		Long: `Put the bounced or declined copies of a message back in their recipients'
inboxes, as if just sent: a blocked wait, the recipient's door, its hooks
or a tmux notice reach it again. --to takes one recipient's copy alone.
The message's sender may redeliver it (an agent token only its own
messages), and so may a person. 'parley bounced' lists what came back.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.Redeliver(cmd.Context(), args[0], to)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "redelivered %s to %s\n", res.MessageID, strings.Join(res.Recipients, ", "))
			})
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "only this recipient's copy")
	addJSON(cmd, g)
	return cmd
}
