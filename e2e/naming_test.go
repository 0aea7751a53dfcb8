package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/workspace"
)

// TestSessionsTakeNobodysName: through the real `parley mcp serve` and a
// go-sdk client, as a client session starts it. In a repository where a
// person joined as alice, a zero-flag client session is not alice: it
// speaks as its own name and does not read alice's mail, which alice still
// finds at her terminal. Two client sessions given one name (an .mcp.json
// with --agent lead) are not one agent: the second speaks as its own name
// and whoami says why, and so do its hooks and shell commands, which ask
// the daemon. An identity file `parley join` made inside a session is that
// session's only.
func TestSessionsTakeNobodysName(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	if out, errs, code := e.runIn(repo, "join", "--name", "alice", "--role", "planner"); code != 0 {
		t.Fatalf("join alice: exit %d %s%s", code, out, errs)
	}
	e.sendIn(t, repo, "alice", "for alice only", "--agent", "boss")
	session := func(id string, args ...string) *mcp.ClientSession {
		t.Helper()
		e.extra = []string{"CLAUDE_CODE_SESSION_ID=" + id}
		defer func() { e.extra = nil }()
		return e.SessionIn(repo, nil, args...)
	}
	own := func(id string) string {
		s, _ := workspace.FindSession(func(k string) string {
			if k == "CLAUDE_CODE_SESSION_ID" {
				return id
			}
			return ""
		})
		return s.Name(repo)
	}
	var who struct{ Agent, Note string }

	// A zero-flag session beside alice's file.
	a := session("aaaa-1111")
	mustCall(t, a, "whoami", nil, &who)
	if who.Agent != own("aaaa-1111") {
		t.Fatalf("a zero-flag session in alice's repository: whoami %+v, want its own name %s", who, own("aaaa-1111"))
	}
	var inbox struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	mustCall(t, a, "check_messages", nil, &inbox)
	if len(inbox.Messages) != 0 {
		t.Errorf("the session read %+v, alice's mail", inbox.Messages)
	}
	if out, errs, code := e.runIn(repo, "inbox", "--json"); code != 0 || !strings.Contains(out, "for alice only") {
		t.Errorf("alice at her terminal: exit %d %s %s, want her message still there", code, out, errs)
	}

	// Two sessions given one name.
	b := session("bbbb-2222", "--agent", "lead", "--role", "lead")
	mustCall(t, b, "whoami", nil, &who)
	if who.Agent != "lead" {
		t.Fatalf("the first session given lead: %+v", who)
	}
	c := session("cccc-3333", "--agent", "lead", "--role", "lead")
	mustCall(t, c, "whoami", nil, &who)
	if who.Agent != own("cccc-3333") || !strings.Contains(who.Note, "lead is held by another live client session") {
		t.Errorf("the second session given lead: whoami %+v, want %s and why", who, own("cccc-3333"))
	}
	// Its shell (and hooks) ask the daemon and speak as it.
	e.extra = []string{"CLAUDE_CODE_SESSION_ID=cccc-3333"}
	out, errs, code := e.runIn(repo, "whoami", "--agent", "lead", "--json")
	e.extra = nil
	var w struct{ Name string }
	json.Unmarshal([]byte(out), &w)
	if code != 0 || w.Name != own("cccc-3333") || !strings.Contains(errs, "lead is held by another live client session") {
		t.Errorf("the second session's shell as lead: exit %d %s %s, want %s and a note", code, out, errs, own("cccc-3333"))
	}
	// The first session's shell is lead.
	e.extra = []string{"CLAUDE_CODE_SESSION_ID=bbbb-2222"}
	out, _, _ = e.runIn(repo, "whoami", "--agent", "lead", "--json")
	e.extra = nil
	if json.Unmarshal([]byte(out), &w); w.Name != "lead" {
		t.Errorf("the first session's shell: %s, want lead", out)
	}

	// Session a joins as reviewer, inside it: it is reviewer from then
	// on; the person is still alice, and another session is not reviewer.
	e.extra = []string{"CLAUDE_CODE_SESSION_ID=aaaa-1111"}
	out, errs, code = e.runIn(repo, "join", "--name", "reviewer", "--role", "reviewer")
	e.extra = nil
	if code != 0 || !strings.Contains(out, "this client session's") {
		t.Fatalf("join inside session a: exit %d %s%s", code, out, errs)
	}
	var file workspace.Identity
	if b, err := os.ReadFile(filepath.Join(repo, ".parley", "identities", "reviewer.json")); err != nil || json.Unmarshal(b, &file) != nil || !strings.HasPrefix(file.Session, "claude:") {
		t.Errorf("reviewer.json: %+v %v, want the session recorded", file, err)
	}
	a.Close()
	mustCall(t, session("aaaa-1111"), "whoami", nil, &who)
	if who.Agent != "reviewer" {
		t.Errorf("session a started again: %+v, want reviewer", who)
	}
	mustCall(t, session("dddd-4444"), "whoami", nil, &who)
	if who.Agent != own("dddd-4444") {
		t.Errorf("another session: %+v, want its own name", who)
	}
	if out, _, _ := e.runIn(repo, "whoami", "--json"); !strings.Contains(out, `"alice"`) {
		t.Errorf("the person's whoami: %s, want alice", out)
	}
}
