// Package permtest is the contract suite of permission.Store: every store
// (SQLite, PostgreSQL) runs it through a real permission.Inbox. Only tests
// import it.
package permtest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
)

// Open returns a new, empty store for one test.
type Open func(t *testing.T) permission.Store

// Run runs the suite against the stores open makes.
func Run(t *testing.T, open Open) {
	t.Run("FirstDecisionWins", func(t *testing.T) { firstDecisionWins(t, open) })
	t.Run("AskExpiresAndAbandons", func(t *testing.T) { askExpiresAndAbandons(t, open) })
	t.Run("FileRejectsBadInput", func(t *testing.T) { fileRejectsBadInput(t, open) })
}

func req(agent string) permission.Request {
	return permission.Request{Workspace: "w", Agent: agent, Source: permission.SourceClaudeHook, Tool: "Bash", Input: json.RawMessage(`{"command":"make"}`)}
}

func firstDecisionWins(t *testing.T, open Open) {
	in := permission.New(open(t), nil)
	ctx := context.Background()
	var events []permission.Event
	var mu sync.Mutex
	in.Subscribe(func(e permission.Event) { mu.Lock(); events = append(events, e); mu.Unlock() })

	r, err := in.File(ctx, req("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if r.State != permission.Pending || !strings.HasPrefix(r.ID, "perm-") || r.ExpiresAt.Sub(r.RequestedAt) != permission.DefaultTimeout {
		t.Fatalf("filed: got %+v", r)
	}
	got := make(chan *permission.Request, 1)
	go func() {
		r, err := in.Wait(ctx, r.ID)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()

	// Eight deciders at once: exactly one wins, the others learn how it went.
	var wg sync.WaitGroup
	var wins, conflicts int
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := in.Decide(ctx, "w", r.ID, permission.Decision{Allow: i%2 == 0, By: "d" + string(rune('0'+i))})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case hub.KindOf(err) == hub.Conflict && strings.Contains(err.Error(), "already decided"):
				conflicts++
			default:
				t.Errorf("decide: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != 7 {
		t.Fatalf("got %d wins and %d conflicts, want 1 and 7", wins, conflicts)
	}
	w := <-got
	if w.State == permission.Pending || w.Decision == nil || (w.State == permission.Allowed) != w.Decision.Allow {
		t.Errorf("waiter got %+v, want the winning decision", w)
	}
	_, err = in.Decide(ctx, "w", r.ID, permission.Decision{Allow: true, By: "late"})
	if err == nil || !strings.Contains(err.Error(), "by "+w.Decision.By) {
		t.Errorf("late decision: got %v, want a conflict naming %s", err, w.Decision.By)
	}
	if _, err := in.Decide(ctx, "other", r.ID, permission.Decision{Allow: true}); !hub.IsNotFound(err) {
		t.Errorf("decision from another workspace: got %v, want not found", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 || events[0].Kind != permission.EventRequested || events[1].Kind != permission.EventResolved || events[1].Request.Decision.By != w.Decision.By {
		t.Errorf("events: got %+v, want requested then decided", events)
	}
}

func askExpiresAndAbandons(t *testing.T, open Open) {
	in := permission.New(open(t), nil)
	ctx := context.Background()
	start := time.Now()
	r, err := in.Ask(ctx, req("bob"), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != permission.Expired || time.Since(start) < 100*time.Millisecond {
		t.Errorf("ask with nobody deciding: got %s after %v, want expired after 100ms", r.State, time.Since(start))
	}
	if _, err := in.Decide(ctx, "", r.ID, permission.Decision{Allow: true, By: "cli"}); hub.KindOf(err) != hub.Conflict || !strings.Contains(err.Error(), "expired") {
		t.Errorf("deciding an expired request: got %v, want a conflict saying it expired", err)
	}

	// The asker goes away as soon as its request is visible: possibly while
	// the store has not yet answered the insert. Ask still learns the
	// request's id and closes it, so no request stays pending forever.
	type asked struct {
		r   *permission.Request
		err error
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan asked)
	go func() {
		r, err := in.Ask(cctx, req("carol"), time.Minute)
		done <- asked{r, err}
	}()
	waitPending(t, in, 1)
	cancel()
	if a := <-done; a.err != nil || a.r.State != permission.Abandoned {
		t.Errorf("ask whose asker went away: got %+v, %v; want abandoned", a.r, a.err)
	}
	waitPending(t, in, 0)
	// An asker gone before it asked files nothing.
	if r, err := in.Ask(cctx, req("erin"), time.Minute); err == nil {
		t.Errorf("ask after the asker went away: got %+v, want an error", r)
	}
	waitPending(t, in, 0)

	// A decision before the deadline is what Ask returns.
	go func() {
		r, err := in.Ask(ctx, req("dave"), time.Minute)
		done <- asked{r, err}
	}()
	p := waitPending(t, in, 1)
	if _, err := in.Decide(ctx, "w", p[0].ID, permission.Decision{Allow: false, Message: "no", By: "manager"}); err != nil {
		t.Fatal(err)
	}
	if a := <-done; a.err != nil || a.r.State != permission.Denied || a.r.Decision.Message != "no" {
		t.Errorf("ask answered: got %+v, %v", a.r, a.err)
	}
}

func fileRejectsBadInput(t *testing.T, open Open) {
	in := permission.New(open(t), nil)
	for _, tc := range []struct {
		name string
		r    permission.Request
		want string
	}{
		{"no tool", permission.Request{Workspace: "w"}, "tool_name"},
		{"bad json", permission.Request{Workspace: "w", Tool: "Bash", Input: json.RawMessage(`{`)}, "JSON"},
		{"too big", permission.Request{Workspace: "w", Tool: "Bash", Input: json.RawMessage(`"` + strings.Repeat("x", permission.MaxInput) + `"`)}, "over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := in.File(context.Background(), tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error about %s", err, tc.want)
			}
		})
	}
	r, _ := in.File(context.Background(), req("x"))
	if _, err := in.Decide(context.Background(), "w", r.ID, permission.Decision{Allow: true, UpdatedInput: json.RawMessage(`[1]`)}); err == nil {
		t.Errorf("updated_input that is not an object was accepted")
	}
}

// waitPending polls until n requests are pending.
func waitPending(t *testing.T, in *permission.Inbox, n int) []*permission.Request {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := in.Pending(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == n {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pending, want %d", len(p), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
