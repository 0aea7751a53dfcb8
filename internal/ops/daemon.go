package ops

import (
	"context"
	"os"
	"runtime"

	"github.com/parley-dev/parley/internal/api"
)

// Operations on the daemon itself: is it up, and how it is.

// Health says the daemon answers, with its pid and version.
func (o *Ops) Health(ctx context.Context, _ *Caller, _ api.Empty) (api.Health, error) {
	return api.Health{OK: true, PID: os.Getpid(), Version: o.version}, nil
}

// Status reports the daemon's process, store, workspaces and sessions. The
// facts only the daemon knows come from Options.Process.
func (o *Ops) Status(ctx context.Context, _ *Caller, _ api.Empty) (api.Status, error) {
	wss, err := o.hub.Workspaces(ctx)
	if err != nil {
		return api.Status{}, err
	}
	var st api.Status
	if o.process != nil {
		st = o.process()
	}
	st.PID, st.Version, st.Goroutines = os.Getpid(), o.version, runtime.NumGoroutine()
	st.Workspaces = wss
	if st.Workspaces == nil {
		st.Workspaces = []string{}
	}
	return st, nil
}
