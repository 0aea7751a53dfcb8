package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/bridge"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/profile"
	"github.com/parley-dev/parley/internal/workspace"
)

func toolNames(t *testing.T, e *env, c ops.Caller) []string {
	t.Helper()
	res, err := e.Session(c, nil).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// Only a session whose name Parley derived sees set_identity, beside native
// or lean.
func TestIdentityProfileOnlyForDerivedNames(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name     string
		caller   ops.Caller
		wantTool bool
	}{
		{"given name", ops.Caller{Workspace: "w", Agent: "given"}, false},
		{"derived, native", ops.Caller{Workspace: "w", Agent: "claude-w-aaaaaa", NameFrom: api.NameSession}, true},
		{"derived, lean", ops.Caller{Workspace: "w", Agent: "claude-w-bbbbbb", NameFrom: api.NameSession, Profiles: []string{"lean"}}, true},
		{"derived, sidechat", ops.Caller{Workspace: "w", Agent: "claude-w-cccccc", NameFrom: api.NameSession, Profiles: []string{"sidechat"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := toolNames(t, e, tc.caller)
			if got := slices.Contains(names, "set_identity"); got != tc.wantTool {
				t.Errorf("tools %v: set_identity offered %v, want %v", names, got, tc.wantTool)
			}
		})
	}
	if !slices.Contains(e.MCP.Profiles(), profile.IdentityName) {
		t.Errorf("profiles %v lack %s", e.MCP.Profiles(), profile.IdentityName)
	}
}

// A derived name renames itself: mail queued for it follows, later mail to
// either name arrives, whoami says the new name, and the refusals say why.
func TestSetIdentity(t *testing.T) {
	e := newEnv(t)
	boss := e.Session(ops.Caller{Workspace: "w", Agent: "boss"}, nil)
	old := "claude-w-3f9a1c"
	me := e.Session(ops.Caller{Workspace: "w", Agent: old, NameFrom: api.NameSession}, nil)
	fixed := e.Session(ops.Caller{Workspace: "w", Agent: "fixed", Profiles: []string{"native", profile.IdentityName}}, nil)

	var who api.WhoamiResult
	call(t, me, "whoami", nil, &who)
	if !strings.Contains(who.Note, "set_identity") {
		t.Errorf("whoami of a derived name: note %q, want a hint at set_identity", who.Note)
	}
	call(t, boss, "send_message", map[string]any{"to": old, "content": "before"}, nil)

	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"a given name", map[string]any{"name": "fixed-2"}, "was given to it"},
		{"a taken name", map[string]any{"name": "boss"}, "taken"},
		{"a look-alike", map[string]any{"name": "b0ss"}, "looks like"},
		{"a bad name", map[string]any{"name": "two words"}, "agent name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := me
			if tc.name == "a given name" {
				s = fixed
			}
			res := call(t, s, "set_identity", tc.args, nil)
			if !res.IsError || !strings.Contains(text(res), tc.want) {
				t.Errorf("set_identity %v: %q (error %v), want an error saying %q", tc.args, text(res), res.IsError, tc.want)
			}
		})
	}

	var got api.SetIdentityResult
	if res := call(t, me, "set_identity", map[string]any{"name": "reviewer", "role": "reviewer"}, &got); res.IsError {
		t.Fatalf("set_identity: %s", text(res))
	}
	if got.Agent != "reviewer" || got.Role != "reviewer" || got.Previous != old || got.Unread != 1 {
		t.Errorf("set_identity: %+v, want reviewer (reviewer), previously %s, 1 unread", got, old)
	}
	call(t, me, "whoami", nil, &who)
	if who.Agent != "reviewer" || who.Role != "reviewer" {
		t.Errorf("whoami after the rename: %+v", who)
	}
	call(t, boss, "send_message", map[string]any{"to": "reviewer", "content": "to the new name"}, nil)
	call(t, boss, "send_message", map[string]any{"to": old, "content": "to the old name"}, nil)
	var inbox api.CheckResult
	call(t, me, "check_messages", nil, &inbox)
	var contents []string
	for _, m := range inbox.Messages {
		contents = append(contents, m.Content)
	}
	if !slices.Equal(contents, []string{"before", "to the new name", "to the old name"}) {
		t.Errorf("inbox after the rename: %q", contents)
	}
	var agents api.ListAgentsResult
	call(t, boss, "list_agents", nil, &agents)
	var names []string
	for _, a := range agents.Agents {
		names = append(names, a.Name)
	}
	if slices.Contains(names, old) || !slices.Contains(names, "reviewer") {
		t.Errorf("agents after the rename: %v", names)
	}
	// It may choose again; the names it had stay its own.
	if res := call(t, me, "set_identity", map[string]any{"name": "lead"}, &got); res.IsError || got.Role != "reviewer" {
		t.Fatalf("second set_identity: %s %+v", text(res), got)
	}
	call(t, boss, "send_message", map[string]any{"to": old, "content": "oldest name"}, nil)
	call(t, me, "check_messages", nil, &inbox)
	if len(inbox.Messages) != 1 || inbox.Messages[0].Content != "oldest name" {
		t.Errorf("mail to the first name after two renames: %+v", inbox.Messages)
	}
}

