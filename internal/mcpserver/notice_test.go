package mcpserver_test

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/mcpserver"
	"github.com/parley-dev/parley/internal/ops"
)

// TestNoticeReachesItsSessions: a notice for an agent is pushed to its
// sessions and carried by the next tool result of each, once; one for a
// workspace reaches all of its sessions and no other workspace's.
func TestNoticeReachesItsSessions(t *testing.T) {
	e := newEnv(t)
	pushed := make(chan string, 4)
	alice := e.Session(ops.Caller{Workspace: "w", Agent: "alice"}, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
		pushed <- r.Params.Data.(string)
	}})
	if err := alice.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	bob := e.Session(ops.Caller{Workspace: "w", Agent: "bob"}, nil)
	other := e.Session(ops.Caller{Workspace: "v", Agent: "alice"}, nil)

	e.Ops.Notice("w", "alice", "your claim may be lost")
	e.Ops.Notice("w", "", "the daemon is cut off")
	notices := func(s *mcp.ClientSession) []string {
		t.Helper()
		var out []string
		for _, n := range meta(call(t, s, "whoami", nil, nil)) {
			out = append(out, n.(string))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		s    *mcp.ClientSession
		want []string
	}{
		{"alice", alice, []string{"your claim may be lost", "the daemon is cut off"}},
		{"bob", bob, []string{"the daemon is cut off"}},
	} {
		if got := notices(tc.s); !slices.Equal(got, tc.want) {
			t.Errorf("%s's next tool result: notices %q, want %q", tc.name, got, tc.want)
		}
		if again := call(t, tc.s, "whoami", nil, nil); again.Meta[mcpserver.MetaNotices] != nil {
			t.Errorf("%s's second tool result repeats %v", tc.name, again.Meta[mcpserver.MetaNotices])
		}
	}
	if res := call(t, other, "whoami", nil, nil); res.Meta[mcpserver.MetaNotices] != nil {
		t.Errorf("alice of workspace v got w's notices: %v", res.Meta[mcpserver.MetaNotices])
	}
	got := []string{<-pushed, <-pushed}
	slices.Sort(got)
	if !slices.Equal(got, []string{"the daemon is cut off", "your claim may be lost"}) {
		t.Errorf("pushed to alice: %q", got)
	}
}

func meta(res *mcp.CallToolResult) []any {
	n, _ := res.Meta[mcpserver.MetaNotices].([]any)
	return n
}
