package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
)

func searchCmd(g *globals) *cobra.Command {
	var req api.SearchRequest
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Search the workspace's messages",
		Long: `Search message content, payload text and metadata values, best match first.
Every word must occur, in any form ("parse" finds "parsing"); "a phrase" in
quotes must occur as written; word* matches words that start with word.

A person sees every message of the workspace; with --agent NAME the search
sees only what that agent sent or received, as its search_messages tool does.`,
		Example: `  parley search flaky migration
  parley search '"connection refused"' --since 2d --from alice`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Query = strings.Join(args, " ")
			c, err := searchClient(cmd.Context(), g)
			if err != nil {
				return err
			}
			res, err := c.Search(cmd.Context(), req)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				if len(res.Results) == 0 {
					fmt.Fprintln(w, "no messages match")
				}
				for _, h := range res.Results {
					fmt.Fprintf(w, "── %s  from %s to %s  %s\n   %s\n", h.MessageID, h.From, h.To, h.Timestamp,
						strings.ReplaceAll(h.Snippet, "\n", " "))
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.From, "from", "", "only messages from this agent")
	f.StringVar(&req.Thread, "thread", "", "only this thread")
	f.StringVar(&req.Since, "since", "", "only messages since a time (RFC 3339) or an age (90m, 2h, 3d)")
	f.IntVar(&req.Limit, "limit", 0, "most results (default 20, at most 100)")
	addJSON(cmd, g)
	return cmd
}

// searchClient searches as a person (the whole workspace) unless --agent
// names an agent to search as.
func searchClient(ctx context.Context, g *globals) (*client.Client, error) {
	if g.agent != "" {
		c, _, err := g.client(ctx, true)
		return c, err
	}
	id, err := g.identity(ctx, false)
	if err != nil {
		return nil, err
	}
	c, _, err := g.client(ctx, false)
	if err != nil {
		return nil, err
	}
	return c.As(id.Workspace, ""), nil
}
