package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
)

func watchCmd(g *globals) *cobra.Command {
	var all bool
	var kinds string
	cmd := &cobra.Command{
		Use:   "watch [--all] [--kinds KIND,...] [--json]",
		Short: "Print the workspace's events live: joins, status changes, messages, groups",
		Long: `Print the events of this workspace as they happen, one line each, until
interrupted: agents joining, changing status and leaving, messages sent (with a
preview of their first 120 characters), groups changing.

--json prints one JSON object per line instead, as the daemon's
GET /api/v1/events WebSocket sends them. --all watches every workspace.

Kinds: ` + strings.Join(api.EventKinds, ", "),
		Example: `  parley watch
  parley watch --kinds message.sent --json | jq .preview`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var ks []string
			if kinds != "" {
				if _, err := api.ParseEventKinds(kinds); err != nil {
					return err
				}
				ks = strings.Split(strings.ReplaceAll(kinds, " ", ""), ",")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			c, _, err := g.client(ctx, false)
			if err != nil {
				return err
			}
			s, err := c.Events(ctx, all, ks)
			if err != nil {
				return err
			}
			// On stderr, so that --json output stays pure; it also tells
			// scripts that the subscription is live.
			what := "workspace " + c.Workspace
			if all {
				what = "every workspace"
			}
			fmt.Fprintf(g.stderr, "watching %s (Ctrl-C to stop)\n", what)
			for {
				e, raw, err := s.Next(ctx)
				if err != nil {
					s.Close()
					if ctx.Err() != nil {
						return nil
					}
					// The daemon restarted (or dropped us as too slow):
					// subscribe again, starting it if need be, as every
					// command does.
					fmt.Fprintf(g.stderr, "lost the daemon's event stream (%v); reconnecting\n", err)
					if s, err = resubscribe(ctx, c, all, ks); err != nil {
						if ctx.Err() != nil {
							return nil
						}
						return err
					}
					fmt.Fprintf(g.stderr, "watching %s again (events in between are not shown)\n", what)
					continue
				}
				if g.json {
					fmt.Fprintf(g.stdout, "%s\n", raw)
				} else {
					fmt.Fprintln(g.stdout, e.Line())
				}
			}
		},
	}
	f := cmd.Flags()
	f.BoolVar(&all, "all", false, "watch every workspace")
	f.StringVar(&kinds, "kinds", "", "only these event kinds, comma-separated")
	addJSON(cmd, g)
	return cmd
}

// resubscribe opens the event stream again, starting the daemon if it is
// not running, for up to a minute.
func resubscribe(ctx context.Context, c *client.Client, all bool, kinds []string) (*client.EventStream, error) {
	deadline := time.Now().Add(time.Minute)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		err := c.EnsureDaemon(ctx)
		if err == nil {
			var s *client.EventStream
			if s, err = c.Events(ctx, all, kinds); err == nil {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("reconnect to the daemon: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay): // the daemon is between lives: try again
		}
	}
}
