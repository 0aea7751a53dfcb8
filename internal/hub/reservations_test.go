package hub_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// clock is a settable time source for hub.Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClockHub(t *testing.T) (*hub.Hub, *clock) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	return newHub(t, &hub.Options{Now: c.now}), c
}

func reserve(t *testing.T, h *hub.Hub, agent string, exclusive bool, paths ...string) *hub.ReserveResult {
	t.Helper()
	res, err := h.Reserve(context.Background(), hub.ReserveRequest{Workspace: "w", Agent: agent, Paths: paths,
		Exclusive: exclusive, Reason: agent + " works here", TTL: 10 * time.Minute})
	if err != nil {
		t.Fatalf("Reserve(%s, %v): %v", agent, paths, err)
	}
	return res
}

func TestReserveConflicts(t *testing.T) {
	tests := []struct {
		name        string
		held        string
		heldExcl    bool
		ask         string
		askExcl     bool
		wantClashes bool
	}{
		{"same file exclusive", "src/a.go", true, "src/a.go", true, true},
		{"held glob covers asked path", "src/**", true, "src/db/x.go", false, true},
		{"asked glob covers held path", "src/db/x.go", true, "src/**/*.go", false, true},
		{"globs overlap", "src/*/x.go", true, "src/db/*", false, true},
		{"globs apart", "src/**/*.go", true, "docs/**", true, false},
		{"shared and shared", "src/**", false, "src/a.go", false, false},
		{"shared held, exclusive asked", "src/**", false, "src/a.go", true, true},
		{"exclusive held, shared asked", "src/a.go", true, "src/*", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newClockHub(t)
			held := reserve(t, h, "alice", tt.heldExcl, tt.held)
			if len(held.Granted) != 1 {
				t.Fatalf("first reservation: got %+v, want granted", held)
			}
			res := reserve(t, h, "bob", tt.askExcl, tt.ask)
			if got := len(res.Conflicts) > 0; got != tt.wantClashes {
				t.Fatalf("bob asks %s (exclusive %v) against alice's %s (exclusive %v): conflicts %v, want clash=%v",
					tt.ask, tt.askExcl, tt.held, tt.heldExcl, res.Conflicts, tt.wantClashes)
			}
			if tt.wantClashes {
				if len(res.Granted) != 0 {
					t.Errorf("granted %v despite a conflict: want nothing", res.Granted)
				}
				c := res.Conflicts[0]
				if c.Held.Agent != "alice" || c.Held.Reason != "alice works here" || c.Held.ExpiresAt.IsZero() {
					t.Errorf("conflict %+v: want holder alice, her reason and expiry", c.Held)
				}
				msg := c.String()
				for _, want := range []string{"alice", "alice works here", "2026-11-22T12:10:00Z"} {
					if !strings.Contains(msg, want) {
						t.Errorf("conflict text %q lacks %q", msg, want)
					}
				}
			} else if len(res.Granted) != 1 {
				t.Errorf("granted %v: want one", res.Granted)
			}
		})
	}
}

func TestReserveAllOrNothing(t *testing.T) {
	h, _ := newClockHub(t)
	reserve(t, h, "alice", true, "src/b.go")
	res := reserve(t, h, "bob", true, "src/a.go", "src/b.go", "src/c.go")
	if len(res.Granted) != 0 || len(res.Conflicts) != 1 || res.Conflicts[0].Pattern != "src/b.go" {
		t.Fatalf("got %+v, want one conflict on src/b.go and nothing granted", res)
	}
	list, _ := h.Reservations(context.Background(), "w", "bob")
	if len(list) != 0 {
		t.Errorf("bob holds %v after a refused request: want nothing", list)
	}
}

func TestReserveOwnAgainRenews(t *testing.T) {
	h, c := newClockHub(t)
	first := reserve(t, h, "alice", true, "src/**").Granted[0]
	c.add(5 * time.Minute)
	again := reserve(t, h, "alice", false, "src/**", "src/a.go").Granted
	if len(again) != 2 || again[0].ID != first.ID || !again[0].ExpiresAt.After(first.ExpiresAt) || again[0].Exclusive {
		t.Fatalf("again: got %+v, want the same id renewed and made shared, plus the new path", again)
	}
	list, _ := h.Reservations(context.Background(), "w", "alice")
	if len(list) != 2 {
		t.Errorf("alice holds %d reservations, want 2", len(list))
	}
}

