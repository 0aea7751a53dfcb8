package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func purgeCmd(g *globals) *cobra.Command {
	var olderThan string
	cmd := &cobra.Command{
		Use:   "purge --older-than AGE",
		Short: "Delete the read messages older than AGE (such as 30d), while the daemon runs",
		Long: `Delete, in every workspace, the messages older than AGE (30d, 2w, 12h...) that
every recipient has read. Unread messages stay, however old; so does one
whose sender asked for acknowledgements, until every recipient has acked, or
until seven days after its deadline passed and its sender was told. The
daemon does it in small transactions while it serves. retention = "30d" in
config.toml does the same on its own.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if olderThan == "" {
				return fmt.Errorf("purge needs --older-than AGE, such as 30d")
			}
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.Purge(cmd.Context(), olderThan)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "purged %d read messages from before %s (%d deliveries)\n", res.Messages, res.Before, res.Deliveries)
			})
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "age of the oldest message kept: 30d, 2w, 12h...")
	addJSON(cmd, g)
	return cmd
}
