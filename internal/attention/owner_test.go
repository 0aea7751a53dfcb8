package attention_test

import (
	"os"
	"testing"

	"github.com/parley-dev/parley/internal/hub"
)

// TestForeignSocketDoor: a door whose socket belongs to another OS user
// (a session's environment may name any path) is never written: the
// letter, with the session's messaging token, would go to that user; the
// door is closed instead.
func TestForeignSocketDoor(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("giving the socket to another user needs root")
	}
	e := newEnv(t, nil)
	theirs := newInbox(t)
	if err := os.Chown(theirs.path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	e.door("bob", theirs.path)
	mine := newInbox(t)
	e.door("alice", mine.path)
	e.send("bob", "for bob's own session only", hub.SendRequest{})
	e.h.Send(e.ctx, hub.SendRequest{Workspace: "w", From: "bob", To: "alice", Content: "marker"})
	mine.next(t)
	waitFor(t, "bob's door closed", func() bool { return !e.dm.HasDoor("w", "bob") })
	if n := theirs.count(); n != 0 {
		t.Errorf("%d letters written into another user's socket, want none", n)
	}
}
