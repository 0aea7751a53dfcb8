package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
)

// agentCmd is `parley agent ...`: the agents the daemon launches and
// supervises. (`parley agents`, plural, lists every agent on the bus.)
func agentCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Launch and steer managed agents (Claude Code, Codex, any command)",
		Long: `Managed agents are coding agents the daemon launches and supervises: it runs
their turns, records what they do, queues prompts, and brokers their
permission requests. A claude agent keeps one process across its turns (a
prompt that comes during a turn is streamed into it, between tool calls);
codex and command agents run one process per prompt, resuming the
provider's session (steer = true in a provider's config keeps one codex
process too).

A managed agent is also an agent on the bus, named by its id: a message sent to
it while it is idle starts a turn (unless created with --no-auto-wake).

Providers: claude (Claude Code headless), codex (codex exec), command (any
shell command, the prompt on stdin or as {prompt}), and those of config.toml's
[providers.NAME] sections.`,
	}
	cmd.AddCommand(agentCreateCmd(g), agentListCmd(g), agentShowCmd(g), agentPromptCmd(g), agentWaitCmd(g),
		agentCancelCmd(g), agentKillCmd(g), agentLogsCmd(g), agentModeCmd(g))
	return cmd
}

func agentCreateCmd(g *globals) *cobra.Command {
	var req api.CreateManagedAgentRequest
	var noWake bool
	var maxDuration time.Duration
	cmd := &cobra.Command{
		Use:   "create [--provider P] [--cwd DIR] [--worktree] [--max-turns N] [--max-cost USD] [--max-duration D] [PROMPT...]",
		Short: "Launch a managed agent, running PROMPT as its first turn",
		Long: `Launch a managed agent, running PROMPT as its first turn.

--max-turns, --max-cost and --max-duration are its budget: once it has run
that many turns, its provider has reported that much cost (USD), or its
turns have run that long in all, it stops (at the end of the turn that
reached the bound; at once for time), says why in its timeline, and whoever
created it is told. Unset bounds take the provider's defaults from
config.toml ([providers.NAME] max_turns, max_cost, max_duration); [budgets]
workspace_max_cost caps what a workspace's managed agents spend together.`,
		Example: `  parley agent create --title "fix the flaky test" "find and fix the flaky test in ./store"
  parley agent create --provider codex --worktree --mode plan "sketch a plan for issue 12"
  parley agent create --provider command --command 'my-agent --once' --name helper
  parley agent create --max-turns 20 --max-cost 5 --max-duration 1h "triage the open issues"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Prompt = strings.Join(args, " ")
			if req.Prompt == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return err
				}
				req.Prompt = string(b)
			}
			if req.Cwd == "" {
				req.Cwd = "."
			}
			abs, err := filepath.Abs(req.Cwd)
			if err != nil {
				return err
			}
			req.Cwd = abs
			if noWake {
				f := false
				req.AutoWake = &f
			}
			if maxDuration < 0 {
				return fmt.Errorf("--max-duration %s is negative", maxDuration)
			}
			if maxDuration > 0 {
				req.MaxDuration = maxDuration.String()
			}
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			a, err := c.CreateManagedAgent(cmd.Context(), req)
			if err != nil {
				return err
			}
			return g.out(a, func(w io.Writer) {
				fmt.Fprintf(w, "created %s (%s, %s) in %s\n", a.AgentID, a.Provider, a.Status, a.Cwd)
				if a.Branch != "" {
					fmt.Fprintf(w, "worktree %s on branch %s\n", a.Worktree, a.Branch)
				}
				fmt.Fprintf(w, "wait for it: parley agent wait %s\n", a.AgentID)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Provider, "provider", "claude", "claude, codex, command, or a provider from config.toml")
	f.StringVar(&req.Cwd, "cwd", "", "working directory (default: here)")
	f.StringVar(&req.Title, "title", "", "short title (default: the prompt's first line)")
	f.StringVar(&req.Mode, "mode", "default", "permission mode: default, acceptEdits, plan or bypassPermissions")
	f.BoolVar(&req.Worktree, "worktree", false, "run in a new git worktree on branch parley/<id>")
	f.StringVar(&req.Command, "command", "", "for --provider command: the shell command run once per turn")
	f.StringVar(&req.Name, "name", "", "the agent's id and bus name (default: a fresh id)")
	f.StringVar(&req.Role, "role", "", "its role on the bus (default agent)")
	f.BoolVar(&noWake, "no-auto-wake", false, "do not start a turn when a message arrives")
	f.IntVar(&req.MaxTurns, "max-turns", 0, "budget: stop after this many turns (0: the provider's default, if any)")
	f.Float64Var(&req.MaxCost, "max-cost", 0, "budget: stop once the provider's reported cost reaches this many USD")
	f.DurationVar(&maxDuration, "max-duration", 0, "budget: stop once its turns have run this long in all (e.g. 30m)")
	addJSON(cmd, g)
	return cmd
}

func agentListCmd(g *globals) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List managed agents of this workspace",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.ManagedAgents(cmd.Context(), all)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				if res.Count == 0 {
					fmt.Fprintln(w, "no managed agents: launch one with `parley agent create PROMPT`")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSTATUS\tPROVIDER\tMODE\tRUNS\tTITLE")
				for _, a := range res.Agents {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s%s\n", a.AgentID, a.Status, a.Provider, a.Mode, a.Runs, a.Title, ifNotEmpty(" - runs on ", a.Node))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "agents of every workspace")
	addJSON(cmd, g)
	return cmd
}

func agentShowCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a managed agent, its current run and latest runs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			a, err := c.ManagedAgent(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return g.out(a, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s\n", a.AgentID, a.Title)
				fmt.Fprintf(w, "status:    %s\nprovider:  %s (mode %s)\ncwd:       %s\n", a.Status, a.Provider, a.Mode, a.Cwd)
				if a.Node != "" {
					fmt.Fprintf(w, "runs on:   %s (another daemon: prompt, cancel or kill it there)\n", a.Node)
				}
				if a.Branch != "" {
					fmt.Fprintf(w, "branch:    %s\n", a.Branch)
				}
				if a.SessionID != "" {
					fmt.Fprintf(w, "session:   %s\n", a.SessionID)
				}
				fmt.Fprintf(w, "auto-wake: %v\nqueued:    %d\ncost:      $%.4f\n", a.AutoWake, a.Queued, a.CostUSD)
				fmt.Fprintf(w, "budget:    %s\n", budgetText(a.Budget))
				if a.StopReason != "" {
					fmt.Fprintf(w, "stopped:   %s\n", a.StopReason)
				}
				if a.LastError != "" {
					fmt.Fprintf(w, "error:     %s\n", a.LastError)
				}
				for _, p := range a.PendingPermissions {
					fmt.Fprintf(w, "permission %s: %s %s (parley allow|deny %s)\n", p.RequestID, p.ToolName, p.Input, p.RequestID)
				}
				if len(a.RecentRuns) > 0 {
					fmt.Fprintln(w, "runs:")
					for _, r := range a.RecentRuns {
						fmt.Fprintf(w, "  %d  %-11s %-7s %s\n", r.Seq, r.State, r.Source, oneLine(r.Prompt, 60))
					}
				}
				if a.LastMessage != "" {
					fmt.Fprintf(w, "last message:\n%s\n", a.LastMessage)
				}
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}

func agentPromptCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prompt ID PROMPT...",
		Short: "Send a prompt to a managed agent (queued while it runs; - reads stdin)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt := strings.Join(args[1:], " ")
			if prompt == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return err
				}
				prompt = string(b)
			}
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.PromptAgent(cmd.Context(), args[0], prompt)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				if res.Queued {
					fmt.Fprintf(w, "queued as run %d (a run is in progress)\n", res.Run)
				} else {
					fmt.Fprintf(w, "started run %d\n", res.Run)
				}
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}

func agentWaitCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait ID",
		Short: "Wait until the agent's run ends or it asks for permission",
		Long: `Block until the agent's current run ends or it asks for permission, then
print its status and last message (or the pending request). Exit status 3 when
the timeout passes first.`,
		Args: cobra.ExactArgs(1),
		RunE: blockingRun(g, &timeout, func(cmd *cobra.Command, args []string, secs int) (*api.WaitAgentResult, bool, error) {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return nil, false, err
			}
			res, err := c.WaitAgent(cmd.Context(), args[0], secs)
			if err != nil {
				return nil, false, err
			}
			return res, !res.TimedOut, nil
		}, func(w io.Writer, res *api.WaitAgentResult, _ bool) {
			fmt.Fprintf(w, "%s: %s\n", res.AgentID, res.Status)
			if p := res.Permission; p != nil {
				fmt.Fprintf(w, "permission %s: %s %s\nanswer: parley allow %s | parley deny %s\n", p.RequestID, p.ToolName, p.Input, p.RequestID, p.RequestID)
			}
			if res.Run != nil {
				fmt.Fprintf(w, "run %d: %s%s\n", res.Run.Seq, res.Run.State, ifNotEmpty(": ", res.Run.Error))
			}
			if res.LastMessage != "" {
				fmt.Fprintln(w, res.LastMessage)
			}
		}),
	}
	timeoutFlag(cmd, &timeout, "")
	addJSON(cmd, g)
	return cmd
}

func agentCancelCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Interrupt the agent's current run (it stays usable)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.CancelAgent(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) { fmt.Fprintf(w, "%s: %s\n", res.Message, res.Status) })
		},
	}
	addJSON(cmd, g)
	return cmd
}

func agentKillCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kill ID",
		Short: "End a managed agent for good (its worktree is kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.KillAgent(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) { fmt.Fprintf(w, "%s: %s\n", args[0], res.Status) })
		},
	}
	addJSON(cmd, g)
	return cmd
}

func agentLogsCmd(g *globals) *cobra.Command {
	var offset, limit int
	cmd := &cobra.Command{
		Use:     "logs ID",
		Aliases: []string{"activity"},
		Short:   "Show the agent's activity timeline (latest events, or from --offset)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.AgentActivity(cmd.Context(), args[0], offset, limit)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) { fmt.Fprintln(w, res.Content) })
		},
	}
	cmd.Flags().IntVar(&offset, "offset", -1, "first event, 0 being the oldest (default: the latest --limit events)")
	cmd.Flags().IntVar(&limit, "limit", 50, "most events to show (at most 1000)")
	addJSON(cmd, g)
	return cmd
}

func agentModeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mode ID MODE",
		Short: "Set the agent's permission mode (default, acceptEdits, plan, bypassPermissions)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.SetAgentMode(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) { fmt.Fprintf(w, "%s: mode %s from its next run\n", args[0], res.NewMode) })
		},
	}
	addJSON(cmd, g)
	return cmd
}

// ---- permissions ----

func permissionsCmd(g *globals) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "permissions",
		Short: "List managed agents' pending permission requests",
		Long: `List the permission requests managed agents are waiting on. Answer one with
parley allow ID or parley deny ID.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.Permissions(cmd.Context(), all)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				if len(res.Permissions) == 0 {
					fmt.Fprintln(w, "no pending permission requests")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tAGENT\tTOOL\tINPUT\tEXPIRES")
				for _, p := range res.Permissions {
					r := p.Request
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.RequestID, r.AgentID, r.ToolName, oneLine(string(r.Input), 60), time.Until(r.ExpiresAt).Round(time.Second))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "requests of every workspace")
	addJSON(cmd, g)
	return cmd
}

func allowCmd(g *globals) *cobra.Command {
	var message, input string
	cmd := &cobra.Command{
		Use:   "allow ID [--input JSON]",
		Short: "Allow a managed agent's pending permission request",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d := api.PermissionDecision{Behavior: "allow", Message: message, By: "cli"}
			if input != "" {
				if !json.Valid([]byte(input)) {
					return fmt.Errorf("--input is not valid JSON: give the tool's input as a JSON object")
				}
				d.UpdatedInput = json.RawMessage(input)
			}
			return respond(cmd, g, args[0], d)
		},
	}
	cmd.Flags().StringVar(&message, "message", "", "a note for the timeline")
	cmd.Flags().StringVar(&input, "input", "", "JSON object to use as the tool's input instead of the requested one")
	return cmd
}

