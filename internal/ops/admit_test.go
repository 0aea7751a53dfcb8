package ops

import (
	"context"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/api"
)

// TestAdmitNeverShares: a name given to a session is its own unless a live
// session of another client session holds it; then it speaks as its
// client session's own name, is told why, and keeps that name while it
// lives (its hooks asking Identify get the same), even once the given
// name is free. Derived and fixed names, and sessions that do not say
// which client session they are, are admitted as they are.
func TestAdmitNeverShares(t *testing.T) {
	o, h := newTestOps(t)
	ctx := context.Background()
	one := Admission{Workspace: "w", Agent: "alice", Session: "claude:aaaa", Own: "claude-proj-aaaaaa"}
	if a := o.Admit(one); a.Agent != "alice" || a.Note != "" {
		t.Fatalf("the first session: %+v, want alice", a)
	}
	releaseOne := h.Hold("w", "alice", one.Session, "")
	// The same client session again (its MCP server restarted): alice.
	if a := o.Admit(one); a.Agent != "alice" {
		t.Errorf("the same client session: %+v, want alice", a)
	}
	two := Admission{Workspace: "w", Agent: "alice", Session: "claude:bbbb", Own: "claude-proj-bbbbbb"}
	a := o.Admit(two)
	if a.Agent != two.Own || a.NameFrom != api.NameSession || !strings.Contains(a.Note, "alice is held by another live client session (claude:aaaa)") {
		t.Fatalf("a second session asking for alice: %+v, want its own name and why", a)
	}
	releaseTwo := h.Hold("w", a.Agent, two.Session, "alice")
	// Its hooks ask the same: the same answer.
	res, err := o.Identify(ctx, &Caller{Workspace: "w"}, api.IdentifyRequest{Agent: "alice", Session: two.Session, Own: two.Own})
	if err != nil || res.Agent != two.Own || !res.Derived {
		t.Errorf("identify for the second session's hook: %+v %v", res, err)
	}
	// The first ends: the second keeps its own name while it lives.
	releaseOne()
	if a := o.Admit(two); a.Agent != two.Own || !strings.Contains(a.Note, "keeps that name") {
		t.Errorf("after the first ended: %+v, want the second to keep %s", a, two.Own)
	}
	releaseTwo()
	if a := o.Admit(two); a.Agent != "alice" {
		t.Errorf("once nothing holds alice: %+v, want alice", a)
	}
	// What is admitted as it is.
	h.Hold("w", "alice", one.Session, "")
	for _, in := range []Admission{
		{Workspace: "w", Agent: "alice", Session: "claude:cccc", Own: "claude-proj-cccccc", Fixed: true},
		{Workspace: "w", Agent: "alice", Own: "x"},
		{Workspace: "w", Agent: "alice", Session: "claude:cccc"},
		{Workspace: "w", Agent: "claude-proj-cccccc", NameFrom: api.NameSession, Session: "claude:cccc", Own: "claude-proj-cccccc"},
		{Workspace: "other", Agent: "alice", Session: "claude:cccc", Own: "claude-proj-cccccc"},
	} {
		if a := o.Admit(in); a.Agent != in.Agent {
			t.Errorf("%+v: admitted as %+v, want as it is", in, a)
		}
	}
	if _, err := o.Identify(ctx, &Caller{Workspace: "w"}, api.IdentifyRequest{Agent: "two words", Session: "k"}); err == nil {
		t.Error("identify with an invalid name: no error")
	}
}
