package storetest

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// testRenameAgent: a renamed agent keeps its record, takes its old name's
// mail (read or not, leased or not), groups and reservations, and the old
// name (with the aliases it had) becomes an alias of the new.
func testRenameAgent(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	for _, a := range []*hub.Agent{
		{Workspace: "ws", Name: "claude-app-3f9a1c", Role: "agent", Module: "api", Status: hub.StatusWork, CreatedAt: at(1), LastSeen: at(2)},
		{Workspace: "ws", Name: "carol", Role: "dev", CreatedAt: at(1)},
		{Workspace: "other", Name: "claude-app-3f9a1c", Role: "agent", CreatedAt: at(1)},
	} {
		if err := s.PutAgent(c, a); err != nil {
			t.Fatal(err)
		}
	}
	old := "claude-app-3f9a1c"
	read := f.send("ws", "carol", hub.Normal, "read one", old)
	if _, err := consume(c, s, "ws", old, 3, 1); err != nil {
		t.Fatal(err)
	}
	queued := f.send("ws", "carol", hub.High, "queued one", old)
	both := f.send("ws", "carol", hub.Normal, "to both", old, "reviewer")
	early := f.send("ws", "carol", hub.Low, "early for reviewer", "reviewer")
	elsewhere := f.send("other", "carol", hub.Normal, "other workspace", old)
	if err := s.CreateGroup(c, &hub.Group{Workspace: "ws", Name: "team", CreatedAt: at(3), Members: []hub.Member{{Type: hub.MemberAgent, ID: old}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateGroup(c, &hub.Group{Workspace: "ws", Name: "both", CreatedAt: at(3),
		Members: []hub.Member{{Type: hub.MemberAgent, ID: old}, {Type: hub.MemberAgent, ID: "reviewer"}, {Type: hub.MemberRole, ID: old}}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	put(t, s, "ws", now, resv("r1", "ws", old, "src/*.go", true, now, now.Add(time.Hour)))

	to := &hub.Agent{Workspace: "ws", Name: "reviewer", Role: "reviewer"}
	if err := s.RenameAgent(c, old, to, at(50)); err != nil {
		t.Fatalf("RenameAgent: %v", err)
	}
	got, err := s.Agent(c, "ws", "reviewer")
	if err != nil {
		t.Fatalf("Agent(reviewer): %v", err)
	}
	checkAgent(t, "the renamed agent", got, &hub.Agent{Workspace: "ws", Name: "reviewer", Role: "reviewer", Status: hub.StatusWork, CreatedAt: at(1)})
	if _, err := s.Agent(c, "ws", old); !hub.IsNotFound(err) {
		t.Errorf("Agent(old name) after the rename: %v, want not found", err)
	}
	if a, err := s.Agent(c, "other", old); err != nil || a.Name != old {
		t.Errorf("the same name in another workspace: %v %v; want it untouched", a, err)
	}
	// The inbox: what was queued for either name, once each, in order.
	inbox, err := peek(c, s, "ws", "reviewer", 10)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := ids(inbox), ids([]*hub.Message{queued, both, early}); !slices.Equal(g, w) {
		t.Errorf("inbox after the rename: %v, want %v", contents(inbox), []string{queued.Content, both.Content, early.Content})
	}
	if n, err := s.Unread(c, "ws", old, 3); err != nil || n != 0 {
		t.Errorf("Unread(old name): %d %v, want 0", n, err)
	}
	// History: the read copy went along.
	h, err := s.History(c, "ws", hub.HistoryQuery{Agent: "reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ids(h), read.ID) {
		t.Errorf("history of the new name lacks the old name's read message: %v", contents(h))
	}
	if ds, err := s.Deliveries(c, "ws", both.ID); err != nil || len(ds) != 1 || ds[0].Recipient != "reviewer" {
		t.Errorf("deliveries of a message to both names: %+v %v, want one, the new name's", ds, err)
	}
	if n, err := s.Unread(c, "other", old, 3); err != nil || n != 1 {
		t.Errorf("Unread in the other workspace: %d %v, want 1 (%s)", n, err, elsewhere.ID)
	}
	// Groups and reservations.
	team, _ := s.Group(c, "ws", "team")
	if team == nil || !slices.Equal(team.Members, []hub.Member{{Type: hub.MemberAgent, ID: "reviewer"}}) {
		t.Errorf("group team after the rename: %+v", team)
	}
	g2, _ := s.Group(c, "ws", "both")
	if g2 == nil || !slices.Equal(sortedMembers(g2.Members), sortedMembers([]hub.Member{{Type: hub.MemberAgent, ID: "reviewer"}, {Type: hub.MemberRole, ID: old}})) {
		t.Errorf("group both after the rename: %+v; want reviewer once, and the role member untouched", g2)
	}
	if rs := live(t, s, "ws", now); len(rs) != 1 || rs[0].Agent != "reviewer" {
		t.Errorf("reservations after the rename: %+v", rs)
	}
	wantAliases := func(what string, want map[string]string) {
		t.Helper()
		got, err := s.Aliases(c, "ws")
		if err != nil {
			t.Fatalf("%s: Aliases: %v", what, err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: aliases %v, want %v", what, got, want)
		}
	}
	wantAliases("after the rename", map[string]string{old: "reviewer"})
	if as, err := s.Aliases(c, "other"); err != nil || len(as) != 0 {
		t.Errorf("aliases of the other workspace: %v %v, want none", as, err)
	}

	// Refusals: an agent's name, another agent's alias; nothing changes.
	wantKind(t, "rename onto an agent", s.RenameAgent(c, "reviewer", &hub.Agent{Workspace: "ws", Name: "carol", Role: "dev"}, at(51)), hub.Conflict)
	if err := s.RenameAgent(c, "carol", &hub.Agent{Workspace: "ws", Name: "carol-2", Role: "dev"}, at(52)); err != nil {
		t.Fatal(err)
	}
	wantKind(t, "rename onto another's alias", s.RenameAgent(c, "reviewer", &hub.Agent{Workspace: "ws", Name: "carol", Role: "dev"}, at(53)), hub.Conflict)
	if _, err := s.Agent(c, "ws", "reviewer"); err != nil {
		t.Errorf("a refused rename moved the agent: %v", err)
	}

	// Again: the old aliases follow; a name taken back is no alias.
	if err := s.RenameAgent(c, "reviewer", &hub.Agent{Workspace: "ws", Name: "lead", Role: "lead"}, at(54)); err != nil {
		t.Fatal(err)
	}
	wantAliases("after a second rename", map[string]string{old: "lead", "reviewer": "lead", "carol": "carol-2"})
	if err := s.RenameAgent(c, "lead", &hub.Agent{Workspace: "ws", Name: old, Role: "agent"}, at(55)); err != nil {
		t.Fatalf("taking the first name back: %v", err)
	}
	wantAliases("after taking the name back", map[string]string{"reviewer": old, "lead": old, "carol": "carol-2"})
	if n, err := s.Unread(c, "ws", old, 3); err != nil || n != 3 {
		t.Errorf("Unread after taking the name back: %d %v, want 3", n, err)
	}

	// A name that never joined: the new one is a new agent, the old an alias.
	if err := s.RenameAgent(c, "session-app-77aa00", &hub.Agent{Workspace: "ws", Name: "tester", Role: "tester", Status: hub.StatusReady}, at(60)); err != nil {
		t.Fatalf("rename of a name that never joined: %v", err)
	}
	if a, err := s.Agent(c, "ws", "tester"); err != nil || a.Role != "tester" || a.Status != hub.StatusReady || !a.CreatedAt.Equal(at(60)) {
		t.Errorf("new agent of a rename: %+v %v", a, err)
	}
}
