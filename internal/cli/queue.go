package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
)

func queueCmd(g *globals) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "queue NAME",
		Short: "Show the tasks waiting in a work queue; claim, complete and release them",
		Long: `A work queue is an address, queue:NAME: each message sent to it is a task
that goes to exactly one claimant. "parley queue NAME" lists the tasks
waiting, next first (priority, then oldest).

A task claimed here is held for this agent until it is completed or
released, or its claim lease (the daemon's claim_lease, 2m by default)
runs out with nothing renewing it; then it goes back to the queue, marked
redelivered. A live session of the agent on the daemon, or its managed run,
renews the claim; a script without one runs "parley queue renew TASK_ID"
more often than the lease (say every minute) while it works.`,
		Example: `  parley send queue:review "review PR 42"
  parley queue claim review --timeout 1m
  parley queue complete 01J... --result "LGTM, merged"
  parley queue renew 01J...
  parley queue release 01J...`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.Queue(cmd.Context(), args[0], limit)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %d waiting\n", res.Queue, res.Waiting)
				for _, m := range res.Tasks {
					printMessage(w, m)
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "most tasks to list (default 50)")
	addJSON(cmd, g)
	cmd.AddCommand(queueClaimCmd(g), queueCompleteCmd(g), queueReleaseCmd(g), queueRenewCmd(g))
	return cmd
}

func queueClaimCmd(g *globals) *cobra.Command {
	var timeout, lease time.Duration
	cmd := &cobra.Command{
		Use:   "claim NAME",
		Short: "Take the next task of queue:NAME for this agent, waiting for one",
		Long: `Take the next task of queue:NAME, waiting up to --timeout for one. Exit
status 0 with a task, 3 on timeout. The task is this agent's until
"parley queue complete" or "release", or until its lease (--lease, default
the daemon's claim_lease, 2m) runs out with nothing renewing it: a live
session of the agent renews it, or "parley queue renew TASK_ID".`,
		Args: cobra.ExactArgs(1),
		RunE: blockingRun(g, &timeout, func(cmd *cobra.Command, args []string, secs int) (*api.ClaimTaskResult, bool, error) {
			c, _, err := g.client(cmd.Context(), true)
			if err != nil {
				return nil, false, err
			}
			res, err := c.ClaimTask(cmd.Context(), api.ClaimTaskRequest{Queue: args[0], Timeout: &secs,
				LeaseSeconds: int(lease.Round(time.Second) / time.Second)})
			if err != nil {
				return nil, false, err
			}
			return res, res.Task != nil, nil
		}, func(w io.Writer, res *api.ClaimTaskResult, came bool) {
			if !came {
				fmt.Fprintf(w, "no task within %s\n", timeout)
				return
			}
			printMessage(w, res.Task.MessageInfo)
			fmt.Fprintf(w, "   claimed from %s until %s\n", res.Task.Queue, res.Task.LeaseUntil)
		}),
	}
	timeoutFlag(cmd, &timeout, "for a task")
	cmd.Flags().DurationVar(&lease, "lease", 0, "how long the claim lasts unless renewed (5s to 24h; default the daemon's claim_lease, 2m)")
	addJSON(cmd, g)
	return cmd
}

func queueCompleteCmd(g *globals) *cobra.Command {
	var result, key string
	var failed bool
	cmd := &cobra.Command{
		Use:   "complete TASK_ID",
		Short: "Finish a task this agent claimed; its sender gets the result as a reply",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			res, err := c.CompleteTask(cmd.Context(), api.CompleteTaskRequest{TaskID: args[0], Result: result, Failed: failed, IdempotencyKey: key})
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "task %s of %s %s; its sender was told (%s)\n", res.TaskID, res.Queue, res.Status, res.ReplyID)
			})
		},
	}
	cmd.Flags().StringVar(&result, "result", "", "what came of it, sent to the task's sender")
	cmd.Flags().BoolVar(&failed, "failed", false, "the task could not be done")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "name this completion: running it again with the key returns the first result")
	addJSON(cmd, g)
	return cmd
}

func queueReleaseCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release TASK_ID",
		Short: "Give a task this agent claimed back to its queue",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			res, err := c.ReleaseTask(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "task %s went back to %s\n", res.TaskID, res.Queue)
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}

func queueRenewCmd(g *globals) *cobra.Command {
	var lease time.Duration
	cmd := &cobra.Command{
		Use:   "renew TASK_ID",
		Short: "Keep a task this agent claimed: its lease starts again from now",
		Long: `Renew this agent's claim on a task: the claimant is alive and still at
it. The claim then lasts --lease from now (default the daemon's
claim_lease, 2m). A claimant without a live session on the daemon (a
script, a CI job) runs it more often than the lease while it works; a
claim whose holder stops renewing goes back to its queue, marked
redelivered, for another claimant. A task that went back, or that another
claimant holds now, is refused (exit status 1) with the reason: stop
working on it.`,
		Example: `  parley queue renew 01J...
  parley queue renew 01J... --lease 10m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), true)
			if err != nil {
				return err
			}
			res, err := c.RenewTask(cmd.Context(), args[0], int(lease.Round(time.Second)/time.Second))
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "task %s of %s is yours until %s\n", res.TaskID, res.Queue, res.LeaseUntil)
			})
		},
	}
	cmd.Flags().DurationVar(&lease, "lease", 0, "how long from now the claim lasts (5s to 24h; default the daemon's claim_lease, 2m)")
	addJSON(cmd, g)
	return cmd
}
