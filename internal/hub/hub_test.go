package hub_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

func newHub(t testing.TB, opts *hub.Options) *hub.Hub {
	t.Helper()
	db, err := sqlite.Open(context.Background(), t.TempDir()+"/parley.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return hub.New(db, opts)
}

func join(t *testing.T, h *hub.Hub, ws, name, role string) {
	t.Helper()
	if _, err := h.Join(context.Background(), hub.JoinRequest{Workspace: ws, Name: name, Role: role}); err != nil {
		t.Fatal(err)
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	for _, a := range [][2]string{{"alice", "planner"}, {"bob", "reviewer"}, {"carol", "reviewer"}, {"dave", "implementer"}} {
		join(t, h, "w", a[0], a[1])
	}
	join(t, h, "other", "eve", "reviewer")
	if _, err := h.CreateGroup(ctx, "w", "backend", "", ""); err != nil {
		t.Fatal(err)
	}
	h.AddGroupMember(ctx, "w", "backend", hub.Member{Type: hub.MemberRole, ID: "reviewer"})
	h.AddGroupMember(ctx, "w", "backend", hub.Member{Type: hub.MemberAgent, ID: "dave"})
	h.AddGroupMember(ctx, "w", "backend", hub.Member{Type: hub.MemberAgent, ID: "bob"})
	// A group may not take the name of a role in use: it would take the
	// role's mail.
	if _, err := h.CreateGroup(ctx, "w", "planner", "", ""); hub.KindOf(err) != hub.Conflict || !strings.Contains(err.Error(), "role in use") {
		t.Fatalf("a group named for a role in use: got %v, want a conflict", err)
	}
	h.CreateGroup(ctx, "w", "solo", "", "")
	h.AddGroupMember(ctx, "w", "solo", hub.Member{Type: hub.MemberAgent, ID: "dave"})
	h.CreateGroup(ctx, "w", "empty", "", "")
	// A group made before its name became a role: @leads is then both,
	// and says so; @group: and @role: say which.
	h.CreateGroup(ctx, "w", "leads", "", "")
	h.AddGroupMember(ctx, "w", "leads", hub.Member{Type: hub.MemberAgent, ID: "alice"})
	join(t, h, "w", "zoe", "leads")

	tests := []struct {
		name, addr, from string
		want             []string
		kind             hub.Kind
		errHas           string
	}{
		{"plain name", "bob", "alice", []string{"bob"}, 0, ""},
		{"unregistered name", "frank", "alice", []string{"frank"}, 0, ""},
		{"self by name", "alice", "alice", []string{"alice"}, 0, ""},
		{"role", "@reviewer", "alice", []string{"bob", "carol"}, 0, ""},
		{"role without sender", "@reviewer", "bob", []string{"carol"}, 0, ""},
		{"group, deduplicated", "@backend", "alice", []string{"bob", "carol", "dave"}, 0, ""},
		{"group and role of one name", "@leads", "bob", nil, hub.Conflict, "both a group and a role"},
		{"the group, said", "@group:leads", "bob", []string{"alice"}, 0, ""},
		{"the role, said", "@role:leads", "bob", []string{"zoe"}, 0, ""},
		{"a role, said", "@role:reviewer", "alice", []string{"bob", "carol"}, 0, ""},
		{"a group, said, that is not", "@group:reviewer", "alice", nil, hub.NotFound, "no group named reviewer"},
		{"a role, said, that is not", "@role:backend", "alice", nil, hub.NotFound, "no agent has role backend"},
		{"everyone", "@everyone", "alice", []string{"bob", "carol", "dave", "zoe"}, 0, ""},
		{"composite id", hub.CompositeID("w", "reviewer", "carol"), "alice", []string{"carol"}, 0, ""},
		{"composite id with a stale role", hub.CompositeID("w", "old", "carol"), "alice", []string{"carol"}, 0, ""},
		{"composite id from another workspace", hub.CompositeID("other", "reviewer", "eve"), "alice", nil, hub.NotFound, "no agent with id"},
		{"unknown role", "@ghosts", "alice", nil, hub.NotFound, "matches no group"},
		{"empty group", "@empty", "alice", nil, hub.NotFound, "reaches no agent"},
		{"only the sender", "@solo", "dave", nil, hub.NotFound, "reaches no agent other than the sender"},
		{"empty", " ", "alice", nil, hub.Invalid, "no recipient"},
		{"bad name", "a b", "alice", nil, hub.Invalid, "invalid recipient"},
		{"bad composite", "agent:x", "alice", nil, hub.Invalid, "invalid composite id"},
		{"bad role", "@a/b", "alice", nil, hub.Invalid, "invalid address"},
		{"person", "human:ann", "alice", []string{"human:ann"}, 0, ""},
		{"person left out of everyone", "@everyone", "human:ann", []string{"alice", "bob", "carol", "dave", "zoe"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h.Resolve(ctx, "w", tt.addr, tt.from)
			if tt.errHas != "" {
				if err == nil || hub.KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("got %v, %v; want a %v error containing %q", got, err, tt.kind, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSendValidation(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, &hub.Options{MaxContent: 100})
	tests := []struct {
		name string
		req  hub.SendRequest
		kind hub.Kind
		has  string
	}{
		{"no sender", hub.SendRequest{Workspace: "w", To: "b", Content: "x"}, hub.Invalid, "no sender"},
		{"empty content", hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "\n "}, hub.Invalid, "must not be empty"},
		{"too large", hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: strings.Repeat("x", 101)}, hub.TooLarge, "limit is 100"},
		{"payload counts", hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "x", Payload: []byte(`"` + strings.Repeat("y", 100) + `"`)}, hub.TooLarge, "limit"},
		{"bad payload", hub.SendRequest{Workspace: "w", From: "a", To: "b", Payload: []byte(`{`)}, hub.Invalid, "not valid JSON"},
		{"bad priority", hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "x", Priority: "p0"}, hub.Invalid, "invalid priority"},
		{"bad sender", hub.SendRequest{Workspace: "w", From: "a:b", To: "b", Content: "x"}, hub.Invalid, "invalid sender"},
		{"bad person", hub.SendRequest{Workspace: "w", From: "human:", To: "b", Content: "x"}, hub.Invalid, "person's name"},
		{"bad workspace", hub.SendRequest{Workspace: "w\x00", From: "a", To: "b", Content: "x"}, hub.Invalid, "control characters"},
		{"unknown reply_to", hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "x", ReplyTo: "nope"}, hub.NotFound, "reply_to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Send(ctx, tt.req)
			if err == nil || hub.KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.has) {
				t.Fatalf("got %v; want a %v error containing %q", err, tt.kind, tt.has)
			}
		})
	}
	if n, _ := h.Unread(ctx, "w", "b"); n != 0 {
		t.Errorf("unread after failed sends: got %d, want 0", n)
	}
	// A person sends as human:NAME, and an agent replies to that address.
	res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "human:ann", To: "b", Content: "from the dashboard"})
	if err != nil || !slices.Equal(res.Recipients, []string{"b"}) || res.Message.From != "human:ann" {
		t.Fatalf("send as a person: got %+v, %v; want a message from human:ann to b", res, err)
	}
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "b", To: "human:ann", Content: "ok", ReplyTo: res.Message.ID}); err != nil {
		t.Fatalf("reply to a person: %v", err)
	}
	if n, _ := h.Unread(ctx, "w", "human:ann"); n != 1 {
		t.Errorf("the person's unread: got %d, want 1", n)
	}
	// A payload-only message is fine.
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Payload: []byte(`{"k":1}`)}); err != nil {
		t.Errorf("payload-only send: %v", err)
	}
}

