package hub_test

import (
	"context"
	"testing"

	"github.com/parley-dev/parley/internal/hub"
)

// A session's derived name renames itself: its mail follows, the old name
// stays an alias (sends and Canonical reach the new one, Join refuses it),
// and the rules of a new name hold.
func TestRename(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	join(t, h, "w", "bob", "reviewer")
	join(t, h, "w", "claude-app-3f9a1c", "agent")
	var events []hub.Event
	defer h.Subscribe(func(e hub.Event) {
		if e.Kind == hub.EventAgentRenamed {
			events = append(events, e)
		}
	})()
	old := "claude-app-3f9a1c"
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "bob", To: old, Content: "before"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.OpenDoor(ctx, hub.SessionDoor{Workspace: "w", Agent: old, Kind: hub.DoorClaude, Session: "s1", Address: "/tmp/cc.sock", Owner: "mcp-1", UID: 7}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, new string
		kind      hub.Kind
	}{
		{"taken by an agent", "bob", hub.Conflict},
		{"a look-alike of an agent", "b0b", hub.Conflict},
		{"mixed scripts", "rеviewer", hub.Invalid}, // Cyrillic е
		{"not a name", "two words", hub.Invalid},
		{"its own name", old, hub.Invalid},
		{"Parley's notices", hub.NoticeSender, hub.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Rename(ctx, hub.RenameRequest{Workspace: "w", Old: old, New: tc.new})
			if hub.KindOf(err) != tc.kind {
				t.Errorf("rename to %q: %v (kind %s), want kind %s", tc.new, err, hub.KindOf(err), tc.kind)
			}
		})
	}

	a, err := h.Rename(ctx, hub.RenameRequest{Workspace: "w", Old: old, New: "ana", Role: "tester"})
	if err != nil {
		t.Fatalf("rename: %v", err)
	}
	if a.Name != "ana" || a.Role != "tester" {
		t.Errorf("renamed agent: %+v", a)
	}
	if len(events) != 1 || events[0].Agent != "ana" || events[0].Previous != old {
		t.Errorf("events: %+v, want one agent.renamed from %s to ana", events, old)
	}
	// Its door moved: open for ana, with its session, address and owner.
	if ds, err := h.Doors(ctx, "w", "ana", false); err != nil || len(ds) != 1 || ds[0].Session != "s1" || ds[0].Address != "/tmp/cc.sock" || ds[0].Owner != "mcp-1" || ds[0].UID != 7 {
		t.Errorf("ana's doors: %+v %v, want the door moved from %s", ds, err, old)
	}
	if ds, err := h.Doors(ctx, "w", old, false); err != nil || len(ds) != 0 {
		t.Errorf("open doors of the old name: %+v %v, want none", ds, err)
	}
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "bob", To: old, Content: "after"}); err != nil {
		t.Fatalf("send to the old name: %v", err)
	}
	msgs, _, err := h.Check(ctx, "w", "ana", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Content != "before" || msgs[1].Content != "after" {
		t.Errorf("ana's inbox: %v, want the message sent before the rename and the one to the old name after", msgs)
	}
	if got, err := h.Canonical(ctx, "w", old); err != nil || got != "ana" {
		t.Errorf("Canonical(%s) = %q, %v; want ana", old, got, err)
	}
	if got, _ := h.Canonical(ctx, "w", "bob"); got != "bob" {
		t.Errorf("Canonical(bob) = %q", got)
	}
	if got, _ := h.Canonical(ctx, "other", old); got != old {
		t.Errorf("Canonical in another workspace = %q, want the name itself", got)
	}
	if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: old}); hub.KindOf(err) != hub.Conflict {
		t.Errorf("join as the old name: %v, want a conflict", err)
	}
	if _, err := h.Agent(ctx, "w", old); !hub.IsNotFound(err) {
		t.Errorf("the old agent record: %v, want gone", err)
	}
	// Another agent cannot take the old name; the agent itself can.
	join(t, h, "w", "carol", "dev")
	if _, err := h.Rename(ctx, hub.RenameRequest{Workspace: "w", Old: "carol", New: old}); hub.KindOf(err) != hub.Conflict {
		t.Errorf("carol takes ana's old name: %v, want a conflict", err)
	}
	if _, err := h.Rename(ctx, hub.RenameRequest{Workspace: "w", Old: "ana", New: old}); err != nil {
		t.Errorf("ana takes its old name back: %v", err)
	}
}
