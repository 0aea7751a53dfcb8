// Package proc starts and stops Parley's child processes the same way on
// every platform: a process group of their own (so that a Ctrl-C meant for
// the daemon does not reach them, and one kill ends a whole tree), a daemon
// detached from the terminal that started it, and a graceful stop. On Unix
// these are process groups and signals; on Windows, process groups, a named
// stop event and taskkill. The runner, the gateway, the client (which
// starts the daemon) and the CLI use it.
package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
)

// ErrUnsupported says this platform has no such operation.
var ErrUnsupported = errors.ErrUnsupported

// TerminateContext is ctx, cancelled when the process is asked to stop: an
// interrupt, SIGTERM on Unix, or Terminate from another process on Windows.
// Call stop to release it.
func TerminateContext(ctx context.Context) (_ context.Context, stop context.CancelFunc) {
	ctx, cancel := signal.NotifyContext(ctx, append([]os.Signal{os.Interrupt}, stopSignals...)...)
	done := onTerminate(ctx, cancel)
	return ctx, func() { cancel(); done() }
}

// ExitSignal names the signal that killed the process of ee, if one did.
func ExitSignal(ee *exec.ExitError) (string, bool) { return exitSignal(ee) }
