package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/hub"
)

func sendCmd(g *globals) *cobra.Command {
	var priority, replyTo, payload, key string
	var meta []string
	var ack bool
	var ackWithin time.Duration
	var deliver, ttl string
	cmd := &cobra.Command{
		Use:   "send TO TEXT",
		Short: "Send a message to a name, @role, @group or @everyone",
		Long: `Send a message as this agent. TO is an agent name (it need not have joined
yet), @role, @group, @everyone or a composite id agent:role:hash. Where a
role and a group have one name, @NAME is refused: @role:NAME and
@group:NAME say which. TEXT is markdown; "-" reads it from standard input.

A recipient blocked in a wait gets it at once. One that is not, but whose
Claude Code or Codex session registered its door (parley mcp serve does),
gets a short letter through the door, as --deliver says:
  queue      no letter: it waits for the agent's next read or turn boundary
  idle       when the session is idle (a busy one: when its turn ends)
  steer      now: a busy session gets it in its running turn, between tool
             calls; an idle one starts a turn
  interrupt  managed agents: stop the turn in progress (its owner, the
             escalation lead or a person only); through a door, steer
The default follows --priority: critical and high steer, normal waits for
idle, low queues. parley delivery ID shows where each copy stands.

--ttl is how long the message may wait for its recipient: a copy that no
reader took and no door told of by then bounces back to you with the reason
(default: message_ttl in config.toml, 24h; 0: never).

A name that never joined gets the message in its inbox, to wait for it, but
the send says so ("queued", not "sent", with the names that look like it:
bbo has never joined; did you mean bob?), and without --ttl the message
bounces back after unjoined_ttl in config.toml (10m) unless the name joins.`,
		Example: `  parley send bob "please review PR 12"
  parley send @reviewer --priority high "build is red"
  parley send bob --deliver steer --ttl 1h "stop: main is broken"
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
			req := api.SendRequest{To: args[0], Content: text, Priority: priority, ReplyTo: replyTo, AckRequired: ack, IdempotencyKey: key, Deliver: deliver}
			if ttl != "" {
				secs := 0
				if strings.TrimSpace(ttl) != "0" {
					d, err := config.ParseAge(ttl)
					if err != nil {
						return hub.Errorf("send", hub.Invalid, "invalid --ttl: %v", err)
					}
					if secs = int(d.Round(time.Second) / time.Second); secs < 1 {
						return hub.Errorf("send", hub.Invalid, "--ttl %s is too short: want at least 1s, or 0 for none", ttl)
					}
				}
				req.TTL = &secs
			}
			if ackWithin != 0 {
				secs := int(ackWithin.Round(time.Second) / time.Second)
				if secs < 1 {
					return hub.Errorf("send", hub.Invalid, "--ack-within %s is too short: want at least 1s", ackWithin)
				}
				req.AckWithin = &secs
			}
			for _, kv := range meta {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return hub.Errorf("send", hub.Invalid, "invalid --meta %q: want key=value", kv)
				}
				if req.Metadata == nil {
					req.Metadata = map[string]string{}
				}
				req.Metadata[k] = v
			}
			if payload != "" {
				if !json.Valid([]byte(payload)) {
					return hub.Errorf("send", hub.Invalid, "--payload is not valid JSON")
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
			if res.Warning != "" && g.json {
				fmt.Fprintf(g.stderr, "parley: warning: %s\n", res.Warning)
			}
			return g.out(res, func(w io.Writer) {
				if res.Status == "queued" {
					fmt.Fprintf(w, "queued %s for %s: %s\n", res.MessageID, strings.Join(res.Recipients, ", "), res.Warning)
					return
				}
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
	f.StringVar(&key, "idempotency-key", "", "name this send: running it again with the key (within 24 h) sends nothing new")
	f.StringVar(&deliver, "deliver", "", "how a letter through the recipient's door may reach it: queue, idle, steer or interrupt (default: by priority)")
	f.StringVar(&ttl, "ttl", "", "bounce back if nothing reaches the recipient within this time, e.g. 1h or 7d; 0: never (default message_ttl, 24h)")
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
			var reader string
			if peek {
				res, err = c.Peek(cmd.Context(), limit)
			} else {
				res, reader, err = c.CheckLeased(cmd.Context(), limit)
			}
			if err != nil {
				return err
			}
			ids := make([]string, len(res.Messages))
			for i, m := range res.Messages {
				ids[i] = m.MessageID
			}
			return g.settle(cmd.Context(), c, reader, ids, g.out(res, func(w io.Writer) {
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
			}))
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
	// What the wait read, to settle once it is printed.
	var c *client.Client
	var reader string
	var ids []string
	wait := blockingRun(g, &timeout, func(cmd *cobra.Command, _ []string, secs int) (*api.WaitResult, bool, error) {
		var err error
		if c, _, err = g.client(cmd.Context(), true); err != nil {
			return nil, false, err
		}
		var res *api.WaitResult
		if replyTo != "" {
			res, reader, err = c.WaitForReplyLeased(cmd.Context(), api.ReplyWaitRequest{MessageID: replyTo, Timeout: &secs})
		} else {
			res, reader, err = c.WaitLeased(cmd.Context(), api.WaitRequest{Timeout: &secs, PriorityFilter: filter})
		}
		if err != nil {
			return nil, false, err
		}
		if res.Message != nil {
			ids = []string{res.Message.MessageID}
		}
		return res, res.Message != nil, nil
	}, func(w io.Writer, res *api.WaitResult, came bool) {
		if !came {
			fmt.Fprintf(w, "no message within %s\n", timeout)
			return
		}
		printMessage(w, *res.Message)
	})
	cmd := &cobra.Command{
		Use:   "wait",
		Short: "Block until a message arrives for this agent, then print it",
		Long: `Block until the next message for this agent arrives (it is then marked read)
or the timeout passes. Exit status 0 with a message, 3 on timeout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.settle(cmd.Context(), c, reader, ids, wait(cmd, args))
		},
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
			if thread != "" && len(res.Messages) == 0 {
				// An empty page would look like a quiet thread.
				return hub.Errorf("history", hub.NotFound, "no thread %q in workspace %q that you can see: a thread is named by the id of its first message (MESSAGE_ID in parley history)", thread, c.Workspace)
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

// settle tells the daemon what became of what a read handed out (ids, to
// reader), once the command printed it: read if printing went well, given
// back if it failed (printed). A CLI killed before it settled leaves the
// messages leased to its reader, and they come back, marked redelivered,
// when the lease ends (a minute). It returns printed.
func (g *globals) settle(ctx context.Context, c *client.Client, reader string, ids []string, printed error) error {
	if reader == "" || len(ids) == 0 {
		return printed
	}
	if _, err := c.Receipt(context.WithoutCancel(ctx), reader, ids, printed == nil); err != nil && printed == nil {
		return fmt.Errorf("confirm the printed messages (they will come again, marked redelivered): %w", err)
	}
	return printed
}
