package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/hub"
)

func purgeCmd(g *globals) *cobra.Command {
	var olderThan string
	cmd := &cobra.Command{
		Use:   "purge AGE | --older-than AGE",
		Short: "Delete the read messages older than AGE (such as 30d), while the daemon runs",
		Long: `Delete, in every workspace, the messages older than AGE (30d, 2w, 12h...) that
every recipient has read. Unread messages stay, however old; so does one
whose sender asked for acknowledgements, until every recipient has acked, or
until seven days after its deadline passed and its sender was told. The
daemon does it in small transactions while it serves. retention = "30d" in
config.toml does the same on its own.

  parley purge 30d                # or: parley purge --older-than 30d`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if olderThan != "" && olderThan != args[0] {
					return hub.Errorf("purge", hub.Invalid, "two ages given (%s and --older-than %s): give one", args[0], olderThan)
				}
				olderThan = args[0]
			}
			if olderThan == "" {
				return hub.Errorf("purge", hub.Invalid, "purge needs an age, such as `parley purge 30d`")
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
