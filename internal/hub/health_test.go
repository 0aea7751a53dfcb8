package hub_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// healthEvents records the health events of a hub.
type healthEvents struct {
	mu  sync.Mutex
	evs []string // "agent kind status"
}

func watchEvents(h *hub.Hub) *healthEvents {
	r := &healthEvents{}
	h.Subscribe(func(e hub.Event) {
		if e.Kind == hub.EventAgentHealth || e.Kind == hub.EventAgentStalled {
			r.mu.Lock()
			r.evs = append(r.evs, e.Agent+" "+string(e.Kind)+" "+e.Status)
			r.mu.Unlock()
		}
	})
	return r
}

func (r *healthEvents) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.evs, s)
}

func healthOf(t *testing.T, h *hub.Hub, ws, name string) hub.Health {
	t.Helper()
	a, err := h.Agent(context.Background(), ws, name)
	if err != nil {
		t.Fatal(err)
	}
	return h.Health(a).Health
}

// An agent whose hooks report a prompt and then nothing stalls after the
// stall time; one blocked in a wait, or in a tool call, does not.
func TestHealthStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall = 10 * time.Second
		h := newHub(t, &hub.Options{StallAfter: stall})
		evs := watchEvents(h)
		for _, n := range []string{"quiet", "waiter", "tooler"} {
			join(t, h, "w", n, "dev")
			h.SessionOpened("w", n)
			h.NoteActivity("w", n, hub.ActTurnStart, "")
		}
		if got := healthOf(t, h, "w", "quiet"); got != hub.HealthWorking {
			t.Fatalf("after a prompt: got %s, want working", got)
		}
		// waiter blocks in a wait; tooler runs a long tool.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		waited := make(chan struct{})
		go func() {
			h.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: "waiter", Timeout: 5 * time.Minute})
			close(waited)
		}()
		h.NoteActivity("w", "tooler", hub.ActToolStart, "toolu_1")
		synctest.Wait()

		time.Sleep(stall - time.Second)
		h.CheckHealth()
		if got := healthOf(t, h, "w", "quiet"); got != hub.HealthWorking {
			t.Errorf("just before the stall time: got %s, want working", got)
		}
		time.Sleep(time.Second)
		h.CheckHealth()
		for name, want := range map[string]hub.Health{"quiet": hub.HealthStalled, "waiter": hub.HealthWaiting, "tooler": hub.HealthWorking} {
			if got := healthOf(t, h, "w", name); got != want {
				t.Errorf("%s at the stall time: got %s, want %s", name, got, want)
			}
		}
		if !evs.has("quiet agent.stalled stalled") || !evs.has("quiet agent.health stalled") {
			t.Errorf("events: got %v, want agent.stalled and agent.health for quiet", evs.evs)
		}
		if evs.has("waiter agent.stalled stalled") || evs.has("tooler agent.stalled stalled") {
			t.Errorf("events: got %v, want no stall of waiter or tooler", evs.evs)
		}

		// Long past the stall time, still not stalled.
		time.Sleep(3 * stall)
		h.CheckHealth()
		if got := healthOf(t, h, "w", "waiter"); got != hub.HealthWaiting {
			t.Errorf("waiter long after: got %s, want waiting", got)
		}
		if got := healthOf(t, h, "w", "tooler"); got != hub.HealthWorking {
			t.Errorf("tooler long after: got %s, want working", got)
		}
		// The tool ends: the clock starts again from there.
		h.NoteActivity("w", "tooler", hub.ActToolEnd, "toolu_1")
		if got := healthOf(t, h, "w", "tooler"); got != hub.HealthWorking {
			t.Errorf("tooler after its tool: got %s, want working", got)
		}
		time.Sleep(stall)
		h.CheckHealth()
		if got := healthOf(t, h, "w", "tooler"); got != hub.HealthStalled {
			t.Errorf("tooler quiet after its tool: got %s, want stalled", got)
		}

		// Progress ends a stall; the end of the turn makes it idle.
		h.NoteActivity("w", "quiet", hub.ActProgress, "")
		if got := healthOf(t, h, "w", "quiet"); got != hub.HealthWorking {
			t.Errorf("after progress: got %s, want working", got)
		}
		h.NoteActivity("w", "quiet", hub.ActTurnEnd, "")
		if got := healthOf(t, h, "w", "quiet"); got != hub.HealthIdle {
			t.Errorf("after the turn: got %s, want idle", got)
		}
		// Its session ends: offline, at once.
		h.SessionClosed("w", "quiet")
		if got := healthOf(t, h, "w", "quiet"); got != hub.HealthOffline {
			t.Errorf("after its session closed: got %s, want offline", got)
		}
		cancel()
		<-waited
	})
}

// A pending permission request is waiting on a person, not a stall; a
// resident agent (managed) is idle between turns without a session.
func TestHealthAsksAndResidents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall = time.Minute
		h := newHub(t, &hub.Options{StallAfter: stall})
		join(t, h, "w", "asker", "dev")
		join(t, h, "w", "managed", "dev")
		h.NoteActivity("w", "asker", hub.ActTurnStart, "")
		h.NoteActivity("w", "asker", hub.ActAsk, "perm-1")
		time.Sleep(2 * stall)
		h.CheckHealth()
		if got := healthOf(t, h, "w", "asker"); got != hub.HealthWaiting {
			t.Errorf("with a pending request: got %s, want waiting", got)
		}
		h.NoteActivity("w", "asker", hub.ActAnswered, "perm-1")
		if got := healthOf(t, h, "w", "asker"); got != hub.HealthWorking {
			t.Errorf("once answered: got %s, want working", got)
		}

		h.NoteActivity("w", "managed", hub.ActResident, "")
		time.Sleep(hub.ActiveWindow + time.Minute)
		if got := healthOf(t, h, "w", "managed"); got != hub.HealthIdle {
			t.Errorf("a resident agent between turns: got %s, want idle", got)
		}
		h.NoteActivity("w", "managed", hub.ActGone, "")
		time.Sleep(hub.ActiveWindow + time.Minute)
		if got := healthOf(t, h, "w", "managed"); got != hub.HealthOffline {
			t.Errorf("a resident agent gone: got %s, want offline", got)
		}
	})
}
