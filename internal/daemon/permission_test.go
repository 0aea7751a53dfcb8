package daemon

import (
	"context"
	"testing"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
)

// TestPermissionInboxOverHTTP: an agent's client files a request and blocks;
// a decision over the API reaches it, the events stream shows both, and a
// request nobody decides comes back expired.
func TestPermissionInboxOverHTTP(t *testing.T) {
	d := startDaemon(t, Config{})
	ctx := context.Background()
	events := dialEvents(t, d, "?workspace=w&kinds=permission.requested,permission.resolved", nil)
	c := client.New(d.paths).As("w", "alice")

	got := make(chan *api.PermissionOutcome, 1)
	go func() {
		out, err := c.AskPermission(ctx, api.AskPermissionRequest{ToolName: "Bash", Input: []byte(`{"command":"make"}`), Source: "claude-hook", Wait: 30})
		if err != nil {
			t.Error(err)
		}
		got <- out
	}()
	e := nextEvent(t, events)
	if e.Kind != "permission.requested" || e.Agent != "alice" || e.Permission == nil || e.Permission.ToolName != "Bash" || e.Permission.Source != "claude-hook" || e.State != "pending" {
		t.Fatalf("requested event: got %+v", e)
	}
	list, err := c.Permissions(ctx, false)
	if err != nil || len(list.Permissions) != 1 || list.Permissions[0].Status != "waiting" {
		t.Fatalf("GET permissions: %v %+v, want alice's request, waiting", err, list)
	}
	if err := c.RespondPermission(ctx, e.ID, api.PermissionDecision{Behavior: "allow", By: "dashboard"}); err != nil {
		t.Fatal(err)
	}
	out := <-got
	if out.State != "allowed" || out.Behavior != "allow" || out.By != "dashboard" || out.RequestID != e.ID {
		t.Errorf("outcome: got %+v, want allowed by dashboard", out)
	}
	if e := nextEvent(t, events); e.Kind != "permission.resolved" || e.State != "allowed" || e.By != "dashboard" || e.ID != out.RequestID {
		t.Errorf("decided event: got %+v", e)
	}

	out, err = c.AskPermission(ctx, api.AskPermissionRequest{ToolName: "Bash", Wait: 1})
	if err != nil || out.State != "expired" || out.Behavior != "" {
		t.Errorf("undecided: got %v %+v, want expired without a behavior", err, out)
	}
	if _, err := client.New(d.paths).As("w", "").AskPermission(ctx, api.AskPermissionRequest{ToolName: "Bash"}); err == nil {
		t.Errorf("a request without an agent was accepted")
	}
}