// codexSession opens a session of a Codex's MCP server through the bridge,
// as `parley mcp serve` opens it with a name derived from its client's
// process (api.NameProcess) in root, or with a given name if root is "".
func codexSession(t *testing.T, sock, ws, agent, root string) *mcp.ClientSession {
	t.Helper()
	hello := api.Hello{Agent: agent, Workspace: ws}
	if root != "" {
		hello.NameFrom, hello.Root = api.NameProcess, root
	}
	h := http.Header{api.HeaderHello: {hello.Header()}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- bridge.Run(context.Background(), inR, outW, &bridge.Options{SocketPath: sock, Stream: true, Header: h})
		outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codex-mcp-client", Version: "1"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		inW.Close()
		<-done
	})
	return cs
}

// whoamiIn calls whoami as Codex calls tools: with its thread in _meta, if
// thread is not "".
func whoamiIn(t *testing.T, cs *mcp.ClientSession, thread string) api.WhoamiResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: "whoami"}
	if thread != "" {
		p.Meta = mcp.Meta{"threadId": thread, "sessionId": thread}
	}
	res, err := cs.CallTool(context.Background(), p)
	if err != nil || res.IsError {
		t.Fatalf("whoami: %v %v", res, err)
	}
	var who api.WhoamiResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &who); err != nil {
		t.Fatal(err)
	}
	return who
}

func threadName(thread, root string) string {
	name, _, _ := workspace.SessionName(workspace.CodexThreadEnv(thread), root)
	return name
}

// A Codex's MCP server, named after Codex's process at start-up, takes its
// thread's name at its first tool call that names the thread, the name the
// thread's hooks derive: the process's name becomes its alias. Another
// thread of the same Codex gets an agent of its own; a thread whose name is
// an agent already is that agent, with its role; a call that names no
// thread, and a session whose name was given, keep theirs.
func TestCodexSessionTakesItsThreadsName(t *testing.T) {
	e := newEnv(t)
	const ws = "cx"
	joinAll(t, e, ws, "alice")
	sock, _ := streamServer(t, e)
	root := "/src/proj"
	proc := "session-proj-0a0b0c"
	const t1, t2, t3 = "01a21b00-0000-7000-8000-000000000001", "01a21b00-0000-7000-8000-000000000002", "01a21b00-0000-7000-8000-000000000003"

	one := codexSession(t, sock, ws, proc, root)
	if who := whoamiIn(t, one, ""); who.Agent != proc {
		t.Fatalf("whoami with no thread: %s, want the process's name %s", who.Agent, proc)
	}
	sendTo(t, e, ws, proc, "to the process's name")
	who := whoamiIn(t, one, t1)
	if who.Agent != threadName(t1, root) || !strings.HasPrefix(who.Agent, "codex-proj-") {
		t.Fatalf("whoami naming thread 1: %s, want %s", who.Agent, threadName(t1, root))
	}
	if !strings.Contains(who.Note, "set_identity") {
		t.Errorf("whoami note %q: the thread's name is derived too, set_identity stays offered", who.Note)
	}
	if who.Unread != 1 {
		t.Errorf("unread after the thread's name: %d, want the mail to the process's name", who.Unread)
	}
	if again := whoamiIn(t, one, t1); again.Agent != who.Agent {
		t.Errorf("whoami again: %s, want %s", again.Agent, who.Agent)
	}
	if name, _ := e.Hub.Canonical(context.Background(), ws, proc); name != who.Agent {
		t.Errorf("the process's name stands for %s, want %s", name, who.Agent)
	}

	// The same Codex's second thread: the process's name is the first's.
	two := codexSession(t, sock, ws, proc, root)
	if got := whoamiIn(t, two, t2).Agent; got != threadName(t2, root) {
		t.Errorf("whoami of thread 2 of the same Codex: %s, want %s", got, threadName(t2, root))
	}
	if got := whoamiIn(t, one, t1).Agent; got != threadName(t1, root) {
		t.Errorf("whoami of thread 1 after thread 2 named itself: %s, want %s still", got, threadName(t1, root))
	}

	// Thread 3's name is an agent already (its hooks spoke first, or the
	// thread came back in another Codex): it keeps its role.
	if _, err := e.Hub.Join(context.Background(), hub.JoinRequest{Workspace: ws, Name: threadName(t3, root), Role: "reviewer"}); err != nil {
		t.Fatal(err)
	}
	three := codexSession(t, sock, ws, "session-proj-0d0e0f", root)
	if got := whoamiIn(t, three, t3); got.Agent != threadName(t3, root) || got.Role != "reviewer" {
		t.Errorf("whoami of thread 3: %s (%s), want %s (reviewer)", got.Agent, got.Role, threadName(t3, root))
	}

	given := codexSession(t, sock, ws, "bob", "")
	if got := whoamiIn(t, given, t1).Agent; got != "bob" {
		t.Errorf("whoami of a given name naming a thread: %s, want bob", got)
	}
}
