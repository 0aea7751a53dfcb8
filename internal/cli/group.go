package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func groupCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "Manage groups, addressed as @name (members are agents or roles)",
	}
	var desc string
	create := &cobra.Command{
		Use: "create NAME", Short: "Create a group", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			if err := c.CreateGroup(cmd.Context(), args[0], desc); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "created group @%s\n", args[0])
			return nil
		},
	}
	create.Flags().StringVarP(&desc, "description", "d", "", "what the group is for")
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a group (@everyone is protected)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			if err := c.DeleteGroup(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "deleted group @%s\n", args[0])
			return nil
		},
	}
	add := memberCmd(g, "add", "Add an agent or a role to a group", "added to")
	remove := memberCmd(g, "remove", "Remove an agent or a role from a group", "removed from")
	list := &cobra.Command{
		Use: "list", Short: "List groups", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.Groups(cmd.Context())
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "GROUP\tMEMBERS\tDESCRIPTION")
				for _, gr := range res.Groups {
					fmt.Fprintf(tw, "@%s\t%d\t%s\n", gr.Name, gr.MemberCount, gr.Description)
				}
				tw.Flush()
			})
		},
	}
	addJSON(list, g)
	var expand bool
	show := &cobra.Command{
		Use: "show NAME", Short: "Show a group's members", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.Group(cmd.Context(), args[0], expand)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "@%s  %s\ncreated %s", res.Name, res.Description, res.CreatedAt)
				if res.CreatedBy != "" {
					fmt.Fprintf(w, " by %s", res.CreatedBy)
				} else {
					fmt.Fprint(w, " (by no agent: made from the CLI or dashboard without one)")
				}
				fmt.Fprintln(w)
				for _, m := range res.Members {
					fmt.Fprintf(w, "  %s %s\n", m.Type, m.ID)
				}
				if expand {
					fmt.Fprintf(w, "reaches %d agents:\n", len(res.ExpandedAgents))
					for _, a := range res.ExpandedAgents {
						fmt.Fprintf(w, "  %s\n", a)
					}
				}
			})
		},
	}
	show.Flags().BoolVar(&expand, "expand", false, "also list the agents the group reaches now")
	addJSON(show, g)
	cmd.AddCommand(create, del, add, remove, list, show)
	return cmd
}

func memberCmd(g *globals, verb, short, done string) *cobra.Command {
	var role bool
	cmd := &cobra.Command{
		Use:   verb + " GROUP MEMBER",
		Short: short,
		Long:  short + ". MEMBER is an agent name, or a role with --role.",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			typ := "agent"
			if role {
				typ = "role"
			}
			if verb == "add" {
				err = c.AddMember(cmd.Context(), args[0], typ, args[1])
			} else {
				err = c.RemoveMember(cmd.Context(), args[0], typ, args[1])
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%s %s %s @%s\n", typ, args[1], done, args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&role, "role", false, "MEMBER is a role: every agent with that role")
	return cmd
}