func TestWaitNoLostWakeups(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	const agents, perAgent, waitersPerAgent = 4, 25, 3
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for a := 0; a < agents; a++ {
		name := fmt.Sprintf("a%d", a)
		remaining := make(chan struct{}, perAgent)
		for i := 0; i < perAgent; i++ {
			remaining <- struct{}{}
		}
		for w := 0; w < waitersPerAgent; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-remaining:
					default:
						return
					}
					m, err := h.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: name, Timeout: 20 * time.Second})
					if err != nil || m == nil {
						t.Errorf("wait %s: %v %v", name, m, err)
						return
					}
					mu.Lock()
					got[m.ID]++
					mu.Unlock()
				}
			}()
		}
	}
	var ids []string
	var idMu sync.Mutex
	var sends sync.WaitGroup
	for s := 0; s < 4; s++ {
		sends.Add(1)
		go func() {
			defer sends.Done()
			for i := 0; i < perAgent*agents/4; i++ {
				to := fmt.Sprintf("a%d", (s+i)%agents)
				res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "s", To: to, Content: "x"})
				if err != nil {
					t.Error(err)
					return
				}
				idMu.Lock()
				ids = append(ids, res.Message.ID)
				idMu.Unlock()
			}
		}()
	}
	sends.Wait()
	wg.Wait()
	if len(got) != len(ids) {
		t.Fatalf("received %d distinct messages, sent %d", len(got), len(ids))
	}
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("message %s received %d times, want 1", id, got[id])
		}
	}
}

func TestWaitTimeoutFilterAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := newHub(t, nil)
		start := time.Now()
		m, err := h.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: "b", Timeout: 50 * time.Millisecond})
		if m != nil || err != nil || time.Since(start) != 50*time.Millisecond {
			t.Fatalf("empty wait: got %v %v after %s, want a timeout after 50ms", m, err, time.Since(start))
		}
		// A low message does not wake a critical-only waiter; a critical one does.
		if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "low", Priority: "low"}); err != nil {
			t.Fatal(err)
		}
		crit, _ := hub.ParsePriorityFilter("critical")
		done := make(chan *hub.Message, 1)
		go func() {
			m, _ := h.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: "b", Timeout: 10 * time.Second, Filter: crit})
			done <- m
		}()
		synctest.Wait()
		select {
		case m := <-done:
			t.Fatalf("critical-only wait woke for %v with only a low message unread", m)
		default:
		}
		if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "fire", Priority: "critical"}); err != nil {
			t.Fatal(err)
		}
		if m := <-done; m == nil || m.Content != "fire" {
			t.Fatalf("critical wait: got %v, want the critical message", m)
		}
		if n, _ := h.Unread(ctx, "w", "b"); n != 1 {
			t.Errorf("unread after the critical wait: got %d, want the low one left", n)
		}
		// Cancelling the context ends a wait with an error, and unregisters it.
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := h.Wait(cctx, hub.WaitRequest{Workspace: "w", Agent: "c", Timeout: 10 * time.Second})
			errc <- err
		}()
		synctest.Wait()
		if n := h.Waiters("w", "c"); n != 1 {
			t.Errorf("waiters while blocked: got %d, want 1", n)
		}
		cancel()
		if err := <-errc; err == nil {
			t.Error("cancelled wait: got nil error")
		}
		if n := h.Waiters("w", "c"); n != 0 {
			t.Errorf("waiters after cancel: got %d, want 0", n)
		}
		// Progress is reported while waiting: at 20, 40, ... 100 ms of a 110 ms wait.
		var ticks []time.Duration
		h.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: "d", Timeout: 110 * time.Millisecond, ProgressEvery: 20 * time.Millisecond,
			Progress: func(d time.Duration) { ticks = append(ticks, d) }})
		want := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond, 80 * time.Millisecond, 100 * time.Millisecond}
		if !slices.Equal(ticks, want) {
			t.Errorf("progress in a 110ms wait at 20ms: got %v, want %v", ticks, want)
		}
		if _, err := h.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: "d", Timeout: 11 * time.Minute}); hub.KindOf(err) != hub.Invalid {
			t.Errorf("11 minute wait: got %v, want invalid", err)
		}
	})
}

func TestPresence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := newHub(t, nil)
		join(t, h, "w", "a", "dev")
		active := func() bool {
			as, err := h.Agents(ctx, "w")
			if err != nil || len(as) != 1 {
				t.Fatalf("agents: %v %v", as, err)
			}
			return as[0].Active
		}
		if !active() {
			t.Error("just joined: want active")
		}
		time.Sleep(3 * time.Minute)
		if active() {
			t.Error("3 minutes silent: want offline")
		}
		h.SessionOpened("w", "a")
		time.Sleep(10 * time.Minute)
		if !active() {
			t.Error("open session: want active")
		}
		h.SessionClosed("w", "a")
		if active() {
			t.Error("its only session just ended: want offline (it left, or its client died)")
		}
		time.Sleep(time.Minute)
		h.Touch(ctx, "w", "a") // a command of its own, without a session
		time.Sleep(time.Minute)
		if !active() {
			t.Error("seen a minute ago, after its session ended: want active")
		}
		time.Sleep(2 * time.Minute)
		if active() {
			t.Error("seen 3 minutes ago: want offline")
		}
		if err := h.SetStatus(ctx, "w", "a", "work"); err != nil {
			t.Fatal(err)
		}
		if a, _ := h.Agent(ctx, "w", "a"); a.Status != hub.StatusWork {
			t.Errorf("status: got %s, want work", a.Status)
		}
		if err := h.SetStatus(ctx, "w", "nobody", "work"); hub.KindOf(err) != hub.NotFound {
			t.Errorf("status of unknown agent: got %v, want not found", err)
		}
		// A rejoin keeps status and creation time.
		a1, _ := h.Agent(ctx, "w", "a")
		join(t, h, "w", "a", "lead")
		a2, _ := h.Agent(ctx, "w", "a")
		if a2.Role != "lead" || a2.Status != hub.StatusWork || !a2.CreatedAt.Equal(a1.CreatedAt) {
			t.Errorf("rejoin: got %+v, want role lead, status work, created %s", a2, a1.CreatedAt)
		}
	})
}

