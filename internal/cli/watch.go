package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
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
			defer s.Close()
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
					if ctx.Err() != nil {
						return nil
					}
					return err
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
