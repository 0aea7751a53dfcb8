package hub_test

import (
	"context"
	"testing"

	"github.com/parley-dev/parley/internal/hub"
)

// TestOriginAttested: the hub, not the sender, fills a message's origin: the
// sender's role as its record has it at the send (a new role at once after a
// join), this daemon's host, the door the request names; a person and a name
// that has not joined have no role. The stored message says the same.
func TestOriginAttested(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, &hub.Options{Host: "box-1"})
	join(t, h, "w", "alice", "dev")
	send := func(from string, door hub.Door) *hub.Message {
		t.Helper()
		res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: from, To: "bob", Content: "x", Door: door})
		if err != nil {
			t.Fatal(err)
		}
		stored, err := h.Message(ctx, "w", res.Message.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Origin != res.Message.Origin {
			t.Errorf("stored origin %+v, sent %+v", stored.Origin, res.Message.Origin)
		}
		return stored
	}
	for _, c := range []struct {
		name, from string
		door       hub.Door
		want       hub.Origin
	}{
		{"an agent over MCP", "alice", hub.DoorMCP, hub.Origin{Role: "dev", Host: "box-1", Door: hub.DoorMCP}},
		{"a person at the dashboard", "human:ann", hub.DoorDashboard, hub.Origin{Host: "box-1", Door: hub.DoorDashboard}},
		{"a name not joined, from the CLI", "zed", hub.DoorCLI, hub.Origin{Host: "box-1", Door: hub.DoorCLI}},
	} {
		if got := send(c.from, c.door).Origin; got != c.want {
			t.Errorf("%s: origin %+v, want %+v", c.name, got, c.want)
		}
	}
	join(t, h, "w", "alice", "reviewer")
	if got := send("alice", hub.DoorMCP).Origin.Role; got != "reviewer" {
		t.Errorf("after alice joined again as a reviewer: role %q, want reviewer", got)
	}
}
