package profile_test

import (
	"slices"
	"testing"

	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/profile"
)

// TestReadToolsExist: every read tool a client package lets run without a
// prompt is a tool of the native profile (a rename must not leave a stale
// name allowed, nor drop one silently).
func TestReadToolsExist(t *testing.T) {
	e := newEnv(t)
	res, err := e.Session(ops.Caller{Workspace: "w", Agent: "a"}, nil).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	for _, n := range profile.ReadTools {
		if !slices.Contains(names, n) {
			t.Errorf("read tool %s is not a native tool (%v)", n, names)
		}
	}
	for _, n := range []string{"send_message", "ack_message", "reserve_paths", "set_status", "broadcast_message"} {
		if profile.IsReadTool(n) {
			t.Errorf("%s is listed as a read tool", n)
		}
	}
}