func TestReservationExpiryRenewRelease(t *testing.T) {
	ctx := context.Background()
	h, c := newClockHub(t)
	a := reserve(t, h, "alice", true, "a.go").Granted[0]
	b := reserve(t, h, "alice", true, "b.go").Granted[0]
	c.add(9 * time.Minute)
	renewed, err := h.RenewReservations(ctx, "w", "alice", []string{a.ID}, 10*time.Minute)
	if err != nil || len(renewed) != 1 || renewed[0].ID != a.ID {
		t.Fatalf("renew: got %v, %v", renewed, err)
	}
	c.add(2 * time.Minute) // b has expired, a has not
	list, _ := h.Reservations(ctx, "w", "")
	if len(list) != 1 || list[0].ID != a.ID {
		t.Fatalf("live after b's expiry: got %v, want only a", list)
	}
	if res := reserve(t, h, "bob", true, "b.go"); len(res.Granted) != 1 {
		t.Errorf("bob asks for the expired b.go: got %+v, want granted", res)
	}
	if _, err := h.RenewReservations(ctx, "w", "alice", []string{b.ID}, 0); hub.KindOf(err) != hub.NotFound {
		t.Errorf("renew an expired reservation: got %v, want not found", err)
	}
	if _, err := h.RenewReservations(ctx, "w", "alice", nil, time.Second); hub.KindOf(err) != hub.Invalid {
		t.Errorf("renew with a 1 s ttl: got %v, want invalid", err)
	}
	rel, err := h.ReleaseReservations(ctx, "w", "bob", nil, []string{"a.go"})
	if err != nil || len(rel) != 0 {
		t.Errorf("bob releases alice's a.go by pattern: got %v, %v; want nothing released", rel, err)
	}
	rel, err = h.ReleaseReservations(ctx, "w", "alice", nil, []string{"a.go", "never-held.go"})
	if err != nil || len(rel) != 1 {
		t.Errorf("alice releases a.go: got %v, %v", rel, err)
	}
	if res := reserve(t, h, "bob", true, "a.go"); len(res.Granted) != 1 {
		t.Errorf("bob asks for the released a.go: got %+v, want granted", res)
	}
}

func TestForceRelease(t *testing.T) {
	ctx := context.Background()
	h, c := newClockHub(t)
	join(t, h, "w", "alice", "dev")
	res, err := h.Reserve(ctx, hub.ReserveRequest{Workspace: "w", Agent: "alice", Paths: []string{"src/**"}, Exclusive: true, TTL: 12 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Granted[0].ID
	h.SessionOpened("w", "alice")
	if _, err := h.ForceRelease(ctx, "w", "bob", id); hub.KindOf(err) != hub.Conflict || !strings.Contains(err.Error(), "alice is still active") {
		t.Fatalf("force release while alice has a session: got %v, want a conflict naming her", err)
	}
	h.SessionClosed("w", "alice")
	c.add(time.Second)
	h.Touch(ctx, "w", "alice") // she goes on at the CLI
	c.add(time.Minute)
	if _, err := h.ForceRelease(ctx, "w", "bob", id); hub.KindOf(err) != hub.Conflict {
		t.Fatalf("force release a minute after alice was last seen: got %v, want a conflict (she was seen within %s)", err, hub.ActiveWindow)
	}
	c.add(hub.ActiveWindow)
	events := make(chan hub.Event, 8)
	defer h.Subscribe(func(e hub.Event) { events <- e })()
	got, err := h.ForceRelease(ctx, "w", "bob", id)
	if err != nil || got.ID != id {
		t.Fatalf("force release once alice is offline: got %v, %v", got, err)
	}
	if e := <-events; e.Kind != hub.EventReservations || e.Change != "force_released" || e.Agent != "bob" || len(e.Reservations) != 1 {
		t.Errorf("event: got %+v, want force_released by bob", e)
	}
	if _, err := h.ForceRelease(ctx, "w", "bob", id); hub.KindOf(err) != hub.NotFound {
		t.Errorf("force release twice: got %v, want not found", err)
	}
}

func TestWhoHasAndCheckPaths(t *testing.T) {
	ctx := context.Background()
	h, _ := newClockHub(t)
	reserve(t, h, "alice", true, "src/**")
	reserve(t, h, "bob", false, "lib/*.go")
	reserve(t, h, "carol", true, "docs/*.md")
	reserve(t, h, "dave", false, "lib/**")
	holders := func(rs []*hub.Reservation) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Agent)
		}
		slices.Sort(out)
		return out
	}
	who, err := h.WhoHas(ctx, "w", "lib/x.go")
	if err != nil || !slices.Equal(holders(who), []string{"bob", "dave"}) {
		t.Errorf("who has lib/x.go: got %v, %v; want bob and dave", holders(who), err)
	}
	who, _ = h.WhoHas(ctx, "w", "**/*.md")
	if !slices.Equal(holders(who), []string{"alice", "carol", "dave"}) {
		t.Errorf("who has **/*.md: got %v, want alice (src/**), carol and dave (lib/**)", holders(who))
	}
	// An edit or a commit clashes only with others' exclusive reservations.
	cs, err := h.CheckPaths(ctx, "w", "bob", []string{"src/db/x.go", "lib/x.go", "README.md"})
	if err != nil || len(cs) != 1 || cs[0].Held.Agent != "alice" {
		t.Errorf("bob checks src/db/x.go: got %v, %v; want alice's exclusive src/**", cs, err)
	}
	if cs, _ := h.CheckPaths(ctx, "w", "alice", []string{"src/db/x.go"}); len(cs) != 0 {
		t.Errorf("alice checks her own path: got %v, want nothing", cs)
	}
	if cs, _ := h.CheckPaths(ctx, "w", "", []string{"docs/a.md"}); len(cs) != 1 || cs[0].Held.Agent != "carol" {
		t.Errorf("an unknown agent checks docs/a.md: got %v, want carol", cs)
	}
}

