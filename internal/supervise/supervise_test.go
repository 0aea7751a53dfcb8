package supervise_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/store/sqlite"
	"github.com/parley-dev/parley/internal/supervise"
)

func steps(es []supervise.Escalation) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Case+" "+e.Agent+" "+string(e.Step))
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A stall climbs one step every Every, and stops climbing once the agent
// shows progress; a permission request starts at the lead after
// PermissionAfter, and stops once answered.
func TestLadder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		db, err := sqlite.Open(ctx, t.TempDir()+"/parley.db", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		const stall, every = 10 * time.Second, 30 * time.Second
		h := hub.New(db, &hub.Options{StallAfter: stall})
		perms := permission.New(db, nil)
		l := supervise.New(h, perms, supervise.Options{Every: every, PermissionAfter: time.Minute, Lead: "boss"})
		go l.Run(ctx)
		for _, n := range []string{"quiet", "boss"} {
			if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: n}); err != nil {
				t.Fatal(err)
			}
		}
		h.NoteActivity("w", "quiet", hub.ActTurnStart, "")
		time.Sleep(stall)
		h.CheckHealth() // what the hub's Run does every stall/4
		synctest.Wait()
		if got, want := steps(l.Recent("w")), []string{"stall quiet nudge"}; !equal(got, want) {
			t.Fatalf("at the stall: got %v, want %v", got, want)
		}
		time.Sleep(every)
		synctest.Wait()
		if got, want := steps(l.Recent("w")), []string{"stall quiet nudge", "stall quiet lead"}; !equal(got, want) {
			t.Fatalf("one step later: got %v, want %v", got, want)
		}
		boss, _, err := h.Peek(ctx, "w", "boss", 10)
		if err != nil || len(boss) != 1 || boss[0].From != hub.NoticeSender || boss[0].Metadata["agent"] != "quiet" {
			t.Errorf("the lead's inbox: got %v (%v), want parley's escalation about quiet", boss, err)
		}
		time.Sleep(every)
		synctest.Wait()
		es := l.Recent("w")
		if len(es) != 3 || es[2].Step != supervise.StepPerson || es[2].Text != "no notifier: add a [[notify]] endpoint to config.toml" {
			t.Fatalf("two steps later: got %+v, want the person step, with no notifier", es)
		}
		// At the top (no managed agent, no action): nothing more.
		time.Sleep(3 * every)
		synctest.Wait()
		if n := len(l.Recent("w")); n != 3 {
			t.Errorf("past the top: %d steps, want 3", n)
		}

		// Progress ends the case; a new stall starts afresh.
		h.NoteActivity("w", "quiet", hub.ActProgress, "")
		synctest.Wait()
		time.Sleep(stall)
		h.CheckHealth()
		synctest.Wait()
		if got := steps(l.Recent("w")); len(got) != 4 || got[3] != "stall quiet nudge" {
			t.Errorf("a second stall: got %v, want a new nudge", got)
		}
		h.NoteActivity("w", "quiet", hub.ActTurnEnd, "")

		// A permission request: the lead after PermissionAfter, then the
		// person; none once it is answered.
		r, err := perms.File(ctx, permission.Request{Workspace: "w", Agent: "asker", Source: permission.SourceClaudeHook, Tool: "Bash", Input: []byte(`{"command":"ls"}`)})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		es = l.Recent("w")
		if last := es[len(es)-1]; last.Case != supervise.CasePermission || last.Step != supervise.StepLead || last.Request != r.ID {
			t.Errorf("after PermissionAfter: got %+v, want the lead step of %s", last, r.ID)
		}
		if _, err := perms.Decide(ctx, "w", r.ID, permission.Decision{Allow: true, By: "test"}); err != nil {
			t.Fatal(err)
		}
		n := len(l.Recent("w"))
		time.Sleep(3 * every)
		synctest.Wait()
		if got := len(l.Recent("w")); got != n {
			t.Errorf("after the answer: %d more steps, want none", got-n)
		}
		cancel()
	})
}

// TestLadderLeadIsTheRole: lead = "@lead" tells the agents of role lead,
// never a group that took the name before any agent had the role.
func TestLadderLeadIsTheRole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		db, err := sqlite.Open(ctx, t.TempDir()+"/parley.db", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		const stall, every = 10 * time.Second, 30 * time.Second
		h := hub.New(db, &hub.Options{StallAfter: stall})
		l := supervise.New(h, permission.New(db, nil), supervise.Options{Every: every, PermissionAfter: time.Minute, Lead: "@lead"})
		go l.Run(ctx)
		for _, n := range []string{"quiet", "eve"} {
			if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: n}); err != nil {
				t.Fatal(err)
			}
		}
		// eve makes a group named lead while no agent has the role.
		if _, err := h.CreateGroup(ctx, "w", "lead", "", "eve"); err != nil {
			t.Fatal(err)
		}
		if err := h.AddGroupMember(ctx, "w", "lead", hub.Member{Type: hub.MemberAgent, ID: "eve"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: "boss", Role: "lead"}); err != nil {
			t.Fatal(err)
		}
		h.NoteActivity("w", "quiet", hub.ActTurnStart, "")
		time.Sleep(stall)
		h.CheckHealth()
		synctest.Wait()
		time.Sleep(every)
		synctest.Wait()
		if got, want := steps(l.Recent("w")), []string{"stall quiet nudge", "stall quiet lead"}; !equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		boss, _, _ := h.Peek(ctx, "w", "boss", 10)
		eve, _, _ := h.Peek(ctx, "w", "eve", 10)
		if len(boss) != 1 || len(eve) != 0 {
			t.Errorf("the escalation reached %d messages of boss (role lead) and %d of eve (group lead); want 1 and 0", len(boss), len(eve))
		}
		cancel()
		synctest.Wait()
	})
}
