package e2e

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/workspace"
)

// TestSetIdentity: a session whose name Parley derived (a Claude Code
// session's, as the plugin starts it) renames itself through set_identity,
// through the real `parley mcp serve` and a go-sdk client. The mail queued
// for the old name follows, mail to either name arrives, a shell command of
// the same session (which still derives the old name) speaks as the new one,
// and so does the session when it starts again. The session's door (its
// inbox socket, here one the test listens on) moves too: a letter for mail
// to the new name comes through it. A session with a given name is not
// offered the tool; a taken, look-alike or old name is refused.
func TestSetIdentity(t *testing.T) {
	e := newEnv(t)
	proj := filepath.Join(e.home, "proj")
	os.MkdirAll(filepath.Join(proj, ".git"), 0o755)
	const sid = "6f1c9a52-0d3e-4b7a-9c1e-2f4b5d6e7a80"
	old, _, _ := workspace.SessionName(func(k string) string {
		if k == "CLAUDE_CODE_SESSION_ID" {
			return sid
		}
		return ""
	}, proj)
	// The Claude Code session's inbox socket: the test reads its letters.
	sockDir, err := os.MkdirTemp("/tmp", "pd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	letters := &syncBuffer{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(letters, c)
			}()
		}
	}()
	claude := func() *mcp.ClientSession { // a session of the Claude Code session sid
		t.Helper()
		e.extra = []string{"CLAUDE_CODE_SESSION_ID=" + sid, "CLAUDE_CODE_MESSAGING_SOCKET=" + sock}
		defer func() { e.extra = nil }()
		return e.SessionIn(proj, nil)
	}
	boss := e.SessionIn(proj, nil, "--agent", "boss", "--role", "lead")
	mustCall(t, boss, "whoami", nil, nil) // boss joins
	me := claude()
	var who struct{ Agent, Role, Note string }
	mustCall(t, me, "whoami", nil, &who)
	if who.Agent != old || !strings.Contains(who.Note, "set_identity") {
		t.Fatalf("whoami: %+v, want %s and a hint at set_identity", who, old)
	}
	mustCall(t, boss, "send_message", map[string]any{"to": old, "content": "before", "priority": "low"}, nil)
	e.waitDoor(t, proj, old, "claude", func() string { return "" })

	// A given name is not offered the tool, nor can it call it.
	tools, err := boss.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "set_identity" {
			t.Errorf("a session with --agent is offered set_identity")
		}
	}
	if res, err := boss.CallTool(t.Context(), &mcp.CallToolParams{Name: "set_identity", Arguments: map[string]any{"name": "x"}}); err == nil && !res.IsError {
		t.Errorf("boss renamed itself: %s", text(res))
	}
	for _, tc := range []struct{ name, want string }{
		{"boss", "taken"},
		{"b0ss", "looks like"},
		{"two words", "agent name"},
	} {
		if res := call(t, me, "set_identity", map[string]any{"name": tc.name}, nil); !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("set_identity %q: %q, want a refusal saying %q", tc.name, text(res), tc.want)
		}
	}

	var got struct {
		Agent, Role, Previous string
		Unread                int
	}
	mustCall(t, me, "set_identity", map[string]any{"name": "reviewer", "role": "reviewer"}, &got)
	if got.Agent != "reviewer" || got.Role != "reviewer" || got.Previous != old || got.Unread != 1 {
		t.Errorf("set_identity: %+v", got)
	}
	// Its door moved with it: high-priority mail for the new name is
	// written through it at once.
	e.waitDoor(t, proj, "reviewer", "claude", func() string { return "" })
	mustCall(t, boss, "send_message", map[string]any{"to": "reviewer", "content": "to the new name", "priority": "high"}, nil)
	waitUntil(t, "a letter for reviewer through the moved door", func() bool {
		return strings.Contains(letters.String(), "for reviewer in workspace")
	})
	var doors struct {
		Doors []struct{ Agent, Kind, Session string } `json:"doors"`
	}
	db, _, _ := e.runIn(proj, "doors", "--json")
	json.Unmarshal([]byte(db), &doors)
	for _, d := range doors.Doors {
		if d.Agent == old {
			t.Errorf("an open door of the old name after the rename: %+v", d)
		}
	}
	mustCall(t, boss, "send_message", map[string]any{"to": old, "content": "to the old name", "priority": "low"}, nil)
	var inbox struct {
		Messages []struct{ From, Content string } `json:"messages"`
	}
	mustCall(t, me, "check_messages", nil, &inbox)
	var contents []string
	for _, m := range inbox.Messages {
		contents = append(contents, m.Content)
	}
	if !slices.Equal(contents, []string{"to the new name", "before", "to the old name"}) { // high priority first
		t.Errorf("the renamed session's inbox: %q", contents)
	}

	// The session's shell (and its hooks) still derive the old name: they
	// speak as the new one.
	e.extra = []string{"CLAUDE_CODE_SESSION_ID=" + sid}
	out, errs, code := e.runIn(proj, "send", "boss", "from my shell")
	e.extra = nil
	if code != 0 {
		t.Fatalf("send from the session's shell: exit %d %s%s", code, out, errs)
	}
	mustCall(t, boss, "check_messages", nil, &inbox)
	if len(inbox.Messages) != 1 || inbox.Messages[0].From != "reviewer" {
		t.Errorf("boss's inbox: %+v, want the shell's message from reviewer", inbox.Messages)
	}
	// The old name is no agent, and no one else may take it.
	var agents struct {
		Agents []struct{ Name string } `json:"agents"`
	}
	ab, _, _ := e.runIn(proj, "agents", "--json")
	json.Unmarshal([]byte(ab), &agents)
	var names []string
	for _, a := range agents.Agents {
		names = append(names, a.Name)
	}
	if slices.Contains(names, old) || !slices.Contains(names, "reviewer") {
		t.Errorf("agents: %v, want reviewer and not %s", names, old)
	}
	if out, errs, code := e.runIn(proj, "join", "--name", old, "--role", "x"); code == 0 || !strings.Contains(errs, "old name of \"reviewer\"") {
		t.Errorf("join as the old name: exit %d %s%s; want a refusal naming reviewer", code, out, errs)
	}
	other := e.SessionIn(proj, nil) // a client session of its own (its process)
	for _, name := range []string{"reviewer", old} {
		if res := call(t, other, "set_identity", map[string]any{"name": name}, nil); !res.IsError {
			t.Errorf("another session took %s: %s", name, text(res))
		}
	}

	// The Claude Code session starts its server again: it is reviewer.
	me.Close()
	again := claude()
	mustCall(t, again, "whoami", nil, &who)
	if who.Agent != "reviewer" || who.Role != "reviewer" {
		t.Errorf("whoami of the session started again: %+v, want reviewer (reviewer)", who)
	}
}
