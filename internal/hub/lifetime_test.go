package hub_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// TestAgentLifetime: an agent its session's start registered that never
// made a call is forgotten once its session has been gone for the grace
// (its mail bounces, its sender told); one that made a call stays, and so
// does an agent someone named. @everyone and broadcasts skip agents named
// after client sessions that ended; forgetting one by hand frees the name.
func TestAgentLifetime(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	h := newHub(t, &hub.Options{Now: clk.now, ProvisionalGrace: time.Minute})
	join(t, h, "w", "alice", "lead")
	for _, n := range []string{"claude-app-aaaaaa", "claude-app-bbbbbb"} {
		if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: n, SessionBound: true, Provisional: true}); err != nil {
			t.Fatal(err)
		}
		h.SessionOpened("w", n)
	}
	// b makes a call; both sessions then end.
	h.Called(ctx, "w", "claude-app-bbbbbb")
	if a, _ := h.Agent(ctx, "w", "claude-app-bbbbbb"); a.Provisional {
		t.Errorf("after a call: %+v, want not provisional", a)
	}
	// While their sessions live, @everyone reaches them.
	if names, err := h.Resolve(ctx, "w", "@everyone", "alice"); err != nil || len(names) != 2 {
		t.Errorf("@everyone while the sessions live: %v %v", names, err)
	}
	res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "claude-app-aaaaaa", Content: "are you there?"})
	if err != nil {
		t.Fatal(err)
	}
	h.SessionClosed("w", "claude-app-aaaaaa")
	h.SessionClosed("w", "claude-app-bbbbbb")
	// What a session's SessionEnd hook does as it ends (it reports the
	// agent offline) keeps it present, but it is gone for @everyone at once.
	clk.add(time.Second)
	if err := h.SetStatus(ctx, "w", "claude-app-bbbbbb", hub.StatusOffline); err != nil {
		t.Fatal(err)
	}
	if names, err := h.Resolve(ctx, "w", "@everyone", "alice"); err == nil {
		t.Errorf("@everyone as the sessions end: %v, want no one", names)
	}
	clk.add(3 * time.Minute) // past ActiveWindow too
	// Their sessions ended: @everyone skips them, and reaches nobody else.
	if names, err := h.Resolve(ctx, "w", "@everyone", "alice"); err == nil {
		t.Errorf("@everyone after the sessions ended: %v, want no one", names)
	}
	if got, err := h.Broadcast(ctx, hub.BroadcastRequest{Workspace: "w", From: "alice", Content: "all"}); err != nil || len(got.Recipients) != 0 {
		t.Errorf("broadcast after the sessions ended: %+v %v", got, err)
	}
	h.Sweep(ctx)
	if _, err := h.Agent(ctx, "w", "claude-app-aaaaaa"); !hub.IsNotFound(err) {
		t.Errorf("the provisional agent after its grace: %v, want forgotten", err)
	}
	for _, n := range []string{"claude-app-bbbbbb", "alice"} {
		if _, err := h.Agent(ctx, "w", n); err != nil {
			t.Errorf("%s: %v, want it kept", n, err)
		}
	}
	ds, err := h.Store().Deliveries(ctx, "w", res.Message.ID)
	if err != nil || len(ds) != 1 || ds[0].State != hub.Bounced || ds[0].BounceReason != hub.ForgetNeverUsed {
		t.Errorf("its mail: %+v %v, want bounced", ds, err)
	}
	peek, _, err := h.Inbox(ctx, "w", "alice", 10)
	if err != nil || len(peek) != 1 || !strings.Contains(peek[0].Message.Content, "did not reach claude-app-aaaaaa") {
		t.Errorf("alice's inbox: %+v %v, want the bounce notice", peek, err)
	}

	// Forgetting by hand: refused while a session is live, then done.
	h.SessionOpened("w", "claude-app-bbbbbb")
	if _, err := h.Forget(ctx, "w", "claude-app-bbbbbb", hub.ForgetByPerson); hub.KindOf(err) != hub.Conflict {
		t.Errorf("forget with a live session: %v, want a conflict", err)
	}
	h.SessionClosed("w", "claude-app-bbbbbb")
	// Its `codex exec` thread's door is dormant: it goes with the agent.
	dr, err := h.OpenDoor(ctx, hub.SessionDoor{Workspace: "w", Agent: "claude-app-bbbbbb", Kind: hub.DoorCodex, Session: "th-exec", Address: "/h/.codex"})
	if err != nil {
		t.Fatal(err)
	}
	if dr, err = h.CloseDoor(ctx, "w", dr.ID, hub.DoorClosedNotLoaded); err != nil || !dr.Dormant() {
		t.Fatalf("dormant door: %+v %v", dr, err)
	}
	if _, err := h.Forget(ctx, "w", "claude-app-bbbbbb", hub.ForgetByPerson); err != nil {
		t.Fatal(err)
	}
	if dr, err = h.SessionDoor(ctx, "w", dr.ID); err != nil || dr.Dormant() || dr.CloseReason != hub.DoorClosedForgotten {
		t.Errorf("the dormant door after forget: %+v %v, want it closed, agent forgotten", dr, err)
	}
	as, _ := h.Agents(ctx, "w")
	var names []string
	for _, a := range as {
		names = append(names, a.Name)
	}
	if !slices.Equal(names, []string{"alice"}) {
		t.Errorf("agents after forget: %v", names)
	}
	if _, err := h.Forget(ctx, "w", "nobody", hub.ForgetByPerson); !hub.IsNotFound(err) {
		t.Errorf("forget nobody: %v, want not found", err)
	}
}
