package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// testAgentLifetime: how long an agent lives (session-bound, provisional)
// round-trips through PutAgent, updates, and a rename.
func testAgentLifetime(t *testing.T, s hub.Store) {
	c := ctx(t)
	a := &hub.Agent{Workspace: "ws", Name: "claude-app-3f9a1c", Role: "agent", Status: hub.StatusReady, CreatedAt: at(1), SessionBound: true, Provisional: true}
	if err := s.PutAgent(c, a); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAgent(c, &hub.Agent{Workspace: "ws", Name: "alice", Role: "dev", CreatedAt: at(1)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Agent(c, "ws", a.Name)
	if err != nil || !got.SessionBound || !got.Provisional {
		t.Fatalf("Agent: %+v %v, want session-bound and provisional", got, err)
	}
	as, err := s.Agents(c, "ws")
	if err != nil || len(as) != 2 || as[0].Name != "alice" || as[0].SessionBound || as[0].Provisional || !as[1].Provisional {
		t.Errorf("Agents: %+v %v", as, err)
	}
	// Its first call confirms it.
	up := *got
	up.Provisional = false
	if err := s.PutAgent(c, &up); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Agent(c, "ws", a.Name); got == nil || got.Provisional || !got.SessionBound {
		t.Errorf("after the update: %+v, want session-bound, not provisional", got)
	}
	if err := s.RenameAgent(c, a.Name, &hub.Agent{Workspace: "ws", Name: "reviewer", Role: "reviewer", SessionBound: true}, at(5)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Agent(c, "ws", "reviewer"); err != nil || !got.SessionBound || got.Provisional {
		t.Errorf("renamed: %+v %v, want session-bound", got, err)
	}
}

// testForgetAgent: forgetting an agent removes it, its memberships,
// reservations and old names, and bounces what it had not read (queued,
// back in the inbox, or leased), with the reason; what it read and sent
// stays, and so do other agents and workspaces.
func testForgetAgent(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	for _, a := range []*hub.Agent{
		{Workspace: "ws", Name: "ghost", Role: "agent", CreatedAt: at(1)},
		{Workspace: "ws", Name: "alice", Role: "dev", CreatedAt: at(1)},
		{Workspace: "other", Name: "ghost", Role: "agent", CreatedAt: at(1)},
	} {
		if err := s.PutAgent(c, a); err != nil {
			t.Fatal(err)
		}
	}
	read := f.send("ws", "alice", hub.Normal, "read", "ghost")
	if _, err := consume(c, s, "ws", "ghost", 3, 1); err != nil {
		t.Fatal(err)
	}
	leased := f.send("ws", "alice", hub.High, "leased", "ghost")
	take(t, s, "ws", "ghost", "r1", 1, at(20))
	queued := f.send("ws", "alice", hub.Normal, "queued", "ghost", "alice")
	sent := f.send("ws", "ghost", hub.Normal, "from the ghost", "alice")
	elsewhere := f.send("other", "alice", hub.Normal, "other workspace", "ghost")
	if err := s.CreateGroup(c, &hub.Group{Workspace: "ws", Name: "team", CreatedAt: at(3),
		Members: []hub.Member{{Type: hub.MemberAgent, ID: "ghost"}, {Type: hub.MemberAgent, ID: "alice"}}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	put(t, s, "ws", now, resv("r1", "ws", "ghost", "src/*.go", true, now, now.Add(time.Hour)))
	if err := s.RenameAgent(c, "ghost", &hub.Agent{Workspace: "ws", Name: "ghost2", Role: "agent"}, at(30)); err != nil {
		t.Fatal(err)
	}

	bounced, err := s.ForgetAgent(c, "ws", "ghost2", "forgotten", at(40))
	if err != nil {
		t.Fatalf("ForgetAgent: %v", err)
	}
	var got []string
	for _, d := range bounced {
		if d.State != hub.Bounced || d.BounceReason != "forgotten" || !d.BouncedAt.Equal(at(40)) || d.Message == nil || d.Recipient != "ghost2" {
			t.Errorf("bounced copy: %+v", d)
		}
		got = append(got, d.MessageID)
	}
	slices.Sort(got)
	want := []string{leased.ID, queued.ID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("bounced: %v, want the leased and the queued copy %v", got, want)
	}
	if _, err := s.Agent(c, "ws", "ghost2"); !hub.IsNotFound(err) {
		t.Errorf("Agent after forget: %v, want not found", err)
	}
	if as, err := s.Aliases(c, "ws"); err != nil || len(as) != 0 {
		t.Errorf("aliases after forget: %v %v, want none", as, err)
	}
	if g, _ := s.Group(c, "ws", "team"); g == nil || !slices.Equal(g.Members, []hub.Member{{Type: hub.MemberAgent, ID: "alice"}}) {
		t.Errorf("group after forget: %+v, want alice only", g)
	}
	if rs := live(t, s, "ws", now); len(rs) != 0 {
		t.Errorf("reservations after forget: %+v", rs)
	}
	if ds, err := s.Deliveries(c, "ws", read.ID); err != nil || len(ds) != 1 || ds[0].State != hub.Read {
		t.Errorf("the copy it read: %+v %v, want kept, read", ds, err)
	}
	if m, err := s.Message(c, "ws", sent.ID); err != nil || m.From != "ghost" {
		t.Errorf("what it sent: %+v %v, want kept", m, err)
	}
	if n, err := s.Unread(c, "ws", "alice", 3); err != nil || n != 2 {
		t.Errorf("alice's inbox: %d %v, want 2 (her copy of %q and %q)", n, err, queued.Content, sent.Content)
	}
	if n, err := s.Unread(c, "other", "ghost", 3); err != nil || n != 1 {
		t.Errorf("the same name in another workspace: %d unread %v, want 1 (%s)", n, err, elsewhere.ID)
	}
	if _, err := s.ForgetAgent(c, "ws", "ghost2", "again", at(41)); !hub.IsNotFound(err) {
		t.Errorf("ForgetAgent again: %v, want not found", err)
	}
}