// TestSendPresence checks that a send reports each recipient's presence as of
// the send, however the address was resolved.
func TestSendPresence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := newHub(t, nil)
		join(t, h, "w", "sender", "lead")
		join(t, h, "w", "idle", "dev")
		join(t, h, "w", "online", "dev")
		join(t, h, "w", "recent", "ops")
		time.Sleep(5 * time.Minute) // all but those touched below go quiet
		h.SessionOpened("w", "online")
		h.Touch(ctx, "w", "recent")
		send := func(to string) *hub.SendResult {
			t.Helper()
			res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "sender", To: to, Content: "x"})
			if err != nil {
				t.Fatalf("send to %s: %v", to, err)
			}
			if len(res.Presence) != len(res.Recipients) {
				t.Fatalf("send to %s: %d presences for %d recipients", to, len(res.Presence), len(res.Recipients))
			}
			return res
		}
		for _, tt := range []struct {
			to   string
			want []hub.Presence
		}{
			{"online", []hub.Presence{hub.PresenceActive}},
			{"recent", []hub.Presence{hub.PresenceActive}},
			{"idle", []hub.Presence{hub.PresenceOffline}},
			{"ghost", []hub.Presence{hub.PresenceUnregistered}},
			{"@dev", []hub.Presence{hub.PresenceOffline, hub.PresenceActive}}, // idle, online
			{"@everyone", []hub.Presence{hub.PresenceOffline, hub.PresenceActive, hub.PresenceActive}},
			{hub.CompositeID("w", "dev", "idle"), []hub.Presence{hub.PresenceOffline}},
		} {
			if got := send(tt.to).Presence; !slices.Equal(got, tt.want) {
				t.Errorf("send to %s: presence %v, want %v", tt.to, got, tt.want)
			}
		}
		res, err := h.Broadcast(ctx, hub.BroadcastRequest{Workspace: "w", From: "sender", Content: "x", Exclude: []string{"ops"}})
		if err != nil {
			t.Fatal(err)
		}
		if want := []hub.Presence{hub.PresenceOffline, hub.PresenceActive}; !slices.Equal(res.Presence, want) {
			t.Errorf("broadcast to %v: presence %v, want %v", res.Recipients, res.Presence, want)
		}

		// A send reads a plain name's record once in a while, not each
		// time; what changes meanwhile still shows at the next send.
		h.Touch(ctx, "w", "idle")
		if got := send("idle").Presence; !slices.Equal(got, []hub.Presence{hub.PresenceActive}) {
			t.Errorf("send to idle after it was seen: presence %v, want active", got)
		}
		join(t, h, "w", "ghost", "dev")
		if got := send("ghost").Presence; !slices.Equal(got, []hub.Presence{hub.PresenceActive}) {
			t.Errorf("send to ghost after it joined: presence %v, want active", got)
		}
		time.Sleep(hub.ActiveWindow)
		if got := send("ghost").Presence; !slices.Equal(got, []hub.Presence{hub.PresenceOffline}) {
			t.Errorf("send to ghost gone quiet: presence %v, want offline", got)
		}
	})
}

// relay is the simplest Notifier: it carries events to other hubs in the
// same process, as LISTEN/NOTIFY carries them to other daemons.
type relay struct {
	mu   sync.Mutex
	to   []*hub.Hub
	sent int // message.sent events carried
}

func (r *relay) Announce(e hub.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Kind == hub.EventMessageSent {
		r.sent++
	}
	for _, h := range r.to {
		h.Relay(e)
	}
}