func denyCmd(g *globals) *cobra.Command {
	var message string
	cmd := &cobra.Command{
		Use:   "deny ID [--message WHY]",
		Short: "Deny a managed agent's pending permission request",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return respond(cmd, g, args[0], api.PermissionDecision{Behavior: "deny", Message: message, By: "cli"})
		},
	}
	cmd.Flags().StringVar(&message, "message", "", "why, shown to the agent")
	return cmd
}

func respond(cmd *cobra.Command, g *globals, id string, d api.PermissionDecision) error {
	c, _, err := g.client(cmd.Context(), false)
	if err != nil {
		return err
	}
	if err := c.RespondPermission(cmd.Context(), id, d); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "%s: %s\n", id, map[string]string{"allow": "allowed", "deny": "denied"}[d.Behavior])
	return nil
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

func ifNotEmpty(pre, s string) string {
	if s == "" {
		return ""
	}
	return pre + s
}

// budgetText renders a budget and what was used of it: "2 of 2 turns, $0.0200
// of $1.00, 12s of 30m0s".
func budgetText(b api.Budget) string {
	parts := []string{fmt.Sprintf("%d turns", b.Turns), fmt.Sprintf("$%.4f", b.CostUSD), (time.Duration(b.BusySeconds * float64(time.Second))).Round(time.Second).String()}
	if b.MaxTurns > 0 {
		parts[0] = fmt.Sprintf("%d of %d turns", b.Turns, b.MaxTurns)
	}
	if b.MaxCost > 0 {
		parts[1] = fmt.Sprintf("$%.4f of $%.2f", b.CostUSD, b.MaxCost)
	}
	if b.MaxDuration != "" {
		parts[2] += " of " + b.MaxDuration
	}
	return strings.Join(parts, ", ")
}
