package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/quote"
)

// deliveryCmd is `parley delivery MESSAGE_ID`: where each copy of a message
// stands. (`parley status` was taken: it shows the daemon.)
func deliveryCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delivery MESSAGE_ID",
		Short: "Show where each copy of a message stands: queued, handed, held, unconfirmed, seen, read, acked, declined, bounced",
		Long: `Show the delivery state of a message per recipient, each as the recipient's
client reported it, never guessed: queued (in the inbox; "thread not
loaded" when its Codex thread could not take a letter), handed (a letter
through the recipient's door told its session), held (the client holds that
letter for a person: why, since when, until when if it said, and how to
release it), unconfirmed (the session went idle and said nothing of the
letter), seen (the session's turn carried the letter), delivered (handed
to a session, not yet confirmed), redelivered (back in the inbox after a
session went away with it), read, acked, declined (a person refused the
letter in the session) or bounced (nothing reached the recipient within the
message's time to live, or the client dropped the letter; REASON says why;
'parley redeliver' sends it again), with how many times it was handed out
and when, and what first reached the recipient with it (WOKEN BY: a wait, a
check of the inbox, a door letter (door:claude, door:codex), a channel
push, a hook, a tmux notice or a managed agent's turn). Its sender sees
every recipient; a recipient its own copy.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.MessageStatus(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "%s from %s to %s  %s\n", res.MessageID, res.From, res.To, res.Timestamp)
				if res.AckRequired {
					fmt.Fprintf(w, "ack requested%s\n", map[bool]string{true: " by " + res.AckDeadline}[res.AckDeadline != ""])
				}
				fmt.Fprintf(w, "deliver %s, time to live %s\n", res.Deliver, map[bool]string{true: "until " + res.ExpiresAt, false: "none"}[res.ExpiresAt != ""])
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RECIPIENT\tSTATE\tHANDED OUT\tDELIVERED\tSEEN\tREAD\tACKED\tWOKEN BY")
				var bounced, notes []string
				for _, d := range res.Recipients {
					if d.Door != "" {
						state := d.Door
						if state == "notloaded" {
							state = "queued: thread not loaded"
						}
						n := fmt.Sprintf("%s %s since %s", d.Recipient, state, d.Since)
						if d.Until != "" {
							n += " until " + d.Until
						}
						if d.Note != "" {
							n += ": " + d.Note
						}
						notes = append(notes, n)
					}
					woke := orDash(d.WakePath)
					if d.WokenAt != "" {
						woke += " at " + d.WokenAt
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", d.Recipient, d.State, d.DeliveryCount, orDash(d.DeliveredAt), orDash(d.SeenAt), orDash(d.ReadAt), orDash(d.AckedAt), woke)
					if d.BounceReason != "" {
						bounced = append(bounced, fmt.Sprintf("%s %s at %s: %s (parley redeliver %s)", d.Recipient, d.State, d.BouncedAt, d.BounceReason, res.MessageID))
					}
				}
				tw.Flush()
				for _, n := range append(notes, bounced...) {
					fmt.Fprintln(w, n)
				}
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}

func ackCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ack MESSAGE_ID...",
		Short: "Acknowledge messages sent to this agent",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			res, err := c.Ack(cmd.Context(), args)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "acknowledged %d (%d before)\n", res.Acked, len(args)-res.Acked)
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}

func overdueCmd(g *globals) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "overdue",
		Short: "List messages whose ack deadline passed with recipients that have not acknowledged",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), !all)
			if err != nil {
				return err
			}
			res, err := c.Overdue(cmd.Context(), all)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				if len(res.Overdue) == 0 {
					fmt.Fprintln(w, "no overdue acknowledgements")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "MESSAGE\tFROM\tTO\tDEADLINE\tNOT ACKED BY\tTEXT")
				for _, o := range res.Overdue {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", o.MessageID, o.From, o.To, o.AckDeadline, strings.Join(o.Pending, ","), quote.FirstLine(o.Preview, 60))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every sender's, not only this agent's")
	addJSON(cmd, g)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
