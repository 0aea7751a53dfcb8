package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// The commands that block until something comes (parley wait, queue claim,
// agent wait) share one shape: a --timeout of 1s to 10m that the daemon
// waits out, the result printed (JSON or text), and exit status 3 when
// nothing came.

// maxBlock is the longest --timeout a blocking command takes (the daemon's
// limit on a wait).
const maxBlock = 10 * time.Minute

// timeoutFlag adds --timeout (-t), five minutes by default, to a blocking
// command; what, if given, says what it waits for ("for a task").
func timeoutFlag(cmd *cobra.Command, timeout *time.Duration, what string) {
	if what != "" {
		what = " " + what
	}
	cmd.Flags().DurationVarP(timeout, "timeout", "t", 300*time.Second, "how long to wait"+what+" (at most 10m)")
}

// blockingRun is the RunE of a blocking command. call makes the request with
// the timeout in whole seconds and reports whether something came; print
// shows the result as text. With nothing, it returns errTimeout once the
// result is printed.
func blockingRun[T any](g *globals, timeout *time.Duration, call func(cmd *cobra.Command, args []string, secs int) (T, bool, error),
	print func(w io.Writer, res T, came bool)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		secs := int(timeout.Round(time.Second) / time.Second)
		if secs < 1 || time.Duration(secs)*time.Second > maxBlock {
			return fmt.Errorf("--timeout %s is out of range: want 1s to 10m", *timeout)
		}
		res, came, err := call(cmd, args, secs)
		if err != nil {
			return err
		}
		if err := g.out(res, func(w io.Writer) { print(w, res, came) }); err != nil {
			return err
		}
		if !came {
			return errTimeout
		}
		return nil
	}
}
