package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/hub"
)

// TestExitCode: each kind of error leaves the CLI with its own status, also
// when the error came over the wire (an api.ErrorBody decoded by the client)
// and was wrapped on the way.
func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"invalid", hub.Errorf("send", hub.Invalid, "bad"), 2},
		{"timeout", hub.Errorf("wait", hub.Timeout, "late"), 3},
		{"not found", hub.Errorf("get", hub.NotFound, "gone"), 4},
		{"conflict", hub.Errorf("claim", hub.Conflict, "taken"), 5},
		{"forbidden", hub.Errorf("ack", hub.Forbidden, "not yours"), 6},
		{"unavailable", hub.Errorf("send", hub.Unavailable, "store down"), 7},
		{"too large", hub.Errorf("send", hub.TooLarge, "big"), 8},
		{"internal", hub.Errorf("send", hub.Internal, "bug"), 1},
		{"no kind", errors.New("something broke"), 1},
		{"over the wire, wrapped", fmt.Errorf("parley send: %w", api.NewErrorBody(hub.Errorf("", hub.NotFound, "no such group")).Err()), 4},
		{"no daemon", fmt.Errorf("connect: %w", client.ErrNotRunning), 7},
		{"cobra usage", errors.New(`unknown flag: --nope`), 2},
	}
	for _, tc := range tests {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}
