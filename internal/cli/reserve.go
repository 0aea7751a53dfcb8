package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/workspace"
)

func reserveCmd(g *globals) *cobra.Command {
	var ttl time.Duration
	var shared bool
	var reason string
	cmd := &cobra.Command{
		Use:   "reserve PATH...",
		Short: "Reserve files so that other agents do not edit or commit them meanwhile",
		Long: `Reserve files for this agent: paths or glob patterns (* ? [a-z] within a
segment, ** for any depth, dir/ for everything under dir), relative to this
directory. A reservation is all or nothing: when another agent holds an
overlapping exclusive reservation (or this one is exclusive and overlaps any),
nothing is reserved, the holders are named, and the exit status is 1.
Reserving a path again renews it. The commit guard (parley guard install) and
the edit hook (parley init claude --leases) respect reservations.

A path named like a subcommand is written ./list.`,
		Example: `  parley reserve internal/store/ --reason "moving to pgx"
  parley reserve 'src/**/*_test.go' --shared --ttl 30m
  parley reserve list
  parley reserve release --all`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			paths, err := repoPatterns(id, args)
			if err != nil {
				return err
			}
			excl := !shared
			res, err := c.Reserve(cmd.Context(), api.ReserveRequest{Paths: paths, TTLSeconds: int(ttl / time.Second),
				Exclusive: &excl, Reason: reason})
			if err != nil {
				return err
			}
			if err := g.out(res, func(w io.Writer) {
				for _, r := range res.Granted {
					printReservation(w, r)
				}
				if len(res.Conflicts) > 0 {
					fmt.Fprintln(w, "nothing reserved; held by others:")
					for _, c := range res.Conflicts {
						fmt.Fprintf(w, "  %s (id %s)\n", c.Message, c.Reservation.ID)
					}
				}
			}); err != nil {
				return err
			}
			if len(res.Conflicts) > 0 {
				return &exitError{code: 5} // conflict (README's exit statuses)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "how long to hold them (10s to 24h; default 1h)")
	cmd.Flags().BoolVar(&shared, "shared", false, "a shared reservation: it clashes only with exclusive ones")
	cmd.Flags().StringVar(&reason, "reason", "", "what you are doing, shown to agents who run into it")
	addJSON(cmd, g)
	cmd.AddCommand(reserveListCmd(g), reserveReleaseCmd(g), reserveRenewCmd(g), reserveWhoCmd(g), reserveForceCmd(g))
	return cmd
}

// repoPatterns turns patterns relative to the working directory into
// patterns relative to the top of the repository, as reservations hold them.
func repoPatterns(id workspace.Resolved, args []string) ([]string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(args))
	for i, a := range args {
		p, ok := repoPath(id.Root, dir, a)
		if !ok {
			return nil, fmt.Errorf("%s is outside the repository %s", a, id.Root)
		}
		if strings.HasSuffix(a, "/") {
			p += "/"
		}
		out[i] = p
	}
	return out, nil
}

func printReservation(w io.Writer, r api.ReservationInfo) {
	mode := "exclusive"
	if !r.Exclusive {
		mode = "shared"
	}
	fmt.Fprintf(w, "%s  %s  %s by %s until %s", r.ID, r.Path, mode, r.Agent, r.ExpiresAt)
	if r.Reason != "" {
		fmt.Fprintf(w, ": %s", r.Reason)
	}
	fmt.Fprintln(w)
}

func printReservations(g *globals, res *api.ReservationsResult, none string) error {
	return g.out(res, func(w io.Writer) {
		if len(res.Reservations) == 0 {
			fmt.Fprintln(w, none)
		}
		for _, r := range res.Reservations {
			printReservation(w, r)
		}
	})
}

func reserveListCmd(g *globals) *cobra.Command {
	var mine bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the workspace's reservations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, id, err := g.client(cmd.Context(), mine)
			if err != nil {
				return err
			}
			agent := ""
			if mine {
				agent = id.Agent
			}
			res, err := c.Reservations(cmd.Context(), agent)
			if err != nil {
				return err
			}
			return printReservations(g, res, "no reservations")
		},
	}
	cmd.Flags().BoolVar(&mine, "mine", false, "only this agent's")
	addJSON(cmd, g)
	return cmd
}

func reserveReleaseCmd(g *globals) *cobra.Command {
	var ids []string
	var all bool
	cmd := &cobra.Command{
		Use:   "release [PATH...]",
		Short: "Release this agent's reservations of the paths (as reserved), by --id, or --all",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && len(ids) == 0 && !all {
				return fmt.Errorf("name the paths to release, --id ID, or --all")
			}
			c, id, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			paths, err := repoPatterns(id, args)
			if err != nil {
				return err
			}
			res, err := c.ReleaseReservations(cmd.Context(), api.ReleaseRequest{IDs: ids, Paths: paths})
			if err != nil {
				return err
			}
			return printReservations(g, res, "nothing to release")
		},
	}
	cmd.Flags().StringSliceVar(&ids, "id", nil, "reservation ids")
	cmd.Flags().BoolVar(&all, "all", false, "every reservation of this agent")
	addJSON(cmd, g)
	return cmd
}

func reserveRenewCmd(g *globals) *cobra.Command {
	var ids []string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "renew [ID...]",
		Short: "Extend this agent's reservations (all, or those named)",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ids = append(ids, args...)
			c, _, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			res, err := c.RenewReservations(cmd.Context(), api.RenewRequest{IDs: ids, TTLSeconds: int(ttl / time.Second)})
			if err != nil {
				return err
			}
			return printReservations(g, res, "nothing to renew")
		},
	}
	cmd.Flags().StringSliceVar(&ids, "id", nil, "reservation ids, as the arguments are (default: all of this agent's)")
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "new time to live from now (default 1h)")
	addJSON(cmd, g)
	return cmd
}

func reserveWhoCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "who PATH",
		Short: "Show who holds reservations covering a file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			paths, err := repoPatterns(id, args)
			if err != nil {
				return err
			}
			res, err := c.WhoHas(cmd.Context(), paths[0])
			if err != nil {
				return err
			}
			return printReservations(g, res, "nobody holds "+paths[0])
		},
	}
	addJSON(cmd, g)
	return cmd
}

func reserveForceCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "force-release ID",
		Short: "End another agent's reservation once that agent is offline",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.ForceRelease(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printReservations(g, res, "")
		},
	}
	addJSON(cmd, g)
	return cmd
}
