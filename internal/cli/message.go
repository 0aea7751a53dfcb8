package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
)

func sendCmd(g *globals) *cobra.Command {
	var priority, replyTo, payload string
	var meta []string
	var ack bool
	var ackWithin time.Duration
	cmd := &cobra.Command{
		Use:   "send TO TEXT",
		Short: "Send a message to a name, @role, @group or @everyone",
		Long: `Send a message as this agent. TO is an agent name (it need not have joined
yet), @role, @group, @everyone or a composite id agent:role:hash. TEXT is
markdown; "-" reads it from standard input.`,
		Example: `  parley send bob "please review PR 12"
  parley send @reviewer --priority high "build is red"
  git diff | parley send bob -`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := args[1]
			if text == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<20))
				if err != nil {
					return fmt.Errorf("read message from stdin: %w", err)
				}
				text = string(b)
			}
			req := api.SendRequest{To: args[0], Content: text, Priority: priority, ReplyTo: replyTo, AckRequired: ack}
			if ackWithin != 0 {
				secs := int(ackWithin.Round(time.Second) / time.Second)
				if secs < 1 {
					return fmt.Errorf("--ack-within %s is too short: want at least 1s", ackWithin)
				}
				req.AckWithin = &secs
			}
			for _, kv := range meta {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("invalid --meta %q: want key=value", kv)
				}
				if req.Metadata == nil {
					req.Metadata = map[string]string{}
				}
				req.Metadata[k] = v
			}
			if payload != "" {
				if !json.Valid([]byte(payload)) {
					return fmt.Errorf("--payload is not valid JSON")
				}
				req.Payload = json.RawMessage(payload)
			}
			c, _, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			res, err := c.Send(cmd.Context(), req)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "sent %s to %s\n", res.MessageID, strings.Join(res.Recipients, ", "))
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&priority, "priority", "p", "normal", "critical, high, normal or low")
	f.StringVar(&replyTo, "reply-to", "", "id of the message this answers")
	f.StringArrayVar(&meta, "meta", nil, "metadata key=value (repeatable)")
	f.StringVar(&payload, "payload", "", "JSON payload to attach")
	f.BoolVar(&ack, "ack", false, "ask every recipient to acknowledge (parley ack ID)")
	f.DurationVar(&ackWithin, "ack-within", 0, "tell me once if a recipient has not acknowledged within this time (implies --ack)")
	addJSON(cmd, g)
	return cmd
}

func inboxCmd(g *globals) *cobra.Command {
	var limit int
	var peek bool
	cmd := &cobra.Command{
		Use:   "inbox",
		Short: "Read this agent's unread messages (and mark them read)",
		Long: `Print this agent's unread messages, highest priority first, then oldest
first, and mark them read, as check_messages does. --peek leaves them unread.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			var res *api.CheckResult
			if peek {
				res, err = c.Peek(cmd.Context(), limit)
			} else {
				res, err = c.Check(cmd.Context(), limit)
			}
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				if len(res.Messages) == 0 {
					fmt.Fprintln(w, "no unread messages")
					return
				}
				for _, m := range res.Messages {
					printMessage(w, m)
				}
				if res.Remaining > 0 {
					fmt.Fprintf(w, "(%d more unread)\n", res.Remaining)
				}
			})
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 50, "most messages to read")
	cmd.Flags().BoolVar(&peek, "peek", false, "show without marking read")
	addJSON(cmd, g)
	return cmd
}

func waitCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	var filter, replyTo string
	cmd := &cobra.Command{
		Use:   "wait",
		Short: "Block until a message arrives for this agent, then print it",
		Long: `Block until the next message for this agent arrives (it is then marked read)
or the timeout passes. Exit status 0 with a message, 3 on timeout.`,
		Args: cobra.NoArgs,
		RunE: blockingRun(g, &timeout, func(cmd *cobra.Command, _ []string, secs int) (*api.WaitResult, bool, error) {
			c, _, err := g.client(cmd.Context(), true)
			if err != nil {
				return nil, false, err
			}
			var res *api.WaitResult
			if replyTo != "" {
				res, err = c.WaitForReply(cmd.Context(), api.ReplyWaitRequest{MessageID: replyTo, Timeout: &secs})
			} else {
				res, err = c.Wait(cmd.Context(), api.WaitRequest{Timeout: &secs, PriorityFilter: filter})
			}
			if err != nil {
				return nil, false, err
			}
			return res, res.Message != nil, nil
		}, func(w io.Writer, res *api.WaitResult, came bool) {
			if !came {
				fmt.Fprintf(w, "no message within %s\n", timeout)
				return
			}
			printMessage(w, *res.Message)
		}),
	}
	timeoutFlag(cmd, &timeout, "")
	cmd.Flags().StringVar(&filter, "priority-filter", "all", "all, critical, high_and_above or normal_and_above")
	cmd.Flags().StringVar(&replyTo, "reply-to", "", "wait only for a reply to this message (in its thread, to me)")
	addJSON(cmd, g)
	return cmd
}

func broadcastCmd(g *globals) *cobra.Command {
	var priority string
	var active bool
	var exclude []string
	cmd := &cobra.Command{
		Use:   "broadcast TEXT",
		Short: "Send a message to every other agent of the workspace",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			f := &api.BroadcastFilter{Exclude: exclude}
			if active {
				f.Status = "active"
			}
			res, err := c.Broadcast(cmd.Context(), api.BroadcastRequest{Content: args[0], Priority: priority, Filter: f})
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %d recipients %s\n", res.Status, res.TotalSent, strings.Join(res.SentTo, ", "))
			})
		},
	}
	cmd.Flags().StringVarP(&priority, "priority", "p", "normal", "critical, high, normal or low")
	cmd.Flags().BoolVar(&active, "active", false, "only agents active in the last 2 minutes")
	cmd.Flags().StringArrayVar(&exclude, "exclude", nil, "agent name or role to leave out (repeatable)")
	addJSON(cmd, g)
	return cmd
}

func historyCmd(g *globals) *cobra.Command {
	var thread, with string
	var limit int
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show the workspace's messages, newest first (read or not)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.History(cmd.Context(), thread, with, limit)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				for _, m := range res.Messages {
					printMessage(w, m)
				}
			})
		},
	}
	cmd.Flags().StringVar(&thread, "thread", "", "only this thread (the id of its first message)")
	cmd.Flags().StringVar(&with, "with", "", "only messages from or to this agent")
	cmd.Flags().IntVarP(&limit, "limit", "n", 50, "most messages")
	addJSON(cmd, g)
	return cmd
}

func printMessage(w io.Writer, m api.MessageInfo) {
	fmt.Fprintf(w, "── %s  from %s to %s  [%s]  %s\n", m.MessageID, m.From, m.To, m.Priority, m.Timestamp)
	if m.ReplyTo != "" {
		fmt.Fprintf(w, "   reply to %s\n", m.ReplyTo)
	}
	if m.Redelivered {
		fmt.Fprintf(w, "   redelivered: handed out %d times (you may have seen it)\n", m.DeliveryCount)
	}
	if m.AckRequired {
		fmt.Fprintf(w, "   ack requested%s: parley ack %s\n", map[bool]string{true: " by " + m.AckDeadline}[m.AckDeadline != ""], m.MessageID)
	}
	fmt.Fprintln(w, strings.TrimRight(m.Content, "\n"))
	if len(m.Payload) > 0 {
		fmt.Fprintf(w, "payload: %s\n", m.Payload)
	}
}