// TestNotifierWakesOtherHub runs two hubs over one store, as two daemons over
// one database: a send through one wakes a wait on the other only through the
// notifier.
func TestNotifierWakesOtherHub(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db, err := sqlite.Open(ctx, t.TempDir()+"/parley.db", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		r := &relay{}
		sender := hub.New(db, &hub.Options{Notifier: r})
		alone := hub.New(db, nil) // no notifier: sends wake local waiters only
		waiter := hub.New(db, nil)
		r.to = []*hub.Hub{waiter}
		// Subscribers run on the publisher's goroutine: the relay's, and
		// the waiter's own for its read.
		var mu sync.Mutex
		var relayed []hub.Event
		defer waiter.Subscribe(func(e hub.Event) { mu.Lock(); relayed = append(relayed, e); mu.Unlock() })()

		got := make(chan *hub.Message, 1)
		go func() {
			m, err := waiter.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: "b", Timeout: time.Minute})
			if err != nil {
				t.Errorf("wait: %v", err)
			}
			got <- m
		}()
		synctest.Wait()
		if _, err := alone.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "unheard"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case m := <-got:
			t.Fatalf("a send without a notifier woke another hub's wait: got %v", m)
		default:
		}
		if _, err := sender.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "heard"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case m := <-got:
			// The wait looks at the store again: it takes the oldest unread.
			if m == nil || m.Content != "unheard" {
				t.Errorf("woken wait: got %v, want the first message", m)
			}
		default:
			t.Fatal("a send through the notifier did not wake the other hub's wait")
		}
		if r.sent != 1 {
			t.Errorf("notifications: got %d, want 1", r.sent)
		}
		// The waiting hub's subscribers heard of the send, as from afar,
		// and of its own read for the wait, as its own.
		var kinds []string
		mu.Lock()
		defer mu.Unlock()
		for _, e := range relayed {
			if e.Kind == hub.EventAgentHealth {
				continue // the wait's own health, waiting and back (health.go)
			}
			kinds = append(kinds, fmt.Sprintf("%s remote=%v", e.Kind, e.Remote))
			if e.Kind == hub.EventMessageSent && (e.Message == nil || e.Message.Content != "heard" || !slices.Equal(e.Recipients, []string{"b"})) {
				t.Errorf("relayed message.sent: got %+v, want the message \"heard\" to b", e)
			}
		}
		if want := []string{"message.sent remote=true", "message.read remote=false"}; !slices.Equal(kinds, want) {
			t.Errorf("events on the waiting hub: got %v, want %v", kinds, want)
		}
	})
}

func TestEventsAndGroups(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	var mu sync.Mutex
	var kinds []hub.EventKind
	cancel := h.Subscribe(func(e hub.Event) { mu.Lock(); kinds = append(kinds, e.Kind); mu.Unlock() })
	join(t, h, "w", "a", "dev")
	join(t, h, "w", "b", "dev")
	h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "x"})
	h.CreateGroup(ctx, "w", "g", "", "")
	cancel()
	h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "y"})
	want := []hub.EventKind{hub.EventAgentJoined, hub.EventAgentJoined, hub.EventMessageSent, hub.EventGroupChanged}
	if !slices.Equal(kinds, want) {
		t.Errorf("events: got %v, want %v", kinds, want)
	}
	gs, _ := h.Groups(ctx, "w")
	if len(gs) != 2 || gs[0].Name != "everyone" || len(gs[0].Members) != 2 {
		t.Errorf("groups: got %+v, want everyone (2 members) and g", gs)
	}
	for _, name := range []string{"everyone", "@everyone"} {
		if err := h.DeleteGroup(ctx, "w", name); hub.KindOf(err) != hub.Forbidden {
			t.Errorf("delete %s: got %v, want forbidden", name, err)
		}
		if err := h.AddGroupMember(ctx, "w", name, hub.Member{Type: hub.MemberAgent, ID: "a"}); hub.KindOf(err) != hub.Forbidden {
			t.Errorf("add to %s: got %v, want forbidden", name, err)
		}
	}
}

func TestParsers(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want hub.Priority
		ok   bool
	}{{"", hub.Normal, true}, {"critical", hub.Critical, true}, {"low", hub.Low, true}, {"HIGH", "", false}, {"urgent", "", false}} {
		got, err := hub.ParsePriority(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParsePriority(%q): got %q, %v", tt.in, got, err)
		}
	}
	for _, tt := range []struct {
		in   string
		want int
		ok   bool
	}{{"", 3, true}, {"all", 3, true}, {"critical", 0, true}, {"high_and_above", 1, true}, {"normal_and_above", 2, true}, {"low", 0, false}} {
		got, err := hub.ParsePriorityFilter(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got.MaxRank() != tt.want) {
			t.Errorf("ParsePriorityFilter(%q): got %v, %v", tt.in, got, err)
		}
	}
	for _, tt := range []struct {
		in string
		ok bool
	}{{"alice", true}, {"a.b_c-d", true}, {"Ünïcode", true}, {"9lives", true}, {"", false}, {"-x", false}, {"a b", false}, {"a@b", false}, {"a:b", false}, {"a/b", false}, {strings.Repeat("x", 65), false}} {
		if err := hub.ValidName("name", tt.in); (err == nil) != tt.ok {
			t.Errorf("ValidName(%q): got %v, want ok=%v", tt.in, err, tt.ok)
		}
	}
}