func TestReserveValidation(t *testing.T) {
	ctx := context.Background()
	h, _ := newClockHub(t)
	tests := []struct {
		name string
		r    hub.ReserveRequest
	}{
		{"no agent", hub.ReserveRequest{Workspace: "w", Paths: []string{"a"}}},
		{"no paths", hub.ReserveRequest{Workspace: "w", Agent: "a"}},
		{"absolute", hub.ReserveRequest{Workspace: "w", Agent: "a", Paths: []string{"/etc/passwd"}}},
		{"dotdot", hub.ReserveRequest{Workspace: "w", Agent: "a", Paths: []string{"../x"}}},
		{"ttl too long", hub.ReserveRequest{Workspace: "w", Agent: "a", Paths: []string{"a"}, TTL: 25 * time.Hour}},
		{"reason too long", hub.ReserveRequest{Workspace: "w", Agent: "a", Paths: []string{"a"}, Reason: strings.Repeat("r", 2000)}},
		{"too many paths", hub.ReserveRequest{Workspace: "w", Agent: "a", Paths: slices.Repeat([]string{"a"}, hub.MaxReservePaths+1)}},
	}
	for _, tt := range tests {
		if _, err := h.Reserve(ctx, tt.r); hub.KindOf(err) != hub.Invalid {
			t.Errorf("%s: got %v, want invalid", tt.name, err)
		}
	}
}

// TestReserveRace has eight agents ask for the same file at once: exactly one
// gets it.
func TestReserveRace(t *testing.T) {
	h, _ := newClockHub(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := 0
	for i := range 8 {
		wg.Go(func() {
			res, err := h.Reserve(context.Background(), hub.ReserveRequest{Workspace: "w", Agent: string(rune('a' + i)),
				Paths: []string{"hot.go"}, Exclusive: true})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			winners += len(res.Granted)
			mu.Unlock()
		})
	}
	wg.Wait()
	if winners != 1 {
		t.Errorf("winners: got %d, want exactly 1", winners)
	}
}

// BenchmarkReserve measures a reserve (with its conflict check against the
// workspace's live reservations: 50 other agents' globs and paths) and a
// CheckPaths beside their floors, a bare Overlap of two globs and the store's
// round trip for an empty change, on a real SQLite store.
func BenchmarkReserve(b *testing.B) {
	ctx := context.Background()
	h := newHub(b, nil)
	for i := range 50 {
		_, err := h.Reserve(ctx, hub.ReserveRequest{Workspace: "w", Agent: fmt.Sprintf("agent%d", i),
			Paths: []string{fmt.Sprintf("pkg%d/**", i), fmt.Sprintf("cmd/tool%d/*.go", i)}, Exclusive: true})
		if err != nil {
			b.Fatal(err)
		}
	}
	p50 := func(b *testing.B, fn func(i int)) {
		lat := make([]time.Duration, 0, b.N)
		i := 0
		for b.Loop() {
			start := time.Now()
			fn(i)
			lat = append(lat, time.Since(start))
			i++
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-us")
	}
	x, _ := hub.ParsePathPattern("src/**/internal/*_test.go")
	y, _ := hub.ParsePathPattern("src/hub/**")
	b.Run("floor=overlap", func(b *testing.B) { p50(b, func(int) { hub.Overlap(x, y) }) })
	// The store's own round trip: an empty change of the same reservations.
	store := h.Store()
	b.Run("floor=store-change", func(b *testing.B) {
		p50(b, func(int) {
			err := store.ChangeReservations(ctx, "w", time.Now(), func([]*hub.Reservation) (hub.ReservationChange, error) {
				return hub.ReservationChange{}, nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("reserve", func(b *testing.B) {
		p50(b, func(i int) {
			res, err := h.Reserve(ctx, hub.ReserveRequest{Workspace: "w", Agent: "me",
				Paths: []string{fmt.Sprintf("docs/page%d.md", i%100)}, Exclusive: true, TTL: time.Minute})
			if err != nil || len(res.Granted) != 1 {
				b.Fatal(res, err)
			}
		})
	})
	b.Run("conflict", func(b *testing.B) {
		p50(b, func(i int) {
			res, err := h.Reserve(ctx, hub.ReserveRequest{Workspace: "w", Agent: "me",
				Paths: []string{fmt.Sprintf("pkg%d/x.go", i%50)}, Exclusive: true})
			if err != nil || len(res.Conflicts) != 1 {
				b.Fatal(res, err)
			}
		})
	})
	b.Run("check", func(b *testing.B) {
		p50(b, func(i int) {
			cs, err := h.CheckPaths(ctx, "w", "me", []string{fmt.Sprintf("pkg%d/x.go", i%50)})
			if err != nil || len(cs) != 1 {
				b.Fatal(cs, err)
			}
		})
	})
}
